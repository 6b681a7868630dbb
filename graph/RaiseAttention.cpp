// Scaled dot-product attention as exporters decompose it:
//   MatMul(Softmax(mask(scale * MatMul(q, Transpose(repeat_kv(k))))), repeat_kv(v))
// scale: Div/Mul by a constant after the product, or Mul of q and k^T by
// constants before it; mask: Add of an additive mask, or Where(cond, -big, s)
// / Where(cond, s, -big); repeat_kv: Reshape(Expand(Unsqueeze(k, 2))).
//
// The mask operand is built in-graph from input dims, attention_mask and
// position_ids in exporter-specific ways (CumSum/Range/LessOrEqual/GatherND).
// It is classified by evaluation on probe inputs (several batch / new-token /
// cached-token sizes, with a padded row) against causal, padding, both, or
// none; a mask that is none of these is left alone (and reported as fallback).
#include <cmath>

#include "graph/Evaluate.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

constexpr double kMaskedBelow = -1e30;

// Reshape(Expand(Unsqueeze(k, 2), [B, Hkv, n, T, D]), [B, Hkv * n, T, D]) -> k,
// or the same with Tile(Unsqueeze(k, 2), [1, 1, n, 1, 1]) for the Expand:
// both repeat each KV head n times in a row (GQA grouping, torch's
// repeat_interleave on the head axis).
Value peelRepeatKv(Value v) {
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

struct Scores {
  Value q, kt;
  double scale = 1.0;
};

// [Mul|Div by constant]* (MatMul([Mul(q, c)], [Mul(kT, c)])) -> q, kT, scale.
std::optional<Scores> matchScores(Value v) {
  Scores s;
  for (int steps = 0; steps < 4; ++steps) {
    if (Operation* div = defOf(v, "Div")) {
      auto c = scalarConstant(div->getOperand(1));
      if (!c || *c == 0) return std::nullopt;
      s.scale /= *c, v = div->getOperand(0);
    } else if (Operation* mul = defOf(v, "Mul")) {
      auto c0 = scalarConstant(mul->getOperand(0)), c1 = scalarConstant(mul->getOperand(1));
      if (c1) s.scale *= *c1, v = mul->getOperand(0);
      else if (c0) s.scale *= *c0, v = mul->getOperand(1);
      else return std::nullopt;
    } else {
      break;
    }
  }
  Operation* mm = defOf(v, "MatMul");
  if (!mm) return std::nullopt;
  auto unscale = [&](Value x) {
    if (Operation* mul = defOf(x, "Mul"))
      for (int i = 0; i < 2; ++i)
        if (auto c = scalarConstant(mul->getOperand(i))) { s.scale *= *c; return mul->getOperand(1 - i); }
    return x;
  };
  s.q = unscale(mm->getOperand(0));
  s.kt = unscale(mm->getOperand(1));
  return s;
}

// The closed forms a mask is compared with: allowed[b, i, j] for query i
// (position past + i) and key j.
enum class MaskKind { CausalPadding, Causal, Padding, None };
const char* maskName(MaskKind k) {
  switch (k) {
    case MaskKind::CausalPadding: return "causal+padding";
    case MaskKind::Causal: return "causal";
    case MaskKind::Padding: return "padding";
    case MaskKind::None: return "none";
  }
  return "?";
}

// How the evaluated mask tensor reads: bool "true = masked" (Where(c, -big, s)),
// bool "true = allowed" (Where(c, s, -big)) or additive float.
enum class MaskForm { MaskedIfTrue, AllowedIfTrue, Additive };

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

std::optional<MaskKind> classifyMask(GraphOp g, Value mask, MaskForm form) {
  bool hasPast = false, hasMask = false;
  for (BlockArgument a : g.getBody().front().getArguments()) {
    std::string n = inputName(a);
    hasPast |= n.rfind("past_key_values.", 0) == 0;
    hasMask |= n == "attention_mask";
  }
  struct Probe { ProbeDims d; int64_t padRow; };
  std::vector<Probe> probes = hasPast ? std::vector<Probe>{{{2, 3, 2}, 1}, {{2, 1, 4}, 0}, {{1, 4, 0}, -1}}
                                      : std::vector<Probe>{{{2, 4, 0}, 1}, {{1, 5, 0}, -1}, {{2, 2, 0}, 0}};
  unsigned ok = 0xF;
  for (const Probe& pr : probes) {
    Evaluator ev;
    ops::Tensor am;
    int64_t B = setProbeInputs(ev, g, pr.d, pr.padRow, &am);
    auto m = ev.eval(mask);
    if (!m) return std::nullopt;
    ok &= matchingKinds(*m, form, B, pr.d.seq, pr.d.past, am);
  }
  for (MaskKind k : {MaskKind::CausalPadding, MaskKind::Causal, MaskKind::Padding, MaskKind::None})
    if (ok & (1u << (unsigned)k)) {
      if ((k == MaskKind::CausalPadding || k == MaskKind::Padding) && !hasMask) continue;
      return k;
    }
  return std::nullopt;
}

// k^T written as Transpose(k, [0, 1, 3, 2]), or (dynamo's SDPA decomposition)
// Reshape(Transpose(Reshape(k, [B * H, T, D]), [0, 2, 1]), [B, H, D, T]) -> k.
Value peelKeyTranspose(Value kt) {
  Operation* tr = defOf(kt, "Transpose");
  auto perm = tr ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  if (perm && perm.asArrayRef() == ArrayRef<int64_t>{0, 1, 3, 2}) return tr->getOperand(0);
  Operation* outer = defOf(kt, "Reshape");
  tr = outer ? defOf(outer->getOperand(0), "Transpose") : nullptr;
  perm = tr ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  Operation* inner = tr ? defOf(tr->getOperand(0), "Reshape") : nullptr;
  if (!inner || perm.asArrayRef() != ArrayRef<int64_t>{0, 2, 1}) return nullptr;
  Value k = inner->getOperand(0);
  if (rankOf(k) != 4 || rankOf(inner->getResult(0)) != 3 || rankOf(kt) != 4) return nullptr;
  auto h = staticDim(k, 1), d = staticDim(k, 3);
  if (!h || !d || staticDim(kt, 1) != h || staticDim(kt, 2) != d || staticDim(inner->getResult(0), 2) != d) return nullptr;
  return k;
}

struct RaiseAttention : RewritePattern {
  explicit RaiseAttention(MLIRContext* ctx) : RewritePattern("graph.MatMul", 3, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value probs = op->getOperand(0);
    if (Operation* c = defOf(probs, "Cast")) probs = c->getOperand(0);
    // Where(IsNaN(p), 0, p): the guard for rows with every key masked.
    if (Operation* w = defOf(probs, "Where")) {
      Operation* nan = defOf(w->getOperand(0), "IsNaN");
      if (nan && nan->getOperand(0) == w->getOperand(2) && scalarConstant(w->getOperand(1)) == 0.0) probs = w->getOperand(2);
    }
    Operation* sm = defOf(probs, "Softmax");
    if (!sm) return rw.notifyMatchFailure(op, "not softmax @ v");
    auto axis = intAttrOf(sm, "axis");
    if (!axis || (*axis != -1 && *axis != 3)) return rw.notifyMatchFailure(op, "softmax not over keys");
    Value masked = sm->getOperand(0);
    std::optional<Scores> sc;
    Value mask;
    MaskForm form = MaskForm::Additive;
    if (Operation* w = defOf(masked, "Where")) {
      auto a = scalarConstant(w->getOperand(1)), b = scalarConstant(w->getOperand(2));
      if (a && *a <= kMaskedBelow) sc = matchScores(w->getOperand(2)), form = MaskForm::MaskedIfTrue;
      else if (b && *b <= kMaskedBelow) sc = matchScores(w->getOperand(1)), form = MaskForm::AllowedIfTrue;
      mask = w->getOperand(0);
    } else if (Operation* add = defOf(masked, "Add")) {
      for (int i = 0; i < 2 && !sc; ++i)
        if ((sc = matchScores(add->getOperand(i)))) mask = add->getOperand(1 - i);
    } else {
      sc = matchScores(masked);
    }
    if (!sc) return rw.notifyMatchFailure(op, "no q @ k^T scores");
    Value kx = peelKeyTranspose(sc->kt);
    if (!kx) return rw.notifyMatchFailure(op, "k not transposed");
    Value q = sc->q, k = peelRepeatKv(kx), v = peelRepeatKv(op->getOperand(1));
    auto hq = staticDim(q, 1), hk = staticDim(k, 1), hv = staticDim(v, 1), d = staticDim(q, 3);
    if (rankOf(q) != 4 || rankOf(k) != 4 || rankOf(v) != 4 || !hq || !hk || !d || hk != hv || *hq % *hk)
      return rw.notifyMatchFailure(op, "q/k/v are not [B, H, S, D] with GQA-compatible heads");
    auto g = op->getParentOfType<GraphOp>();
    MaskKind kind = MaskKind::None;
    if (mask) {
      auto k2 = classifyMask(g, mask, form);
      if (!k2) return rw.notifyMatchFailure(op, "mask is not causal / padding");
      kind = *k2;
    }
    SmallVector<Value> operands{q, k, v};
    if (kind == MaskKind::CausalPadding || kind == MaskKind::Padding)
      for (BlockArgument a : g.getBody().front().getArguments())
        if (inputName(a) == "attention_mask") operands.push_back(a);
    SmallVector<NamedAttribute> attrs{
        {rw.getStringAttr("scale"), rw.getF64FloatAttr(sc->scale)},
        {rw.getStringAttr("causal"), rw.getI64IntegerAttr(kind == MaskKind::Causal || kind == MaskKind::CausalPadding)},
        {rw.getStringAttr("mask"), rw.getStringAttr(maskName(kind))},
        {rw.getStringAttr("heads"), rw.getI64IntegerAttr(*hq)},
        {rw.getStringAttr("kv_heads"), rw.getI64IntegerAttr(*hk)},
        {rw.getStringAttr("head_dim"), rw.getI64IntegerAttr(*d)}};
    Operation* n = createNode(rw, op->getLoc(), "Attention", op->getResultTypes(), operands, attrs);
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateRaiseAttentionPatterns(RewritePatternSet& patterns) { patterns.add<RaiseAttention>(patterns.getContext()); }

}  // namespace strata::graph
