// A linear layer as exporters write it around ONNX's 2-D Gemm (GPT-2's
// Conv1D, any torch.addmm): Reshape(Gemm(Reshape(x, [-1, K]), W[, c]),
// shape) with x [B, S, K], or the head merge's [B, S, H, D] with H D = K
// -> MatMul(x, W) + c (Linear(x, W, c) when the Gemm reads W transposed)
// on x's rows, then the same outer Reshape (which folds away where it
// restores [B, S, N]). Region formation then sees the rank-3 linear layer
// the other exporters write, and the attention head merge its usual
// Transpose + Reshape to [B, S, H D].
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool attrIsOne(Operation* op, StringRef name) {
  auto a = op->getAttrOfType<FloatAttr>(name);
  return !a || a.getValueAsDouble() == 1.0;
}

struct RaiseFlatGemm : RewritePattern {
  explicit RaiseFlatGemm(MLIRContext* ctx) : RewritePattern("graph.Reshape", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Operation* gemm = defOf(op->getOperand(0), "Gemm");
    if (!gemm || !gemm->getResult(0).hasOneUse() || intAttrOf(gemm, "transA").value_or(0) != 0 ||
        !attrIsOne(gemm, "alpha") || !attrIsOne(gemm, "beta"))
      return rw.notifyMatchFailure(op, "not a plain Gemm's result");
    const bool transB = intAttrOf(gemm, "transB").value_or(0) != 0;
    Value w = gemm->getOperand(1), c = hasOperand(gemm, 2) ? gemm->getOperand(2) : Value();
    if (!isWeight(w, 2) || (c && !isWeight(c, 1))) return rw.notifyMatchFailure(op, "not a weight and a 1-D bias");
    Operation* flat = defOf(gemm->getOperand(0), "Reshape");
    auto K = staticDim(w, transB ? 1 : 0), N = staticDim(w, transB ? 0 : 1);
    if (!flat || rankOf(flat->getResult(0)) != 2 || !K || !N) return rw.notifyMatchFailure(op, "not flattened rows");
    Value x = flat->getOperand(0);
    auto dims = getDims(x.getType());
    auto d2 = staticDim(x, 2), d3 = staticDim(x, 3);
    const bool rows3 = rankOf(x) == 3 && d2 == K, heads4 = rankOf(x) == 4 && d2 && d3 && *d2 * *d3 == *K;
    if (!dims || (!rows3 && !heads4) || rankOf(op->getResult(0)) != 3)
      return rw.notifyMatchFailure(op, "rows are not [B, S, K] or [B, S, H, D] into [., ., N]");
    Location loc = op->getLoc();
    MLIRContext* ctx = rw.getContext();
    Type elt = cast<ShapedType>(gemm->getResult(0).getType()).getElementType();
    if (heads4)
      x = createNode(rw, loc, "Reshape", makeTensorType(ctx, {(*dims)[0], (*dims)[1], {*K, ""}}, elt),
                     {x, createI64Constant(rw, loc, {0, 0, *K})})->getResult(0);
    Type yT = makeTensorType(ctx, {(*dims)[0], (*dims)[1], {*N, ""}}, elt);
    Value y;
    if (transB) {
      SmallVector<Value> ins{x, w};
      if (c) ins.push_back(c);
      y = createNode(rw, loc, "Linear", yT, ins)->getResult(0);
    } else {
      y = createNode(rw, loc, "MatMul", yT, {x, w})->getResult(0);
      if (c) y = createNode(rw, loc, "Add", yT, {y, c})->getResult(0);
    }
    if (sameShape(y, op->getResult(0)) && staticDim(op->getResult(0), 0) == staticDim(y, 0)) {
      rw.replaceOp(op, y);
    } else {
      rw.modifyOpInPlace(op, [&] { op->setOperand(0, y); });
      rw.eraseOp(gemm);
    }
    return success();
  }
};

}  // namespace

void populateRaiseFlatGemmPatterns(RewritePatternSet& patterns) { patterns.add<RaiseFlatGemm>(patterns.getContext()); }

}  // namespace strata::graph
