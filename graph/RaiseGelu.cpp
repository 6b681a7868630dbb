// GELU's tanh form as exporters decompose it (GPT-2's gelu_new, torch's
// gelu(approximate="tanh")):
//   x * 0.5 * (1 + Tanh(0.7978845608 * (x + 0.044715 * x^3)))
// with the products in any order and x^3 as Pow(x, 3) or x * x * x ->
// Gelu{approximate = "tanh"}, which a GEMM region takes as its epilogue.
#include <cmath>

#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool near(std::optional<double> v, double want) { return v && std::abs(*v - want) <= 1e-6 * std::abs(want); }

// The factors of a product of Muls (two levels deep).
void factors(Value v, SmallVector<Value>& out, int depth = 0) {
  Operation* mul = defOf(v, "Mul");
  if (!mul || depth == 2) {
    out.push_back(v);
    return;
  }
  factors(mul->getOperand(0), out, depth + 1);
  factors(mul->getOperand(1), out, depth + 1);
}

// y when `v` is y * c or c * y with c a scalar constant near `c`.
Value timesConstant(Value v, double c) {
  Operation* mul = defOf(v, "Mul");
  for (int i = 0; mul && i < 2; ++i)
    if (near(scalarConstant(mul->getOperand(i)), c)) return mul->getOperand(1 - i);
  return nullptr;
}

// u when `v` is 1 + Tanh(u) (either order).
Value tanhOfOnePlus(Value v) {
  Operation* add = defOf(v, "Add");
  for (int i = 0; add && i < 2; ++i)
    if (Operation* t = defOf(add->getOperand(i), "Tanh"); t && near(scalarConstant(add->getOperand(1 - i)), 1.0))
      return t->getOperand(0);
  return nullptr;
}

// x^3 as Pow(x, 3) or a product of three x.
bool isCube(Value v, Value x) {
  if (Operation* pow = defOf(v, "Pow")) return pow->getOperand(0) == x && near(scalarConstant(pow->getOperand(1)), 3.0);
  SmallVector<Value> f;
  factors(v, f);
  return f.size() == 3 && llvm::all_of(f, [&](Value y) { return y == x; });
}

struct RaiseGelu : RewritePattern {
  explicit RaiseGelu(MLIRContext* ctx) : RewritePattern("graph.Mul", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    SmallVector<Value> f;
    factors(op->getResult(0), f);
    if (f.size() != 3) return rw.notifyMatchFailure(op, "not a product of three");
    // One factor 0.5, one 1 + tanh(u), the last x.
    Value x, u;
    bool half = false;
    for (Value v : f) {
      if (!half && near(scalarConstant(v), 0.5)) {
        half = true;
      } else if (Value t = u ? Value() : tanhOfOnePlus(v)) {
        u = t;
      } else if (!x) {
        x = v;
      } else {
        return rw.notifyMatchFailure(op, "not x * 0.5 * (1 + tanh(.))");
      }
    }
    if (!half || !u || !x || !sameShape(x, op->getResult(0))) return rw.notifyMatchFailure(op, "not x * 0.5 * (1 + tanh(.))");
    Value inner = timesConstant(u, 0.7978845608);
    Operation* sum = inner ? defOf(inner, "Add") : nullptr;
    if (!sum) return rw.notifyMatchFailure(op, "tanh's argument is not sqrt(2 / pi) (x + .)");
    bool ok = false;
    for (int i = 0; i < 2 && !ok; ++i)
      if (sum->getOperand(i) == x)
        if (Value cube = timesConstant(sum->getOperand(1 - i), 0.044715)) ok = isCube(cube, x);
    if (!ok) return rw.notifyMatchFailure(op, "not x + 0.044715 x^3");
    Operation* n = createNode(rw, op->getLoc(), "Gelu", op->getResultTypes(), {x},
                              {rw.getNamedAttr("approximate", rw.getStringAttr("tanh"))});
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateRaiseGeluPatterns(RewritePatternSet& patterns) { patterns.add<RaiseGelu>(patterns.getContext()); }

}  // namespace strata::graph
