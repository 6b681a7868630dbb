// MatMul(x, W) with W a 2-D weight ([K, N], layout "kn"), MatMul(x,
// Transpose(W)) with W [N, K] (layout "nk": a tied lm_head, the embedding
// matrix transposed, as dynamo exports of Qwen2, SmolLM, Llama 3.2 and
// Gemma write it) and Linear(x, W, b) (W [N, K], layout "nk") ->
// single-weight region.gemm.
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

// W when `v` is Transpose(W) of a 2-D weight W (perm [1, 0] or none).
Value transposedWeight(Value v) {
  Operation* t = defOf(v, "Transpose");
  if (!t || !isWeight(t->getOperand(0), 2)) return nullptr;
  auto perm = t->getAttrOfType<DenseI64ArrayAttr>("perm");
  if (perm && perm.asArrayRef() != ArrayRef<int64_t>{1, 0}) return nullptr;
  return t->getOperand(0);
}

struct FormGemm : RewritePattern {
  FormGemm(StringRef root, MLIRContext* ctx) : RewritePattern(root, 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value nk = isOp(op, "MatMul") ? transposedWeight(op->getOperand(1)) : nullptr;
    if ((!isWeight(op->getOperand(1), 2) && !nk) || !rankOf(op->getOperand(0)))
      return rw.notifyMatchFailure(op, "not activations times a 2-D weight");
    GemmParts g;
    g.x = op->getOperand(0);
    g.weights = {nk ? nk : op->getOperand(1)};
    if (nk) g.layout = "nk";
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
