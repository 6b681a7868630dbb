// ONNX's RotaryEmbedding-23 -> Rope, for the rotate-half form Llama-family
// exports produce: x [B, H, S, D], not interleaved, all of D rotated, and
//  - without position_ids: cos/sin [B, S, D/2] = Cos/Sin(E) of one angle
//    table E computed from integer positions P (the torch exporter's form);
//    P and theta come from E as in RaiseRope;
//  - with position_ids P: cos/sin are caches [maxPos, D/2] whose row r holds
//    the angles of position r, checked by evaluating them.
// Anything else (interleaved pairs, partial rotary dims, 3-D x) stays as is.
#include "graph/Match.h"
#include "graph/Patterns.h"
#include "graph/RopeAngles.h"

namespace strata::graph {

using namespace mlir;

namespace {

Value operandOf(Value v, StringRef fn) {
  Operation* f = defOf(v, fn);
  return f ? f->getOperand(0) : nullptr;
}

struct RaiseRotaryEmbedding : RewritePattern {
  explicit RaiseRotaryEmbedding(MLIRContext* ctx) : RewritePattern("graph.RotaryEmbedding", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Value x = op->getOperand(0);
    auto D = staticDim(x, 3);
    if (rankOf(x) != 4 || !D || *D % 2) return rw.notifyMatchFailure(op, "x is not [B, H, S, D] with even static D");
    if (intAttrOf(op, "interleaved").value_or(0)) return rw.notifyMatchFailure(op, "interleaved pairs");
    int64_t rd = intAttrOf(op, "rotary_embedding_dim").value_or(0);
    if (rd != 0 && rd != *D) return rw.notifyMatchFailure(op, "partial rotary dim");
    Value e = operandOf(op->getOperand(1), "Cos");
    if (!e || operandOf(op->getOperand(2), "Sin") != e) return rw.notifyMatchFailure(op, "cos/sin not of one angle table");
    bool hasPositions = hasOperand(op, 3);
    Value p;
    std::optional<double> theta;
    if (hasPositions) {
      p = op->getOperand(3);
      if (rankOf(p) != 2) return rw.notifyMatchFailure(op, "position_ids not [B, S]");
      theta = thetaOfPositionTable(op->getParentOfType<GraphOp>(), e, *D);
    } else {
      p = positionsOf(e);
      if (!p || rankOf(p) != 2) return rw.notifyMatchFailure(op, "rope angles not from [B, S] positions");
      theta = thetaOf(e, p, *D);
    }
    if (!theta) return rw.notifyMatchFailure(op, "rope angles are not positions * theta^(-2i/D)");
    Operation* n = createNode(rw, op->getLoc(), "Rope", op->getResultTypes(), {x, p},
                              {rw.getNamedAttr("theta", rw.getF64FloatAttr(*theta))});
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateRaiseRotaryEmbeddingPatterns(RewritePatternSet& patterns) {
  patterns.add<RaiseRotaryEmbedding>(patterns.getContext());
}

}  // namespace strata::graph
