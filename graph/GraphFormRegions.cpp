// graph-form-regions: one-op regions and GEMM regions, then the GEMM fusions
// in a fixed order (each phase its own greedy run): SwiGLU must see the
// single-weight gate and up GEMMs before sibling fusion could merge them
// with something else, and epilogues attach before siblings are grouped.
// Leftover elementwise chains become region.elementwise last. No-op nodes
// (FoldNoOps.cpp) fold first: the paged form's batch of 1 makes some
// reshapes identities.
#include "graph/Passes.h"
#include "graph/Patterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHFORMREGIONS
#include "graph/Passes.h.inc"

namespace {
struct GraphFormRegions : impl::GraphFormRegionsBase<GraphFormRegions> {
  void runOnOperation() override {
    using Populate = void (*)(mlir::RewritePatternSet&);
    const std::vector<std::vector<Populate>> phases = {
        {populateFoldNoOpPatterns, populateFormEmbeddingPatterns, populateFormRMSNormPatterns,
         populateFormGemmPatterns},
        {populateFuseGemmSwiGLUPatterns},
        {populateFuseGemmEpiloguePatterns},
        {populateFuseSiblingGemmPatterns},
        {populateFormElementwisePatterns}};
    mlir::GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);  // keep unused inputs
    for (const auto& phase : phases) {
      mlir::RewritePatternSet patterns(&getContext());
      for (Populate p : phase) p(patterns);
      if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns), config))) return signalPassFailure();
    }
  }
};
}  // namespace

}  // namespace strata::graph
