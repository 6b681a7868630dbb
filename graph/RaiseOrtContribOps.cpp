// onnxruntime's fused helpers, taken apart into the ops region formation
// already understands (its fusions run before strata sees the graph):
//   SkipSimplifiedLayerNormalization(x, skip, gamma[, bias]) -> s = x + skip
//     (+ bias); RMSNorm(s, gamma){epsilon}; output #3 is s — the residual add
//     then fuses into the producing GEMM like any other.
//   FusedMatMul(A, B){alpha, transA, transB} -> alpha * MatMul(A', B') with
//     the transposes as Transpose ops — attention's q @ k^T * scale, which
//     RaiseAttention matches.
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct SplitSkipSimplifiedLayerNorm : RewritePattern {
  explicit SplitSkipSimplifiedLayerNorm(MLIRContext* ctx)
      : RewritePattern("graph.com.microsoft.SkipSimplifiedLayerNormalization", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value x = op->getOperand(0), skip = op->getOperand(1), gamma = op->getOperand(2);
    if (rankOf(gamma) != 1 || !sameShape(x, skip)) return rw.notifyMatchFailure(op, "not x + skip of one shape, 1-D gamma");
    for (unsigned i : {1u, 2u})
      if (i < op->getNumResults() && !op->getResult(i).use_empty())
        return rw.notifyMatchFailure(op, "mean / inv_std_var are read");
    Location loc = op->getLoc();
    Value sum = createNode(rw, loc, "Add", x.getType(), {x, skip})->getResult(0);
    if (hasOperand(op, 3))
      sum = createNode(rw, loc, "Add", x.getType(), {sum, op->getOperand(3)})->getResult(0);
    double eps = 1e-5;
    if (auto e = op->getAttrOfType<FloatAttr>("epsilon")) eps = e.getValueAsDouble();
    Value y = createNode(rw, loc, "RMSNorm", op->getResult(0).getType(), {sum, gamma},
                         {rw.getNamedAttr("eps", rw.getF64FloatAttr(eps))})->getResult(0);
    rw.replaceAllUsesWith(op->getResult(0), y);
    if (op->getNumResults() > 3) rw.replaceAllUsesWith(op->getResult(3), sum);
    rw.eraseOp(op);
    return success();
  }
};

// Transpose of the last two dims of `v` (rank >= 2, ranked).
Value swapLastTwo(PatternRewriter& rw, Location loc, Value v) {
  int64_t r = *rankOf(v);
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  auto dims = *getDims(v.getType());
  std::swap(dims[r - 1], dims[r - 2]);
  Type t = makeTensorType(rw.getContext(), dims, cast<ShapedType>(v.getType()).getElementType());
  return createNode(rw, loc, "Transpose", t, {v}, {rw.getNamedAttr("perm", rw.getDenseI64ArrayAttr(perm))})->getResult(0);
}

struct SplitFusedMatMul : RewritePattern {
  explicit SplitFusedMatMul(MLIRContext* ctx) : RewritePattern("graph.com.microsoft.FusedMatMul", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value a = op->getOperand(0), b = op->getOperand(1);
    if (intAttrOf(op, "transBatchA").value_or(0) || intAttrOf(op, "transBatchB").value_or(0))
      return rw.notifyMatchFailure(op, "batch transposes");
    bool ta = intAttrOf(op, "transA").value_or(0), tb = intAttrOf(op, "transB").value_or(0);
    if ((ta && rankOf(a).value_or(0) < 2) || (tb && rankOf(b).value_or(0) < 2) || !getDims(op->getResult(0).getType()))
      return rw.notifyMatchFailure(op, "ranks unknown");
    Location loc = op->getLoc();
    if (ta) a = swapLastTwo(rw, loc, a);
    if (tb) b = swapLastTwo(rw, loc, b);
    Type t = op->getResult(0).getType();
    Value y = createNode(rw, loc, "MatMul", t, {a, b})->getResult(0);
    double alpha = 1.0;
    if (auto f = op->getAttrOfType<FloatAttr>("alpha")) alpha = f.getValueAsDouble();
    if (alpha != 1.0) {
      auto st = RankedTensorType::get({}, rw.getF32Type());
      Value c = ConstantOp::create(rw, loc, st, "fused_matmul_alpha", DenseElementsAttr::get(st, (float)alpha)).getResult();
      y = createNode(rw, loc, "Mul", t, {y, c})->getResult(0);
    }
    rw.replaceOp(op, y);
    return success();
  }
};

}  // namespace

void populateRaiseOrtContribPatterns(RewritePatternSet& patterns) {
  patterns.add<SplitSkipSimplifiedLayerNorm, SplitFusedMatMul>(patterns.getContext());
}

}  // namespace strata::graph
