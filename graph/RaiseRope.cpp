// Rotate-half RoPE as Llama/Qwen2/Mistral exports write it:
//   x * C + Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2)) * S
// where C = Unsqueeze(Cos(E), 1) and S = Unsqueeze(Sin(E), 1) share one angle
// table E computed from integer positions P ([B, S], or [S] shared by every
// sequence, which becomes [1, S]). E's arithmetic differs
// per exporter (Mul by inv_freq, or MatMul with it, then Transpose/Concat), so
// it is checked by evaluation: with P set to probe positions, E must equal
// P * theta^(-2i/D) (i mod D/2) for one theta, which becomes the attribute.
//
// Partial rotary (Phi-3 with partial_rotary_factor, GPT-NeoX): the rope above
// on x's first R dims, concatenated with the rest,
//   Concat(Rope(Slice(x, :R)), Slice(x, R:))
// -> Rope(x) with rotary_dim R (its theta is already over R dims).
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/RopeAngles.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool sliceOf(Value v, Value x, int64_t start, int64_t end, int64_t D) {
  Operation* s = defOf(v, "Slice");
  if (!s || s->getOperand(0) != x || s->getNumOperands() < 4) return false;
  auto st = intsAttrOrOperand(s, "", 1), en = intsAttrOrOperand(s, "", 2), ax = intsAttrOrOperand(s, "", 3);
  if (s->getNumOperands() > 4) {
    auto steps = intsAttrOrOperand(s, "", 4);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return false;
  }
  if (!st || !en || !ax || st->size() != 1 || en->size() != 1 || ax->size() != 1) return false;
  if ((*ax)[0] != -1 && (*ax)[0] != 3) return false;
  int64_t e = std::min((*en)[0], D);
  return (*st)[0] == start && e == end;
}

// C -> E through Unsqueeze(axis 1), an optional Cast and Mul by 1.0 (the
// attention-scaling factor of default RoPE), then Cos/Sin.
Value angleTable(Value c, StringRef fn) {
  Operation* u = defOf(c, "Unsqueeze");
  if (!u) return nullptr;
  auto axes = intsAttrOrOperand(u, "axes", 1);
  if (!axes || axes->size() != 1 || (*axes)[0] != 1) return nullptr;
  Value v = u->getOperand(0);
  if (Operation* cast = defOf(v, "Cast")) v = cast->getOperand(0);
  if (Operation* mul = defOf(v, "Mul")) {
    for (int i = 0; i < 2; ++i)
      if (scalarConstant(mul->getOperand(i)) == 1.0) { v = mul->getOperand(1 - i); break; }
  }
  Operation* f = defOf(v, fn);
  return f ? f->getOperand(0) : nullptr;
}

struct RaiseRope : RewritePattern {
  explicit RaiseRope(MLIRContext* ctx) : RewritePattern("graph.Add", 2, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    for (int i = 0; i < 2; ++i) {
      Operation* direct = defOf(op->getOperand(i), "Mul");
      Operation* rotated = defOf(op->getOperand(1 - i), "Mul");
      if (!direct || !rotated) continue;
      for (int j = 0; j < 2; ++j) {
        Operation* cat = defOf(rotated->getOperand(j), "Concat");
        if (!cat || cat->getNumOperands() != 2) continue;
        auto axis = intAttrOf(cat, "axis");
        Operation* neg = defOf(cat->getOperand(0), "Neg");
        if (!axis || (*axis != -1 && *axis != 3) || !neg) continue;
        Operation* hi = defOf(neg->getOperand(0), "Slice");
        if (!hi) continue;
        Value x = hi->getOperand(0);
        auto D = staticDim(x, 3);
        if (rankOf(x) != 4 || !D || *D % 2) continue;
        if (!sliceOf(neg->getOperand(0), x, *D / 2, *D, *D) || !sliceOf(cat->getOperand(1), x, 0, *D / 2, *D)) continue;
        Value c = otherOperand(direct, x);
        if (!c) continue;
        Value e = angleTable(c, "Cos");
        if (!e || angleTable(rotated->getOperand(1 - j), "Sin") != e) continue;
        Value p = positionsOf(e);
        if (!p || (rankOf(p) != 2 && rankOf(p) != 1))
          return rw.notifyMatchFailure(op, "rope angles not from [B, S] or [S] positions");
        auto theta = thetaOf(e, p, *D);
        if (!theta) return rw.notifyMatchFailure(op, "rope angles are not positions * theta^(-2i/D)");
        if (rankOf(p) == 1) {
          // One row of positions for every sequence (a graph without
          // position_ids computing its own arange): viewed as [1, S].
          // One such view for all layers (paged attention checks that q
          // and k share their positions).
          Value row;
          for (Operation* u : p.getUsers())
            if (isOp(u, "Unsqueeze") && rankOf(u->getResult(0)) == 2 && u->getNumOperands() == 2 &&
                intsAttrOrOperand(u, "axes", 1) == std::optional<std::vector<int64_t>>{{0}})
              row = u->getResult(0);
          if (!row) {
            auto pt = cast<RankedTensorType>(p.getType());
            auto rowType = RankedTensorType::get({1, pt.getDimSize(0)}, pt.getElementType());
            OpBuilder::InsertionGuard guard(rw);
            rw.setInsertionPointAfterValue(p);
            row = createNode(rw, op->getLoc(), "Unsqueeze", rowType, {p, createI64Constant(rw, op->getLoc(), {0})})
                      ->getResult(0);
          }
          p = row;
        }
        NamedAttribute a(rw.getStringAttr("theta"), rw.getF64FloatAttr(*theta));
        Operation* n = createNode(rw, op->getLoc(), "Rope", op->getResultTypes(), {x, p}, {a});
        rw.replaceOp(op, n->getResults());
        return success();
      }
    }
    return rw.notifyMatchFailure(op, "not x * cos + rotate_half(x) * sin");
  }
};

struct RaisePartialRope : RewritePattern {
  explicit RaisePartialRope(MLIRContext* ctx) : RewritePattern("graph.Concat", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto axis = intAttrOf(op, "axis");
    if (op->getNumOperands() != 2 || !axis || (*axis != -1 && *axis != 3))
      return rw.notifyMatchFailure(op, "not a concat of two on the head dim");
    Operation* rope = defOf(op->getOperand(0), "Rope");
    Operation* rot = rope ? defOf(rope->getOperand(0), "Slice") : nullptr;
    if (!rot || rope->hasAttr("rotary_dim")) return rw.notifyMatchFailure(op, "not a rope of a slice");
    Value x = rot->getOperand(0);
    auto D = staticDim(x, 3), R = staticDim(rope->getOperand(0), 3);
    if (rankOf(x) != 4 || !D || !R || *R >= *D || *R % 2 || !sliceOf(rope->getOperand(0), x, 0, *R, *D) ||
        !sliceOf(op->getOperand(1), x, *R, *D, *D))
      return rw.notifyMatchFailure(op, "not x's first dims rotated and the rest passed on");
    SmallVector<NamedAttribute> attrs(rope->getAttrs());
    attrs.push_back(rw.getNamedAttr("rotary_dim", rw.getI64IntegerAttr(*R)));
    Operation* n = createNode(rw, op->getLoc(), "Rope", op->getResultTypes(), {x, rope->getOperand(1)}, attrs);
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateRaiseRopePatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseRope, RaisePartialRope>(patterns.getContext());
}

}  // namespace strata::graph
