// onnxruntime's GroupQueryAttention -> the decomposed form the rest of region
// formation reads: head splits (Reshape + Transpose) of the token-major
// q/k/v, Rope on q and k (do_rotary), causal Attention, head merge. For the
// form ORT's fusions give a model without a KV cache: no past K/V, unpacked
// q/k/v, no softcap / local window / interleaved rotary, the present outputs
// unread, and seqlens_k + 1 == total_sequence_length == S on probe inputs
// (every sequence is the whole input, so the mask is plain causal and the
// rotary positions are 0..S-1, as [1, S]: the paged form's single batch
// row). theta comes from the cos cache, checked row by row against position r.
#include "graph/AttentionParts.h"
#include "graph/Evaluate.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/RopeAngles.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

// seqlens_k + 1 == total_sequence_length == S on every probe.
bool coversWholeInput(GraphOp g, Value seqlensK, Value total) {
  for (int64_t s : {5, 1, 3}) {
    Evaluator ev;
    setProbeInputs(ev, g, ProbeDims{2, s, 0}, -1);
    auto lens = ev.eval(seqlensK), tot = ev.eval(total);
    if (!lens || !tot || tot->numel() != 1 || tot->toI64Vector()[0] != s || lens->numel() == 0) return false;
    for (int64_t l : lens->toI64Vector())
      if (l + 1 != s) return false;
  }
  return true;
}

struct RaiseGroupQueryAttention : RewritePattern {
  explicit RaiseGroupQueryAttention(MLIRContext* ctx) : RewritePattern("graph.com.microsoft.GroupQueryAttention", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto H = intAttrOf(op, "num_heads"), Hk = intAttrOf(op, "kv_num_heads");
    Value q = op->getOperand(0), k = op->getOperand(1), v = op->getOperand(2);
    auto qd = getDims(q.getType());
    if (!H || !Hk || *H <= 0 || *Hk <= 0 || *H % *Hk || !qd || qd->size() != 3 || !qd->back().isStatic() ||
        qd->back().value % *H || !hasOperand(op, 1) || !hasOperand(op, 2))
      return rw.notifyMatchFailure(op, "not unpacked [B, S, H * D] q/k/v with static heads");
    int64_t D = qd->back().value / *H;
    if (staticDim(k, 2) != *Hk * D || staticDim(v, 2) != *Hk * D) return rw.notifyMatchFailure(op, "k/v width");
    if (hasOperand(op, 3) || hasOperand(op, 4)) return rw.notifyMatchFailure(op, "reads a KV cache");
    for (unsigned i = 9; i < op->getNumOperands(); ++i)
      if (hasOperand(op, i)) return rw.notifyMatchFailure(op, "position_ids / attention_bias / head_sink");
    for (unsigned i : {1u, 2u})
      if (i < op->getNumResults() && !op->getResult(i).use_empty()) return rw.notifyMatchFailure(op, "present K/V are read");
    if (intAttrOf(op, "local_window_size").value_or(-1) != -1 || intAttrOf(op, "rotary_interleaved").value_or(0) ||
        intAttrOf(op, "smooth_softmax").value_or(0))
      return rw.notifyMatchFailure(op, "sliding window / interleaved rotary / smooth softmax");
    if (auto sc = op->getAttrOfType<FloatAttr>("softcap"); sc && sc.getValueAsDouble() != 0)
      return rw.notifyMatchFailure(op, "softcap");
    auto g = op->getParentOfType<GraphOp>();
    if (!coversWholeInput(g, op->getOperand(5), op->getOperand(6)))
      return rw.notifyMatchFailure(op, "seqlens_k is not the input length (padding or a cache)");
    bool rotary = intAttrOf(op, "do_rotary").value_or(0) != 0;
    std::optional<double> theta;
    if (rotary) {
      Operation* c = defOf(op->getOperand(7), "Cos");
      Operation* s = hasOperand(op, 8) ? defOf(op->getOperand(8), "Sin") : nullptr;
      if (!c || !s || c->getOperand(0) != s->getOperand(0)) return rw.notifyMatchFailure(op, "cos/sin caches of one angle table");
      theta = thetaOfPositionTable(g, c->getOperand(0), D);
      if (!theta) return rw.notifyMatchFailure(op, "cos cache rows are not positions * theta^(-2i/D)");
    }
    Location loc = op->getLoc();
    Type i64 = rw.getI64Type();
    MLIRContext* ctx = rw.getContext();
    std::vector<ops::Dim> bs{(*qd)[0], (*qd)[1]};
    Value qh = createHeadSplit(rw, loc, q, *H, D), kh = createHeadSplit(rw, loc, k, *Hk, D),
          vh = createHeadSplit(rw, loc, v, *Hk, D);
    if (rotary) {
      // Positions 0..S-1 as [1, S] (the paged form's one batch row), from
      // total_sequence_length (== S, checked above): unlike q's shape it is
      // computed from input dims alone, so later passes can evaluate it.
      auto node = [&](StringRef name, const std::vector<ops::Dim>& dims, ValueRange in, ArrayRef<NamedAttribute> a = {}) {
        return createNode(rw, loc, name, makeTensorType(ctx, dims, i64), in, a)->getResult(0);
      };
      Value len = node("Cast", {}, {op->getOperand(6)}, {rw.getNamedAttr("to", rw.getStringAttr("i64"))});
      Value arange =
          node("Range", {bs[1]}, {createI64Constant(rw, loc, {0}, true), len, createI64Constant(rw, loc, {1}, true)});
      Value pos = node("Unsqueeze", {{1, ""}, bs[1]}, {arange, createI64Constant(rw, loc, {0})});
      NamedAttribute t = rw.getNamedAttr("theta", rw.getF64FloatAttr(*theta));
      qh = createNode(rw, loc, "Rope", qh.getType(), {qh, pos}, {t})->getResult(0);
      kh = createNode(rw, loc, "Rope", kh.getType(), {kh, pos}, {t})->getResult(0);
    }
    replaceWithHeadAttention(rw, op, qh, kh, vh, MaskKind::Causal, D);
    return success();
  }
};

}  // namespace

void populateRaiseGroupQueryAttentionPatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseGroupQueryAttention>(patterns.getContext());
}

}  // namespace strata::graph
