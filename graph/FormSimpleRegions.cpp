// One-op regions: Gather from a weight table -> region.embedding;
// RMSNorm -> region.rmsnorm; LayerNormalization over the last axis with a
// weight and a bias (GPT-2's) -> region.layernorm.
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

struct FormLayerNorm : RewritePattern {
  explicit FormLayerNorm(MLIRContext* ctx) : RewritePattern("graph.LayerNormalization", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto rank = rankOf(op->getOperand(0));
    const int64_t axis = intAttrOf(op, "axis").value_or(-1);
    if (!rank || (axis != -1 && axis != *rank - 1)) return rw.notifyMatchFailure(op, "not over the last axis");
    if (op->getNumOperands() != 3 || !isWeight(op->getOperand(1), 1) || !isWeight(op->getOperand(2), 1) ||
        op->getNumResults() != 1)
      return rw.notifyMatchFailure(op, "not a weight and a bias");
    auto width = staticDim(op->getOperand(0), -1);
    if (!width || staticDim(op->getOperand(1), 0) != width || staticDim(op->getOperand(2), 0) != width)
      return rw.notifyMatchFailure(op, "weight and bias do not span the row");
    SmallVector<NamedAttribute> attrs;
    if (auto eps = op->getAttr("epsilon")) attrs.push_back(rw.getNamedAttr("epsilon", eps));
    Operation* n = createNode(rw, op->getLoc(), "region.layernorm", op->getResultTypes(), op->getOperands(), attrs);
    rw.replaceOp(op, n->getResults());
    return success();
  }
};

}  // namespace

void populateFormEmbeddingPatterns(RewritePatternSet& patterns) { patterns.add<FormEmbedding>(patterns.getContext()); }
void populateFormRMSNormPatterns(RewritePatternSet& patterns) {
  patterns.add<FormRMSNorm, FormLayerNorm>(patterns.getContext());
}

}  // namespace strata::graph
