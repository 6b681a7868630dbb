// silu(x Wg) * (x Wu) -> one region.gemm with the SwiGLU epilogue, and
// gelu_tanh(x Wg) * (x Wu) (Gemma's GeGLU) with the GeGLU one: the gate and
// up products share x and are combined before anything is stored.
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct FuseGemmSwiGLU : RewritePattern {
  explicit FuseGemmSwiGLU(MLIRContext* ctx) : RewritePattern("graph.Mul", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    for (int i = 0; i < 2; ++i) {
      Operation* silu = defOf(op->getOperand(i), "Silu");
      Operation* gelu = defOf(op->getOperand(i), "Gelu");
      if (gelu && gelu->getAttrOfType<StringAttr>("approximate") == rw.getStringAttr("tanh")) silu = gelu;
      if (!silu) continue;
      Operation* gateOp = silu->getOperand(0).getDefiningOp();
      Operation* upOp = op->getOperand(1 - i).getDefiningOp();
      auto gate = readGemm(gateOp), up = readGemm(upOp);
      if (!gate || !up || !gate->plain() || !up->plain() || gate->weights.size() != 1 || up->weights.size() != 1)
        continue;
      if (gate->x != up->x || gate->layout != up->layout || gate->biases.empty() != up->biases.empty()) continue;
      if (!gateOp->hasOneUse() || !silu->hasOneUse() || !upOp->hasOneUse()) continue;
      if (!sameShape(op->getResult(0), upOp->getResult(0)) || !sameShape(gateOp->getResult(0), upOp->getResult(0)))
        continue;  // no broadcasting
      GemmParts g = *gate;
      g.weights.push_back(up->weights[0]);
      g.biases.append(up->biases.begin(), up->biases.end());
      g.epilogue = silu == gelu ? "geglu" : "swiglu";
      Operation* n = buildGemm(rw, op->getLoc(), g, op->getResultTypes());
      rw.replaceOp(op, n->getResults());
      return success();
    }
    return rw.notifyMatchFailure(op, "not silu(gemm) * gemm or gelu(gemm) * gemm on one input");
  }
};

}  // namespace

void populateFuseGemmSwiGLUPatterns(RewritePatternSet& patterns) { patterns.add<FuseGemmSwiGLU>(patterns.getContext()); }

}  // namespace strata::graph
