// Nodes that return their operand unchanged, as TorchScript exports write
// them: Identity (a shared initializer under a second name) and a Cast to
// the operand's own element type. They would hide a weight or a value from
// the raise patterns (RMSNorm's weight * Cast(normalized)), so they go. So
// does a Reshape whose result provably has its operand's dims (each the
// same static size or the same named symbol), such as dynamo's [1, -1, N]
// once the paged form has a batch of 1.
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

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

struct FoldIdentityReshape : RewritePattern {
  explicit FoldIdentityReshape(MLIRContext* ctx) : RewritePattern("graph.Reshape", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto in = getDims(op->getOperand(0).getType()), out = getDims(op->getResult(0).getType());
    if (!in || !out || in->size() != out->size() ||
        cast<ShapedType>(op->getOperand(0).getType()).getElementType() !=
            cast<ShapedType>(op->getResult(0).getType()).getElementType())
      return rw.notifyMatchFailure(op, "types differ");
    for (size_t i = 0; i < in->size(); ++i) {
      const ops::Dim &a = (*in)[i], &b = (*out)[i];
      if (!(a.isStatic() ? b.isStatic() && a.value == b.value : !a.symbol.empty() && a.symbol == b.symbol))
        return rw.notifyMatchFailure(op, "dims not provably equal");
    }
    rw.replaceOp(op, op->getOperand(0));
    return success();
  }
};

}  // namespace

void populateFoldNoOpPatterns(RewritePatternSet& patterns) {
  patterns.add<FoldNoOp>("graph.Identity", patterns.getContext());
  patterns.add<FoldNoOp>("graph.Cast", patterns.getContext());
  patterns.add<FoldIdentityReshape>(patterns.getContext());
}

}  // namespace strata::graph
