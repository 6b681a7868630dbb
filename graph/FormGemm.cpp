// MatMul(x, W) with W a 2-D weight ([K, N], layout "kn") and Linear(x, W, b)
// (W [N, K], layout "nk") -> single-weight region.gemm.
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct FormGemm : RewritePattern {
  FormGemm(StringRef root, MLIRContext* ctx) : RewritePattern(root, 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    if (!isWeight(op->getOperand(1), 2) || !rankOf(op->getOperand(0)))
      return rw.notifyMatchFailure(op, "not activations times a 2-D weight");
    GemmParts g;
    g.x = op->getOperand(0);
    g.weights = {op->getOperand(1)};
    if (isOp(op, "Linear")) {
      g.layout = "nk";
      if (op->getNumOperands() > 2 && !isa<NoneType>(op->getOperand(2).getType())) g.biases = {op->getOperand(2)};
    }
    Operation* n = buildGemm(rw, op->getLoc(), g, op->getResultTypes());
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateFormGemmPatterns(RewritePatternSet& patterns) {
  patterns.add<FormGemm>("graph.MatMul", patterns.getContext());
  patterns.add<FormGemm>("graph.Linear", patterns.getContext());
}

}  // namespace strata::graph
