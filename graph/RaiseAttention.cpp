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

#include "graph/AttentionParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

namespace {

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

// k^T written as Transpose(k, [0, 1, 3, 2]), or (dynamo's SDPA decomposition)
// Reshape(Transpose(Reshape(k, [B * H, T, D]), [0, 2, 1]), [B, H, D, T]) -> k.
// TorchScript's GPT-2 transposes the head split [B, T, H, D] straight to
// [B, H, D, T] (perm [0, 2, 3, 1]): that gives the split itself with `bthd`
// set, and the pattern makes k as the Transpose [0, 2, 1, 3] the other
// forms have.
struct KeyOperand {
  Value v;
  bool bthd = false;
};
KeyOperand peelKeyTranspose(Value kt) {
  Operation* tr = defOf(kt, "Transpose");
  auto perm = tr ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  if (perm && perm.asArrayRef() == ArrayRef<int64_t>{0, 1, 3, 2}) return {tr->getOperand(0)};
  if (perm && perm.asArrayRef() == ArrayRef<int64_t>{0, 2, 3, 1} && rankOf(tr->getOperand(0)) == 4 &&
      getDims(tr->getOperand(0).getType()))
    return {tr->getOperand(0), true};
  Operation* outer = defOf(kt, "Reshape");
  tr = outer ? defOf(outer->getOperand(0), "Transpose") : nullptr;
  perm = tr ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  Operation* inner = tr ? defOf(tr->getOperand(0), "Reshape") : nullptr;
  if (!inner || perm.asArrayRef() != ArrayRef<int64_t>{0, 2, 1}) return {};
  Value k = inner->getOperand(0);
  if (rankOf(k) != 4 || rankOf(inner->getResult(0)) != 3 || rankOf(kt) != 4) return {};
  auto h = staticDim(k, 1), d = staticDim(k, 3);
  if (!h || !d || staticDim(kt, 1) != h || staticDim(kt, 2) != d || staticDim(inner->getResult(0), 2) != d) return {};
  return {k};
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
    KeyOperand kx = peelKeyTranspose(sc->kt);
    if (!kx.v) return rw.notifyMatchFailure(op, "k not transposed");
    Value q = sc->q, k = kx.bthd ? kx.v : peelRepeatKv(kx.v), v = peelRepeatKv(op->getOperand(1));
    auto hq = staticDim(q, 1), hk = staticDim(k, kx.bthd ? 2 : 1), hv = staticDim(v, 1), d = staticDim(q, 3);
    if (rankOf(q) != 4 || rankOf(k) != 4 || rankOf(v) != 4 || !hq || !hk || !d || hk != hv || *hq % *hk)
      return rw.notifyMatchFailure(op, "q/k/v are not [B, H, S, D] with GQA-compatible heads");
    auto g = op->getParentOfType<GraphOp>();
    MaskKind kind = MaskKind::None;
    if (mask) {
      auto k2 = classifyMask(g, mask, form);
      if (!k2) return rw.notifyMatchFailure(op, "mask is not causal / padding");
      kind = *k2;
    }
    if (kx.bthd) {
      auto dk = *getDims(k.getType());
      Type t = makeTensorType(rw.getContext(), {dk[0], dk[2], dk[1], dk[3]}, cast<ShapedType>(k.getType()).getElementType());
      k = createNode(rw, op->getLoc(), "Transpose", t, {k}, {rw.getNamedAttr("perm", rw.getDenseI64ArrayAttr({0, 2, 1, 3}))})
              ->getResult(0);
    }
    Operation* n = createAttention(rw, op->getLoc(), op->getResult(0).getType(), q, k, v, kind, sc->scale);
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateRaiseAttentionPatterns(RewritePatternSet& patterns) { patterns.add<RaiseAttention>(patterns.getContext()); }

}  // namespace strata::graph
