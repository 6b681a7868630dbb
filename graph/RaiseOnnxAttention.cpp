// ONNX's Attention-23 -> strata's Attention, for the 4-D form exporters emit
// (torch's SDPA at opset 23): q [B, Hq, S, D], k/v [B, Hkv, T, D] (a
// repeat-kv Reshape(Expand(Unsqueeze)) in front of k/v is peeled, as in
// RaiseAttention), no softcap. The mask is classified by evaluation like a
// decomposed export's: a bool attn_mask reads "true = attend", a float one is
// additive. is_causal without a mask is strata's causal when queries and keys
// are the same sequence (the spec aligns the triangle top-left, strata
// bottom-right; they agree only when S == T). Past K/V inputs become a Concat
// in front (the present outputs), the form graph-form-paged-attention reads.
#include "graph/AttentionParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct RaiseOnnxAttention : RewritePattern {
  explicit RaiseOnnxAttention(MLIRContext* ctx) : RewritePattern("graph.onnx.Attention", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value q = op->getOperand(0), k = op->getOperand(1), v = op->getOperand(2);
    if (rankOf(q) != 4 || rankOf(k) != 4 || rankOf(v) != 4) return rw.notifyMatchFailure(op, "not the 4-D form");
    if (auto sc = op->getAttrOfType<FloatAttr>("softcap"); sc && sc.getValueAsDouble() != 0)
      return rw.notifyMatchFailure(op, "softcap");
    if (op->getNumResults() > 3 && !op->getResult(3).use_empty()) return rw.notifyMatchFailure(op, "qk output is read");
    if (hasOperand(op, 4) != hasOperand(op, 5)) return rw.notifyMatchFailure(op, "only one of past K/V");
    bool past = hasOperand(op, 4);
    Value kh = past ? k : peelRepeatKv(k), vh = past ? v : peelRepeatKv(v);
    auto hq = staticDim(q, 1), hk = staticDim(kh, 1), d = staticDim(q, 3);
    if (!hq || !hk || !d || staticDim(vh, 1) != hk || *hq % *hk || (past && staticDim(op->getOperand(4), 1) != hk))
      return rw.notifyMatchFailure(op, "heads are not static and GQA-compatible");
    bool causal = intAttrOf(op, "is_causal").value_or(0) != 0;
    MaskKind kind = MaskKind::None;
    if (hasOperand(op, 3)) {
      if (causal) return rw.notifyMatchFailure(op, "is_causal together with a mask");
      Value mask = op->getOperand(3);
      auto elt = cast<ShapedType>(mask.getType()).getElementType();
      auto k2 = classifyMask(op->getParentOfType<GraphOp>(), mask,
                             elt.isInteger(1) ? MaskForm::AllowedIfTrue : MaskForm::Additive);
      if (!k2) return rw.notifyMatchFailure(op, "mask is not causal / padding");
      kind = *k2;
    } else if (causal) {
      if (past || !sameExtent(q, 2, k, 2)) return rw.notifyMatchFailure(op, "is_causal with keys beyond the queries");
      kind = MaskKind::Causal;
    }
    Location loc = op->getLoc();
    Value present[2] = {k, v};  // the present outputs: Concat(past, new) on the sequence axis
    if (past) {
      for (unsigned i : {0u, 1u}) {
        Type t = op->getNumResults() > i + 1 ? op->getResult(i + 1).getType() : present[i].getType();
        present[i] = createNode(rw, loc, "Concat", t, {op->getOperand(4 + i), present[i]},
                                {rw.getNamedAttr("axis", rw.getI64IntegerAttr(2))})->getResult(0);
      }
      kh = present[0], vh = present[1];
    }
    double scale = attentionScale(op, *d);
    Operation* n = createAttention(rw, loc, op->getResult(0).getType(), q, kh, vh, kind, scale);
    rw.replaceAllUsesWith(op->getResult(0), n->getResult(0));
    for (unsigned i : {1u, 2u})
      if (i < op->getNumResults()) rw.replaceAllUsesWith(op->getResult(i), present[i - 1]);
    rw.eraseOp(op);
    return success();
  }
};

}  // namespace

void populateRaiseOnnxAttentionPatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseOnnxAttention>(patterns.getContext());
}

}  // namespace strata::graph
