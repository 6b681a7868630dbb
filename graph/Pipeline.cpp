#include "graph/Pipeline.h"

#include <functional>
#include <vector>

#include "graph/Passes.h"
#include "graph/Translate.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

namespace strata::graph {

namespace {

// One normalization round: folding makes Slice/Reshape operands constant,
// which lets inference refine more types, which lets the next fold see more.
void addShapeRound(mlir::OpPassManager& gpm) {
  gpm.addPass(createGraphInferShapes());
  gpm.addPass(createGraphFoldShapeArith());
  gpm.addPass(createGraphDCE());
}

// After the graph stops changing under the repeated rounds.
void addRegionFormation(mlir::OpPassManager& gpm) {
  gpm.addPass(createGraphInferShapes());
  gpm.addPass(createGraphFormPagedAttention());
  gpm.addPass(createGraphInferShapes());  // the paged form's [1, T] batch, before regions take their types
  gpm.addPass(createGraphFormRegions());
  gpm.addPass(createGraphInferShapes());
  gpm.addPass(createGraphDCE());
}

// Rounds before the graph stops changing are bounded by the exporter's
// shape chains, which grow with the layers (each TorchScript layer's shapes
// wait on the previous layer's folds and, where a raised op types what the
// export left unknown, on its raise); the bound only stops a pass pair that
// never settles.
constexpr int kMaxRounds = 256;

// A group of passes, run once or (`repeat`) until the graph stops changing.
struct Stage {
  std::function<void(mlir::OpPassManager&)> build;
  bool repeat = false;
};

// Imports `g`, runs the stages in order, exports.
ops::GraphDef runPasses(const ops::GraphDef& g, const char* what, const std::vector<Stage>& stages) {
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
  for (const Stage& stage : stages) {
    mlir::PassManager pm(&ctx);
    stage.build(pm.nest<GraphOp>());
    for (int i = 0; i < (stage.repeat ? kMaxRounds : 1); ++i) {
      mlir::OperationFingerPrint before(*module);
      if (mlir::failed(pm.run(*module))) fail("{}: {} failed:{}", g.source, what, diags);
      if (mlir::OperationFingerPrint(*module) == before) break;
    }
  }
  return exportGraph(findGraph(*module));
}

void addInferShapes(mlir::OpPassManager& gpm) { gpm.addPass(createGraphInferShapes()); }

}  // namespace

ops::GraphDef normalize(const ops::GraphDef& g) {
  return runPasses(g, "graph normalization", {{addShapeRound, true}, {addInferShapes}});
}

// Raising then joins the rounds: the raised ops type what the export left
// unknown (Attention's [B, H, S, D]), shapes computed from them then fold,
// and a later raise sees through them (TorchScript's GPT-2: the head merge
// into a flat Gemm).
ops::GraphDef formRegions(const ops::GraphDef& g, const RegionOptions& o) {
  auto raiseRound = [](mlir::OpPassManager& gpm) {
    gpm.addPass(createGraphInferShapes());
    gpm.addPass(createGraphRaiseLlmOps());
    addShapeRound(gpm);
  };
  std::vector<Stage> stages{{addShapeRound, true}, {raiseRound, true}, {addRegionFormation}};
  if (o.normPrologue) stages.push_back({[](mlir::OpPassManager& gpm) { gpm.addPass(createGraphFuseGemmNorm()); }});
  if (o.ropeKvWrite) stages.push_back({[](mlir::OpPassManager& gpm) { gpm.addPass(createGraphFuseRopeKvWrite()); }});
  return runPasses(g, "region formation", stages);
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
