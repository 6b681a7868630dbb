#include "graph/AttentionParts.h"

#include <cmath>

#include "graph/Evaluate.h"
#include "graph/Match.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

const char* maskName(MaskKind k) {
  switch (k) {
    case MaskKind::CausalPadding: return "causal+padding";
    case MaskKind::Causal: return "causal";
    case MaskKind::Padding: return "padding";
    case MaskKind::None: return "none";
  }
  return "?";
}

namespace {

// Which closed forms match the mask on one probe (bit per MaskKind).
unsigned matchingKinds(const ops::Tensor& m, MaskForm form, int64_t B, int64_t S, int64_t P, const ops::Tensor& am) {
  int64_t T = P + S;
  ops::Shape s4 = m.shape();
  if (s4.size() > 4) return 0;
  while (s4.size() < 4) s4.insert(s4.begin(), 1);
  if ((s4[0] != 1 && s4[0] != B) || (s4[2] != 1 && s4[2] != S) || s4[3] != T) return 0;
  ops::Tensor mf = m.toF32();
  const float* p = mf.data<float>();
  auto keep = am.defined() ? am.toI64Vector() : std::vector<int64_t>();
  unsigned ok = 0xF;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < s4[1]; ++h)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < T; ++j) {
          float v = p[(((s4[0] == 1 ? 0 : b) * s4[1] + h) * s4[2] + (s4[2] == 1 ? 0 : i)) * T + j];
          bool allowed;
          if (form == MaskForm::Additive) {
            if (v != 0.f && !(v <= kMaskedBelow)) return 0;  // a bias, not a mask
            allowed = v == 0.f;
          } else {
            allowed = (v != 0.f) == (form == MaskForm::AllowedIfTrue);
          }
          bool causal = j <= P + i, pad = keep.empty() || keep[b * T + j] != 0;
          if (allowed != (causal && pad)) ok &= ~(1u << (unsigned)MaskKind::CausalPadding);
          if (allowed != causal) ok &= ~(1u << (unsigned)MaskKind::Causal);
          if (allowed != pad) ok &= ~(1u << (unsigned)MaskKind::Padding);
          if (!allowed) ok &= ~(1u << (unsigned)MaskKind::None);
        }
  return ok;
}

}  // namespace

std::optional<MaskKind> classifyMask(GraphOp g, Value mask, MaskForm form) {
  bool hasPast = false, hasMask = false;
  for (BlockArgument a : g.getBody().front().getArguments()) {
    std::string n = inputName(a);
    hasPast |= n.rfind("past_key_values.", 0) == 0;
    hasMask |= n == "attention_mask";
  }
  struct Probe { ProbeDims d; int64_t padRow; };
  using Probes = std::vector<Probe>;
  // Exports whose reshapes bake in the example's batch of 1 cannot evaluate
  // at batch 2; they are probed at batch 1, which is how the paged form runs
  // every step anyway (all tokens in one [1, T] row).
  const Probes sets[2] = {hasPast ? Probes{{{2, 3, 2}, 1}, {{2, 1, 4}, 0}, {{1, 4, 0}, -1}}
                                  : Probes{{{2, 4, 0}, 1}, {{1, 5, 0}, -1}, {{2, 2, 0}, 0}},
                          hasPast ? Probes{{{1, 3, 2}, 0}, {{1, 1, 4}, 0}, {{1, 4, 0}, -1}}
                                  : Probes{{{1, 4, 0}, 0}, {{1, 5, 0}, -1}, {{1, 2, 0}, 0}}};
  unsigned ok = 0;
  for (const Probes& probes : sets) {
    ok = 0xF;
    bool evaluated = true;
    for (const Probe& pr : probes) {
      Evaluator ev;
      ops::Tensor am;
      int64_t B = setProbeInputs(ev, g, pr.d, pr.padRow, &am);
      auto m = ev.eval(mask);
      if (!m) { evaluated = false; break; }
      ok &= matchingKinds(*m, form, B, pr.d.seq, pr.d.past, am);
    }
    if (evaluated) break;
    ok = 0;
  }
  for (MaskKind k : {MaskKind::CausalPadding, MaskKind::Causal, MaskKind::Padding, MaskKind::None})
    if (ok & (1u << (unsigned)k)) {
      if ((k == MaskKind::CausalPadding || k == MaskKind::Padding) && !hasMask) continue;
      return k;
    }
  return std::nullopt;
}

