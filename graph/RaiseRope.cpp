// Rotate-half RoPE as Llama/Qwen2/Mistral exports write it:
//   x * C + Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2)) * S
// where C = Unsqueeze(Cos(E), 1) and S = Unsqueeze(Sin(E), 1) share one angle
// table E computed from integer positions P ([B, S]). E's arithmetic differs
// per exporter (Mul by inv_freq, or MatMul with it, then Transpose/Concat), so
// it is checked by evaluation: with P set to probe positions, E must equal
// P * theta^(-2i/D) (i mod D/2) for one theta, which becomes the attribute.
#include <cmath>

#include "graph/Evaluate.h"
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/SymbolicDims.h"

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

// Walks E back to the integer positions it is computed from.
Value positionsOf(Value e) {
  Value v = e;
  for (int steps = 0; steps < 16 && v; ++steps) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && isa<IntegerType>(t.getElementType()) && t.getRank() <= 2) return v;
    Operation* op = v.getDefiningOp();
    if (!op) return nullptr;
    if (isOp(op, "Concat") && op->getNumOperands() == 2 && op->getOperand(0) == op->getOperand(1)) v = op->getOperand(0);
    else if (isOp(op, "Cast") || isOp(op, "Transpose") || isOp(op, "Unsqueeze") || isOp(op, "Reshape") || isOp(op, "Expand"))
      v = op->getOperand(0);
    else if (isOp(op, "Mul") || isOp(op, "MatMul")) {
      bool c0 = isa_and_nonnull<ConstantOp>(op->getOperand(0).getDefiningOp());
      bool c1 = isa_and_nonnull<ConstantOp>(op->getOperand(1).getDefiningOp());
      if (c0 == c1) return nullptr;
      v = op->getOperand(c0 ? 1 : 0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// theta such that E == P * theta^(-2i/D) on probe positions, or nullopt.
std::optional<double> thetaOf(Value e, Value p, int64_t D) {
  auto pt = dyn_cast<RankedTensorType>(p.getType());
  if (!pt) return std::nullopt;
  ops::Shape shape;
  for (int64_t i = 0; i < pt.getRank(); ++i) shape.push_back(pt.isDynamicDim(i) ? (i == 0 && pt.getRank() == 2 ? 2 : 5) : pt.getDimSize(i));
  ops::Tensor probe(dtypeFor(pt.getElementType()) == ops::DType::I32 ? ops::DType::I32 : ops::DType::I64, shape);
  const int64_t values[] = {1, 0, 7, 300, 2, 41, 5, 123, 3, 64};
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < probe.numel(); ++i) pos.push_back(values[i % 10]);
  for (int64_t i = 0; i < probe.numel(); ++i) {
    if (probe.dtype() == ops::DType::I32) probe.mut<int32_t>()[i] = (int32_t)pos[i];
    else probe.mut<int64_t>()[i] = pos[i];
  }
  Evaluator ev;
  ev.setValue(p, probe);
  auto et = ev.eval(e);
  if (!et || et->dtype() != ops::DType::F32 || et->numel() != probe.numel() * D || pos.empty()) return std::nullopt;
  const float* a = et->data<float>();
  int64_t half = D / 2;
  double theta = std::pow((double)a[1], -(double)half);  // position 1 first: a[1] = theta^(-2/D)
  if (!(theta > 1.0) || !std::isfinite(theta)) return std::nullopt;
  // Exports store f32 inv_freq; bases are integers (1e4, 5e5, 1e6) in practice.
  if (std::abs(theta - std::round(theta)) <= 1e-4 * theta) theta = std::round(theta);
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t i = 0; i < D; ++i) {
      double want = (double)pos[t] * std::pow(theta, -2.0 * (double)(i % half) / (double)D);
      if (std::abs(a[t * D + i] - want) > 1e-5 * std::abs(want) + 1e-5) return std::nullopt;
    }
  return theta;
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
        if (!p || rankOf(p) != 2) return rw.notifyMatchFailure(op, "rope angles not from [B, S] positions");
        auto theta = thetaOf(e, p, *D);
        if (!theta) return rw.notifyMatchFailure(op, "rope angles are not positions * theta^(-2i/D)");
        NamedAttribute a(rw.getStringAttr("theta"), rw.getF64FloatAttr(*theta));
        Operation* n = createNode(rw, op->getLoc(), "Rope", op->getResultTypes(), {x, p}, {a});
        rw.replaceOp(op, n->getResults());
        return success();
      }
    }
    return rw.notifyMatchFailure(op, "not x * cos + rotate_half(x) * sin");
  }
};

}  // namespace

void populateRaiseRopePatterns(RewritePatternSet& patterns) { patterns.add<RaiseRope>(patterns.getContext()); }

}  // namespace strata::graph
