// RMSNorm as exporters write it:
//   w * (x * Reciprocal(Sqrt(ReduceMean(Pow(x, 2), -1) + eps)))
// with Div(1, .) for Reciprocal, Div(x, Sqrt(.)) for the product, x * x for
// Pow, and any operand order of the commutative ops; and onnxruntime's fused
// SimplifiedLayerNormalization over the last axis with a 1-D scale.
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

// mean(x^2, last axis, keepdims) + eps -> x and eps.
bool matchMeanSquarePlusEps(Value v, Value& x, double& eps) {
  Operation* add = defOf(v, "Add");
  if (!add) return false;
  for (int i = 0; i < 2; ++i) {
    auto e = scalarConstant(add->getOperand(1 - i));
    Operation* mean = defOf(add->getOperand(i), "ReduceMean");
    if (!e || !mean) continue;
    auto axes = intsAttrOrOperand(mean, "axes", 1);
    auto r = rankOf(mean->getOperand(0));
    if (!axes || axes->size() != 1 || !r || ((*axes)[0] != -1 && (*axes)[0] != *r - 1)) continue;
    if (intAttrOf(mean, "keepdims").value_or(1) != 1) continue;
    Value sq = mean->getOperand(0);
    if (Operation* pow = defOf(sq, "Pow")) {
      if (scalarConstant(pow->getOperand(1)) != 2.0) continue;
      x = pow->getOperand(0);
    } else if (Operation* mul = defOf(sq, "Mul")) {
      if (mul->getOperand(0) != mul->getOperand(1)) continue;
      x = mul->getOperand(0);
    } else {
      continue;
    }
    eps = *e;
    return true;
  }
  return false;
}

// x * rsqrt(ms + eps) in its three spellings -> x and eps.
bool matchNormalized(Value v, Value& x, double& eps) {
  if (Operation* div = defOf(v, "Div")) {  // x / sqrt(...)
    Operation* sqrt = defOf(div->getOperand(1), "Sqrt");
    Value x2;
    if (sqrt && matchMeanSquarePlusEps(sqrt->getOperand(0), x2, eps) && x2 == div->getOperand(0)) return x = x2, true;
    return false;
  }
  Operation* mul = defOf(v, "Mul");
  if (!mul) return false;
  for (int i = 0; i < 2; ++i) {
    Value r = mul->getOperand(1 - i), sqrtIn;
    if (Operation* rec = defOf(r, "Reciprocal")) {
      if (Operation* sqrt = defOf(rec->getOperand(0), "Sqrt")) sqrtIn = sqrt->getOperand(0);
    } else if (Operation* div = defOf(r, "Div")) {
      if (scalarConstant(div->getOperand(0)) == 1.0)
        if (Operation* sqrt = defOf(div->getOperand(1), "Sqrt")) sqrtIn = sqrt->getOperand(0);
    }
    Value x2;
    if (sqrtIn && matchMeanSquarePlusEps(sqrtIn, x2, eps) && x2 == mul->getOperand(i)) return x = x2, true;
  }
  return false;
}

// Replaces `op` (the norm's last node) by RMSNorm(x, w){eps}.
LogicalResult replaceWithRMSNorm(PatternRewriter& rw, Operation* op, Value x, Value w, double eps) {
  NamedAttribute a(rw.getStringAttr("eps"), rw.getF64FloatAttr(eps));
  Operation* n = createNode(rw, op->getLoc(), "RMSNorm", op->getResultTypes(), {x, w}, {a});
  rw.replaceOp(op, n->getResults());
  return success();
}

struct RaiseRMSNorm : RewritePattern {
  explicit RaiseRMSNorm(MLIRContext* ctx) : RewritePattern("graph.Mul", 2, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    for (int i = 0; i < 2; ++i) {
      Value w = op->getOperand(i), x;
      double eps = 0;
      auto wRank = rankOf(w);
      auto d = staticDim(op->getOperand(1 - i), -1);
      if (!wRank || *wRank != 1 || !d || staticDim(w, 0) != d) continue;
      if (!matchNormalized(op->getOperand(1 - i), x, eps)) continue;
      return replaceWithRMSNorm(rw, op, x, w, eps);
    }
    return rw.notifyMatchFailure(op, "not weight * normalized(x)");
  }
};

// onnxruntime's SimplifiedLayerNormalization and ONNX's RMSNormalization-23
// (same semantics) over the last axis with a 1-D scale.
struct RaiseNormalizationOp : RewritePattern {
  RaiseNormalizationOp(MLIRContext* ctx, StringRef root) : RewritePattern(root, 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto r = rankOf(op->getOperand(0));
    auto wRank = rankOf(op->getOperand(1));
    int64_t axis = intAttrOf(op, "axis").value_or(-1);
    if (!r || !wRank) return rw.notifyMatchFailure(op, "ranks unknown");
    if (axis != -1 && axis != *r - 1) return rw.notifyMatchFailure(op, "normalizes over more than the last axis");
    if (*wRank != 1) return rw.notifyMatchFailure(op, "scale is not 1-D");
    double eps = 1e-5;
    if (auto e = op->getAttrOfType<FloatAttr>("epsilon")) eps = e.getValueAsDouble();
    return replaceWithRMSNorm(rw, op, op->getOperand(0), op->getOperand(1), eps);
  }
};

}  // namespace

void populateRaiseRMSNormPatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseRMSNorm>(patterns.getContext());
  for (StringRef root : {"graph.SimplifiedLayerNormalization", "graph.RMSNormalization"})
    patterns.add<RaiseNormalizationOp>(patterns.getContext(), root);
}

}  // namespace strata::graph
