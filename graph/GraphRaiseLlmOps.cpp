// graph-raise-llm-ops: exporter subgraphs, ONNX opset-23 LLM ops and
// onnxruntime's contrib ops -> RMSNorm/Rope/Attention/Silu (patterns in
// Raise*.cpp; no-op Identity / Cast nodes fold away first, FoldNoOps.cpp),
// then dead-node removal.
#include "graph/Passes.h"
#include "graph/Patterns.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHRAISELLMOPS
#include "graph/Passes.h.inc"

namespace {
struct GraphRaiseLlmOps : impl::GraphRaiseLlmOpsBase<GraphRaiseLlmOps> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    populateFoldNoOpPatterns(patterns);
    populateRaiseRMSNormPatterns(patterns);
    populateRaiseRopePatterns(patterns);
    populateRaiseAttentionPatterns(patterns);
    populateRaiseSiluPatterns(patterns);
    populateRaiseFlatGemmPatterns(patterns);
    populateRaiseGeluPatterns(patterns);
    populateRaiseRotaryEmbeddingPatterns(patterns);
    populateRaiseOnnxAttentionPatterns(patterns);
    populateRaiseOrtContribPatterns(patterns);
    populateRaiseGroupQueryAttentionPatterns(patterns);
    populateRaiseMultiHeadAttentionPatterns(patterns);
    // Top-down in graph order: masks and angle tables are evaluated before
    // anything inside them could be rewritten.
    mlir::GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);  // keep unused inputs
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns), config))) signalPassFailure();
  }
};
}  // namespace

}  // namespace strata::graph
