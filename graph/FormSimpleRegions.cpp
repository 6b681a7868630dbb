// One-op regions: Gather from a weight table -> region.embedding;
// RMSNorm -> region.rmsnorm.
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

struct FormEmbedding : RewritePattern {
  explicit FormEmbedding(MLIRContext* ctx) : RewritePattern("graph.Gather", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    if (intAttrOf(op, "axis").value_or(0) != 0 || !isWeight(op->getOperand(0), 2))
      return rw.notifyMatchFailure(op, "not a row gather from a weight table");
    auto ids = dyn_cast<ShapedType>(op->getOperand(1).getType());
    if (!ids || !isa<IntegerType>(ids.getElementType())) return rw.notifyMatchFailure(op, "ids are not integers");
    Operation* n = createNode(rw, op->getLoc(), "region.embedding", op->getResultTypes(), op->getOperands());
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

struct FormRMSNorm : RewritePattern {
  explicit FormRMSNorm(MLIRContext* ctx) : RewritePattern("graph.RMSNorm", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    Operation* n = createNode(rw, op->getLoc(), "region.rmsnorm", op->getResultTypes(), op->getOperands(),
                              llvm::to_vector(op->getAttrs()));
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateFormEmbeddingPatterns(RewritePatternSet& patterns) { patterns.add<FormEmbedding>(patterns.getContext()); }
void populateFormRMSNormPatterns(RewritePatternSet& patterns) { patterns.add<FormRMSNorm>(patterns.getContext()); }

}  // namespace strata::graph
