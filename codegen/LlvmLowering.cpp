#include "codegen/LlvmLowering.h"

#include "codegen/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

namespace strata::tile {

using namespace mlir;

void addTileLayoutPasses(OpPassManager& funcPm, const std::string& target) {
  funcPm.addPass(createAssignLayouts());
  funcPm.addPass(createDistributeToWarps());
  MatchTargetSizeOptions mts;
  mts.target = target;
  funcPm.addPass(createMatchTargetSize(mts));
}

std::unique_ptr<Pass> createLoweredCanonicalizerPass() {
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(false);
  return createCanonicalizerPass(config);
}

void addLowerToLLVMPasses(OpPassManager& pm, const ConvertVectorToLLVMPassOptions& vectorOptions) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());  // poison from vector unrolling
  pm.addPass(createReconcileUnrealizedCastsPass());
}

std::unique_ptr<ScopedDiagnosticHandler> collectDiagnostics(MLIRContext& ctx, std::string& out) {
  return std::make_unique<ScopedDiagnosticHandler>(&ctx, [&out](Diagnostic& d) {
    llvm::raw_string_ostream os(out);
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
}

}  // namespace strata::tile
