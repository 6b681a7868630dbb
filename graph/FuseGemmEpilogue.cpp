// Epilogues and prologues folded into a single-result region.gemm:
//  - bias: Add(gemm, b) with b a 1-D weight of N elements (no bias yet);
//  - residual: Add(r, gemm) with r of the result's type (no residual yet; a
//    leading batch dim of 1 against a dynamic one counts as equal: by the
//    paged contract every step is one [1, T] batch, and exports that bake the
//    example's batch of 1 into a Reshape produce exactly that mix);
//  - row gather: x = Gather(h, rows, axis 1) with h [1, T, K] -> compute
//    only those rows (lm_head at the last token of each sequence);
//  - GELU (tanh form) of a single-weight product (+ bias), before any
//    residual: epilogue "gelu".
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool sameUpToPagedBatch(Value a, Value b) {
  if (sameShape(a, b)) return true;
  auto da = getDims(a.getType()), db = getDims(b.getType());
  if (!da || !db || da->size() != db->size() || da->empty()) return false;
  auto one = [](const ops::Dim& d) { return d.isStatic() && d.value == 1; };
  if (!((one((*da)[0]) && !(*db)[0].isStatic()) || (one((*db)[0]) && !(*da)[0].isStatic()))) return false;
  for (size_t i = 1; i < da->size(); ++i)
    if ((*da)[i].isStatic() != (*db)[i].isStatic() || ((*da)[i].isStatic() && (*da)[i].value != (*db)[i].value)) return false;
  return cast<ShapedType>(a.getType()).getElementType() == cast<ShapedType>(b.getType()).getElementType();
}

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
      } else if (sameShape(other, op->getResult(0)) && sameUpToPagedBatch(gemmOp->getResult(0), other)) {
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

struct FuseGemmGelu : RewritePattern {
  explicit FuseGemmGelu(MLIRContext* ctx) : RewritePattern("graph.Gelu", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Operation* gemmOp = op->getOperand(0).getDefiningOp();
    auto g = readGemm(gemmOp);
    if (!g || op->getAttrOfType<StringAttr>("approximate") != rw.getStringAttr("tanh") ||
        gemmOp->getNumResults() != 1 || !gemmOp->hasOneUse() || g->weights.size() != 1 || g->epilogue != "none" ||
        g->residual)
      return rw.notifyMatchFailure(op, "not tanh GELU of a single product");
    g->epilogue = "gelu";
    Operation* fused = buildGemm(rw, op->getLoc(), *g, op->getResultTypes());
    rw.replaceOp(op, fused->getResults());
    return success();
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
  patterns.add<FuseGemmAdd, FuseGemmGelu, FuseGemmRows>(patterns.getContext());
}

}  // namespace strata::graph
