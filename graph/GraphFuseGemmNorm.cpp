// graph-fuse-gemm-norm: region.rmsnorm(x, w) read only as the x of
// region.gemm regions -> those regions take x and the norm as their
// prologue (norm = 1, norm_eps, the weight as the last operand); the
// rmsnorm region dies. A target asks for it when its GEMM kernels can
// normalize A as they load it (or quantize it): the CUDA target does
// (graph::RegionOptions::normPrologue), so a decode step skips a launch
// and a round trip of the normalized rows per norm. Run after
// graph-form-regions: the sibling (q / k / v) and SwiGLU regions are
// whole by then, so each norm feeds one region.
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Passes.h"
#include "graph/Patterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHFUSEGEMMNORM
#include "graph/Passes.h.inc"

using namespace mlir;

namespace {

struct FuseGemmNorm : RewritePattern {
  explicit FuseGemmNorm(MLIRContext* ctx) : RewritePattern("graph.region.rmsnorm", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto eps = op->getAttrOfType<FloatAttr>("eps");
    if (!eps || op->getNumResults() != 1 || op->getResult(0).use_empty())
      return rw.notifyMatchFailure(op, "not a used rmsnorm with eps");
    Value y = op->getResult(0);
    // Every use is a region's x (a GEMM reading y as a weight, residual or
    // rows, or anything else, keeps the norm where it is).
    SmallVector<Operation*> gemms;
    for (OpOperand& use : y.getUses()) {
      auto g = readGemm(use.getOwner());
      if (!g || use.getOperandNumber() != 0 || g->norm) return rw.notifyMatchFailure(op, "a use is not a GEMM's x");
      if (!llvm::is_contained(gemms, use.getOwner())) gemms.push_back(use.getOwner());
    }
    for (Operation* gemmOp : gemms) {
      GemmParts g = *readGemm(gemmOp);
      g.x = op->getOperand(0);
      g.norm = op->getOperand(1);
      g.normEps = eps.getValueAsDouble();
      rw.setInsertionPoint(gemmOp);
      Operation* fused = buildGemm(rw, gemmOp->getLoc(), g, gemmOp->getResultTypes());
      rw.replaceOp(gemmOp, fused->getResults());
    }
    rw.eraseOp(op);
    return success();
  }
};

struct GraphFuseGemmNorm : impl::GraphFuseGemmNormBase<GraphFuseGemmNorm> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseGemmNormPatterns(patterns);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);  // keep unused inputs
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config))) return signalPassFailure();
  }
};

}  // namespace

void populateFuseGemmNormPatterns(RewritePatternSet& patterns) { patterns.add<FuseGemmNorm>(patterns.getContext()); }

}  // namespace strata::graph
