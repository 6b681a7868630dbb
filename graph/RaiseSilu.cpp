// SiLU as exporters write it: x * Sigmoid(x) (either operand order).
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct RaiseSilu : RewritePattern {
  explicit RaiseSilu(MLIRContext* ctx) : RewritePattern("graph.Mul", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    for (int i = 0; i < 2; ++i) {
      Operation* sig = defOf(op->getOperand(1 - i), "Sigmoid");
      if (!sig || sig->getOperand(0) != op->getOperand(i)) continue;
      if (!sameShape(op->getOperand(i), op->getResult(0))) continue;  // no broadcasting
      Operation* n = createNode(rw, op->getLoc(), "Silu", op->getResultTypes(), {op->getOperand(i)});
      rw.replaceOp(op, n->getResults());
      return success();
    }
    return rw.notifyMatchFailure(op, "not x * sigmoid(x)");
  }
};

}  // namespace

void populateRaiseSiluPatterns(RewritePatternSet& patterns) { patterns.add<RaiseSilu>(patterns.getContext()); }

}  // namespace strata::graph