// Reshape(Expand(Unsqueeze(k, 2), [B, Hkv, n, T, D]), [B, Hkv * n, T, D]) -> k,
// or the same with Tile(Unsqueeze(k, 2), [1, 1, n, 1, 1]) for the Expand:
// both repeat each KV head n times in a row (GQA grouping, torch's
// repeat_interleave on the head axis).
//
// Also Gather(k, idx, axis 1) with constant idx == [h / n for h < Hkv * n]
// (torch's index_select form); indices in any other order (a plain
// Tile(k, [1, n, 1, 1]) reads head h % Hkv) are not GQA grouping and stay.
Value peelRepeatKv(Value v) {
  if (Operation* g = defOf(v, "Gather")) {
    auto idx = intsAttrOrOperand(g, "", 1);
    Value k = g->getOperand(0);
    auto hk = staticDim(k, 1);
    if (intAttrOf(g, "axis").value_or(0) != 1 || !idx || rankOf(k) != 4 || !hk || idx->empty() || idx->size() % *hk)
      return v;
    int64_t n = (int64_t)idx->size() / *hk;
    for (size_t h = 0; h < idx->size(); ++h)
      if ((*idx)[h] != (int64_t)h / n) return v;
    return k;
  }
  Operation* rs = defOf(v, "Reshape");
  if (!rs) return v;
  Operation* ex = defOf(rs->getOperand(0), "Expand");
  if (Operation* tile = defOf(rs->getOperand(0), "Tile")) {
    auto reps = intsAttrOrOperand(tile, "", 1);
    if (reps && reps->size() == 5 && (*reps)[0] == 1 && (*reps)[1] == 1 && (*reps)[3] == 1 && (*reps)[4] == 1) ex = tile;
  }
  Operation* un = ex ? defOf(ex->getOperand(0), "Unsqueeze") : nullptr;
  if (!un) return v;
  auto axes = intsAttrOrOperand(un, "axes", 1);
  Value k = un->getOperand(0);
  if (!axes || axes->size() != 1 || (*axes)[0] != 2 || rankOf(k) != 4 || rankOf(rs->getResult(0)) != 4) return v;
  auto hk = staticDim(k, 1), hq = staticDim(rs->getResult(0), 1);
  if (!hk || !hq || *hq % *hk) return v;
  return k;
}

Operation* createAttention(PatternRewriter& rw, Location loc, Type result, Value q, Value k, Value v, MaskKind kind,
                           double scale) {
  auto g = q.getParentRegion()->getParentOfType<GraphOp>();
  SmallVector<Value> operands{q, k, v};
  if (kind == MaskKind::CausalPadding || kind == MaskKind::Padding)
    for (BlockArgument a : g.getBody().front().getArguments())
      if (inputName(a) == "attention_mask") operands.push_back(a);
  SmallVector<NamedAttribute> attrs{
      {rw.getStringAttr("scale"), rw.getF64FloatAttr(scale)},
      {rw.getStringAttr("causal"), rw.getI64IntegerAttr(kind == MaskKind::Causal || kind == MaskKind::CausalPadding)},
      {rw.getStringAttr("mask"), rw.getStringAttr(maskName(kind))},
      {rw.getStringAttr("heads"), rw.getI64IntegerAttr(*staticDim(q, 1))},
      {rw.getStringAttr("kv_heads"), rw.getI64IntegerAttr(*staticDim(k, 1))},
      {rw.getStringAttr("head_dim"), rw.getI64IntegerAttr(*staticDim(q, 3))}};
  return createNode(rw, loc, "Attention", result, operands, attrs);
}

double attentionScale(Operation* op, int64_t headDim) {
  if (auto s = op->getAttrOfType<FloatAttr>("scale"); s && s.getValueAsDouble() != 0) return s.getValueAsDouble();
  return 1.0 / std::sqrt((double)headDim);
}

Value createHeadSplit(PatternRewriter& rw, Location loc, Value x, int64_t H, int64_t D) {
  auto d = *getDims(x.getType());
  Type elt = cast<ShapedType>(x.getType()).getElementType();
  MLIRContext* ctx = rw.getContext();
  Value r = createNode(rw, loc, "Reshape", makeTensorType(ctx, {d[0], d[1], {H, ""}, {D, ""}}, elt),
                       {x, createI64Constant(rw, loc, {0, 0, H, D})})->getResult(0);
  return createNode(rw, loc, "Transpose", makeTensorType(ctx, {d[0], {H, ""}, d[1], {D, ""}}, elt), {r},
                    {rw.getNamedAttr("perm", rw.getDenseI64ArrayAttr({0, 2, 1, 3}))})->getResult(0);
}

Value createHeadMerge(PatternRewriter& rw, Location loc, Value o, Type result) {
  auto d = *getDims(o.getType());
  Type elt = cast<ShapedType>(o.getType()).getElementType();
  Value t = createNode(rw, loc, "Transpose", makeTensorType(rw.getContext(), {d[0], d[2], d[1], d[3]}, elt), {o},
                       {rw.getNamedAttr("perm", rw.getDenseI64ArrayAttr({0, 2, 1, 3}))})->getResult(0);
  int64_t width = d[1].value * d[3].value;
  return createNode(rw, loc, "Reshape", result, {t, createI64Constant(rw, loc, {0, 0, width})})->getResult(0);
}

void replaceWithHeadAttention(PatternRewriter& rw, Operation* op, Value qh, Value kh, Value vh, MaskKind kind,
                              int64_t headDim) {
  Location loc = op->getLoc();
  Value o = createAttention(rw, loc, qh.getType(), qh, kh, vh, kind, attentionScale(op, headDim))->getResult(0);
  rw.replaceAllUsesWith(op->getResult(0), createHeadMerge(rw, loc, o, op->getResult(0).getType()));
  rw.eraseOp(op);
}

}  // namespace strata::graph
