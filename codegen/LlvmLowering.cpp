#include "codegen/LlvmLowering.h"

#include "codegen/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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
  // The passes that work op by op run on each kernel (func.func) apart, so
  // a multithreaded context lowers the kernels in parallel; the module
  // passes (memref descriptors, functions, control flow) stay whole.
  OpPassManager& perKernel = pm.nest<func::FuncOp>();
  perKernel.addPass(memref::createExpandStridedMetadataPass());
  perKernel.addPass(createLowerAffinePass());
  perKernel.addPass(createSCFToControlFlowPass());
  perKernel.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  OpPassManager& perKernel2 = pm.nest<func::FuncOp>();
  perKernel2.addPass(createConvertMathToLLVMPass());
  perKernel2.addPass(createArithToLLVMConversionPass());
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
