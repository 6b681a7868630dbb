// onnxruntime's MultiHeadAttention (with the com.microsoft RotaryEmbedding
// ORT's fusions put on its query and key) -> head splits, Rope, Attention,
// head merge: what onnxscript's fusions make of an MHA (kv heads == heads)
// Llama export. Conditions: token-major q/k/v [B, S, H * D], no bias /
// key_padding_mask / past, present outputs unread; the additive
// attention_bias is classified by evaluation like any mask (or
// `unidirectional` without one: causal when q and k are one sequence).
// RotaryEmbedding on q and k alike (rotate-half, full D, position_ids
// [B, S], cos/sin caches whose row r is position r) becomes Rope after the
// split; a RotaryEmbedding anywhere else is left to its reference kernel.
#include "graph/AttentionParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/RopeAngles.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct Rotary {
  Value x, positions;
  double theta = 0;
};

// x, or the input of the rotary embedding that produced it (nullopt: a
// rotary embedding this pattern cannot take).
std::optional<Rotary> peelRotary(GraphOp g, Value v, int64_t D) {
  Operation* r = defOf(v, "com.microsoft.RotaryEmbedding");
  if (!r) return Rotary{v};
  if (intAttrOf(r, "interleaved").value_or(0) || (intAttrOf(r, "rotary_embedding_dim").value_or(0) % D) ||
      rankOf(r->getOperand(1)) != 2)
    return std::nullopt;
  if (auto s = r->getAttrOfType<FloatAttr>("scale"); s && s.getValueAsDouble() != 1.0) return std::nullopt;
  Operation* c = defOf(r->getOperand(2), "Cos");
  Operation* s = defOf(r->getOperand(3), "Sin");
  if (!c || !s || c->getOperand(0) != s->getOperand(0)) return std::nullopt;
  auto theta = thetaOfPositionTable(g, c->getOperand(0), D);
  if (!theta) return std::nullopt;
  return Rotary{r->getOperand(0), r->getOperand(1), *theta};
}

struct RaiseMultiHeadAttention : RewritePattern {
  explicit RaiseMultiHeadAttention(MLIRContext* ctx) : RewritePattern("graph.com.microsoft.MultiHeadAttention", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto H = intAttrOf(op, "num_heads");
    Value q = op->getOperand(0), k = op->getOperand(1), v = op->getOperand(2);
    auto width = staticDim(q, 2);
    if (!H || *H <= 0 || rankOf(q) != 3 || rankOf(k) != 3 || rankOf(v) != 3 || !width || *width % *H ||
        staticDim(k, 2) != width || staticDim(v, 2) != width)
      return rw.notifyMatchFailure(op, "not token-major [B, S, H * D] q/k/v");
    int64_t D = *width / *H;
    for (unsigned i : {3u, 4u, 6u, 7u, 8u, 9u})
      if (hasOperand(op, i)) return rw.notifyMatchFailure(op, "bias / key_padding_mask / past inputs");
    for (unsigned i : {1u, 2u})
      if (i < op->getNumResults() && !op->getResult(i).use_empty()) return rw.notifyMatchFailure(op, "present K/V are read");
    auto g = op->getParentOfType<GraphOp>();
    auto rq = peelRotary(g, q, D), rk = peelRotary(g, k, D);
    if (!rq || !rk || (rq->positions != rk->positions) || rq->theta != rk->theta)
      return rw.notifyMatchFailure(op, "rotary embedding not on q and k alike");
    bool causal = intAttrOf(op, "unidirectional").value_or(0) != 0;
    MaskKind kind = MaskKind::None;
    if (hasOperand(op, 5)) {
      if (causal) return rw.notifyMatchFailure(op, "unidirectional together with an attention bias");
      auto k2 = classifyMask(g, op->getOperand(5), MaskForm::Additive);
      if (!k2) return rw.notifyMatchFailure(op, "attention bias is not a causal / padding mask");
      kind = *k2;
    } else if (causal) {
      if (!sameExtent(q, 1, k, 1)) return rw.notifyMatchFailure(op, "unidirectional with keys beyond the queries");
      kind = MaskKind::Causal;
    }
    Location loc = op->getLoc();
    auto headsOf = [&](const Rotary& r) -> Value {
      Value h = createHeadSplit(rw, loc, r.x, *H, D);
      if (!r.positions) return h;
      return createNode(rw, loc, "Rope", h.getType(), {h, r.positions},
                        {rw.getNamedAttr("theta", rw.getF64FloatAttr(r.theta))})->getResult(0);
    };
    Value qh = headsOf(*rq), kh = headsOf(*rk), vh = createHeadSplit(rw, loc, v, *H, D);
    replaceWithHeadAttention(rw, op, qh, kh, vh, kind, D);
    return success();
  }
};

}  // namespace

void populateRaiseMultiHeadAttentionPatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseMultiHeadAttention>(patterns.getContext());
}

}  // namespace strata::graph
