// graph-dce: erase nodes, weights and constants nothing reads. Every graph op
// is Pure, so an op without uses is dead; walking backwards frees whole
// chains (a Shape -> Gather -> Concat chain dies once its consumer is folded).
#include "graph/Passes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHDCE
#include "graph/Passes.h.inc"

namespace {
struct GraphDCE : impl::GraphDCEBase<GraphDCE> {
  void runOnOperation() override {
    mlir::Block& body = getOperation().getBody().front();
    for (mlir::Operation* op = body.getTerminator()->getPrevNode(); op;) {
      mlir::Operation* prev = op->getPrevNode();
      if (mlir::isOpTriviallyDead(op)) op->erase();
      op = prev;
    }
  }
};
}  // namespace

}  // namespace strata::graph
