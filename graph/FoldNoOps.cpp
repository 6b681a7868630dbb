// Nodes that return their operand unchanged, as TorchScript exports write
// them: Identity (a shared initializer under a second name) and a Cast to
// the operand's own element type. They would hide a weight or a value from
// the raise patterns (RMSNorm's weight * Cast(normalized)), so they go.
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

// Whether `in` can stand for `out`: the same element type, and `out`'s
// shape unknown or equal to `in`'s (symbolic dim names may differ).
bool sameValueType(Value in, Value out) {
  auto i = dyn_cast<TensorType>(in.getType());
  auto o = dyn_cast<TensorType>(out.getType());
  if (!i || !o || i.getElementType() != o.getElementType()) return false;
  if (!o.hasRank()) return true;
  return i.hasRank() && i.getShape() == o.getShape();
}

struct FoldNoOp : RewritePattern {
  FoldNoOp(StringRef root, MLIRContext* ctx) : RewritePattern(root, 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    if (op->getNumOperands() != 1 || op->getNumResults() != 1 || !sameValueType(op->getOperand(0), op->getResult(0)))
      return rw.notifyMatchFailure(op, "changes the value's type");
    rw.replaceOp(op, op->getOperand(0));
    return success();
  }
};

}  // namespace

void populateFoldNoOpPatterns(RewritePatternSet& patterns) {
  patterns.add<FoldNoOp>("graph.Identity", patterns.getContext());
  patterns.add<FoldNoOp>("graph.Cast", patterns.getContext());
}

}  // namespace strata::graph
