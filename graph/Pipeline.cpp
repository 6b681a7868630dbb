#include "graph/Pipeline.h"

#include "graph/Passes.h"
#include "graph/Translate.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

namespace strata::graph {

namespace {

void addNormalization(mlir::OpPassManager& gpm) {
  // Rounds: folding makes Slice/Reshape operands constant, which lets
  // inference refine more types, which lets the next fold see more. Three:
  // a TorchScript export of a tied Qwen2 types its second layer's
  // attention only in the third (each layer's shapes there wait on the
  // previous layer's folds).
  for (int round = 0; round < 3; ++round) {
    gpm.addPass(createGraphInferShapes());
    gpm.addPass(createGraphFoldShapeArith());
    gpm.addPass(createGraphDCE());
  }
  gpm.addPass(createGraphInferShapes());
}

void addRegionFormation(mlir::OpPassManager& gpm) {
  gpm.addPass(createGraphRaiseLlmOps());
  gpm.addPass(createGraphInferShapes());
  gpm.addPass(createGraphFormPagedAttention());
  gpm.addPass(createGraphFormRegions());
  gpm.addPass(createGraphInferShapes());
  gpm.addPass(createGraphDCE());
}

// Imports `g`, runs the passes `build` adds on the graph op, exports.
template <typename Build>
ops::GraphDef runPasses(const ops::GraphDef& g, const char* what, Build build) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.getOrLoadDialect<GraphDialect>();
  std::string diags;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diags);
    os << "\n  " << d.getLocation() << ": " << d;
    return mlir::success();
  });
  auto module = importGraph(ctx, g);
  if (mlir::failed(mlir::verify(*module))) fail("{}: the imported graph does not verify:{}", g.source, diags);
  mlir::PassManager pm(&ctx);
  build(pm.nest<GraphOp>());
  if (mlir::failed(pm.run(*module))) fail("{}: {} failed:{}", g.source, what, diags);
  return exportGraph(findGraph(*module));
}

}  // namespace

ops::GraphDef normalize(const ops::GraphDef& g) {
  return runPasses(g, "graph normalization", [](mlir::OpPassManager& gpm) { addNormalization(gpm); });
}

ops::GraphDef formRegions(const ops::GraphDef& g) {
  return runPasses(g, "region formation", [](mlir::OpPassManager& gpm) {
    addNormalization(gpm);
    addRegionFormation(gpm);
  });
}

std::string printMlir(const ops::GraphDef& g) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.getOrLoadDialect<GraphDialect>();
  auto module = importGraph(ctx, g);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

}  // namespace strata::graph
