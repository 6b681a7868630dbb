#include "codegen/CpuBackend.h"

#include "codegen/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "ops/error.h"

namespace strata::tile {

using namespace mlir;

std::string hostCpuTarget() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find("avx512f");
  return it != features.end() && it->second ? "cpu-avx512" : "cpu-avx2";
}

struct CpuKernels::Impl {
  MLIRContext ctx;
  std::unique_ptr<ExecutionEngine> engine;
};

CpuKernels::CpuKernels(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuKernels::~CpuKernels() = default;

std::unique_ptr<CpuKernels> CpuKernels::compile(const std::string& tileIr, const std::string& target) {
  static const bool nativeReady = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)nativeReady;
  auto impl = std::make_unique<Impl>();
  MLIRContext& ctx = impl->ctx;
  DialectRegistry registry;
  registry.insert<TileDialect, func::FuncDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  vector::VectorDialect, memref::MemRefDialect, LLVM::LLVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.disableMultithreading();

  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(tileIr, &ctx);
  if (!module) fail("cpu backend: cannot parse tile IR:\n{}", diagnostics);

  PassManager pm(&ctx);
  OpPassManager& fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createAssignLayouts());
  fpm.addPass(createDistributeToWarps());
  MatchTargetSizeOptions mts;
  mts.target = target.empty() ? hostCpuTarget() : target;
  fpm.addPass(createMatchTargetSize(mts));
  fpm.addPass(createConvertTileToVector());
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createConvertVectorToSCFPass(VectorTransferToSCFOptions().enableFullUnroll()));
  fpm.addPass(vector::createLowerVectorMultiReductionPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  ConvertVectorToLLVMPassOptions v2l;
  v2l.vectorContractLowering = vector::VectorContractLowering::OuterProduct;
  pm.addPass(createConvertVectorToLLVMPass(v2l));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());  // poison from vector unrolling
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(*module))) fail("cpu backend: lowering failed:\n{}", diagnostics);

  // The options hold a function_ref: the transformer must outlive create().
  std::function<llvm::Error(llvm::Module*)> optimize = makeOptimizingTransformer(3, 0, nullptr);
  ExecutionEngineOptions opts;
  opts.transformer = optimize;
  opts.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(*module, opts);
  if (!engine) fail("cpu backend: JIT compilation failed: {}", llvm::toString(engine.takeError()));
  impl->engine = std::move(*engine);
  return std::unique_ptr<CpuKernels>(new CpuKernels(std::move(impl)));
}

abi::PackedKernel CpuKernels::lookup(const std::string& name) const {
  auto fn = impl_->engine->lookupPacked(name);
  if (!fn) {
    llvm::consumeError(fn.takeError());
    fail("cpu backend: no kernel named '{}'", name);
  }
  return *fn;
}

}  // namespace strata::tile
