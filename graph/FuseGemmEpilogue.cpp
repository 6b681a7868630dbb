// Epilogues and prologues folded into a single-result region.gemm:
//  - bias: Add(gemm, b) with b a 1-D weight of N elements (no bias yet);
//  - residual: Add(r, gemm) with r of the result's type (no residual yet);
//  - row gather: x = Gather(h, rows, axis 1) with h [1, T, K] -> compute
//    only those rows (lm_head at the last token of each sequence).
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct FuseGemmAdd : RewritePattern {
  explicit FuseGemmAdd(MLIRContext* ctx) : RewritePattern("graph.Add", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    for (int i = 0; i < 2; ++i) {
      Operation* gemmOp = op->getOperand(i).getDefiningOp();
      auto g = readGemm(gemmOp);
      if (!g || gemmOp->getNumResults() != 1 || !gemmOp->hasOneUse() || g->residual) continue;
      Value other = op->getOperand(1 - i);
      auto n = staticDim(gemmOp->getResult(0), -1);
      if (g->biases.empty() && g->epilogue == "none" && g->weights.size() == 1 && isWeight(other, 1) && n &&
          staticDim(other, 0) == n) {
        g->biases = {other};
      } else if (sameShape(other, op->getResult(0)) && sameShape(gemmOp->getResult(0), other)) {
        g->residual = other;
      } else {
        continue;
      }
      Operation* fused = buildGemm(rw, op->getLoc(), *g, op->getResultTypes());
      rw.replaceOp(op, fused->getResults());
      return success();
    }
    return rw.notifyMatchFailure(op, "not gemm + bias or gemm + residual");
  }
};

struct FuseGemmRows : RewritePattern {
  explicit FuseGemmRows(MLIRContext* ctx) : RewritePattern("graph.region.gemm", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto g = readGemm(op);
    if (!g || g->rows) return failure();
    Operation* gather = defOf(g->x, "Gather");
    if (!gather || intAttrOf(gather, "axis").value_or(0) != 1) return rw.notifyMatchFailure(op, "x is not a row gather");
    Value h = gather->getOperand(0), rows = gather->getOperand(1);
    // The batch dim is 1 by the paged contract even where the type says "?".
    if (rankOf(h) != 3 || (staticDim(h, 0) && staticDim(h, 0) != 1) || rankOf(rows) != 1)
      return rw.notifyMatchFailure(op, "row gather is not [1, T, K] by [n]");
    g->x = h;
    g->rows = rows;
    Operation* fused = buildGemm(rw, op->getLoc(), *g, op->getResultTypes());
    rw.replaceOp(op, fused->getResults());
    return success();
  }
};

}  // namespace

void populateFuseGemmEpiloguePatterns(RewritePatternSet& patterns) {
  patterns.add<FuseGemmAdd, FuseGemmRows>(patterns.getContext());
}

}  // namespace strata::graph
