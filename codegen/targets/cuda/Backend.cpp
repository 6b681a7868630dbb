#include "codegen/targets/cuda/Backend.h"

#include "codegen/LlvmLowering.h"
#include "codegen/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Target/TargetMachine.h"
#include "ops/error.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace strata::tile {

using namespace mlir;

namespace {

// Hopper's tensor-core instructions (wgmma, setmaxnreg) need the `a`
// variant; PTX 8.0 is the first ISA with sm_90a (the default ISA aborts).
struct NvptxTarget {
  const char* chip;
  const char* features;
};

NvptxTarget nvptxTargetFor(const std::string& target) {
  if (target == "sm_90") return {"sm_90a", "+ptx80"};
  fail("cuda backend: unknown target '{}' (known: sm_90)", target);
}

void initNvptx() {
  static const bool ready = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)ready;
}

}  // namespace

namespace {

// One unit of tile IR to PTX in its own MLIR and LLVM contexts (so units
// compile on separate threads).
CudaModule compileUnit(const std::string& tileIr, const std::string& target) {
  NvptxTarget nv = nvptxTargetFor(target);
  MLIRContext ctx;
  DialectRegistry registry;
  registry.insert<TileDialect, func::FuncDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  vector::VectorDialect, memref::MemRefDialect, LLVM::LLVMDialect, NVVM::NVVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.disableMultithreading();
  std::string diagnostics;
  auto handler = collectDiagnostics(ctx, diagnostics);

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(tileIr, &ctx);
  if (!module) fail("cuda backend: cannot parse tile IR:\n{}", diagnostics);
  CudaModule out;
  out.target = target;
  out.chip = nv.chip;
  for (auto f : module->getOps<func::FuncOp>()) {
    int64_t warps = 1;
    if (auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps")) warps = a.getInt();
    out.kernels.push_back({f.getName().str(), 32 * warps});
  }

  PassManager pm(&ctx);
  OpPassManager& fpm = pm.nest<func::FuncOp>();
  addTileLayoutPasses(fpm, target);
  pm.addPass(createConvertTileToNVVM());  // a module pass: it adds the kernels' shared-memory scratch
  OpPassManager& lowered = pm.nest<func::FuncOp>();
  lowered.addPass(createLoweredCanonicalizerPass());
  lowered.addPass(createCSEPass());
  if (failed(pm.run(*module))) fail("cuda backend: lowering failed:\n{}", diagnostics);
  // NVPTX has ex2, sqrt and abs but no instruction (and no library) for
  // tanh, erf, log or pow: powf becomes exp(y log|x|) with the sign and
  // special cases MLIR's expansion handles, and those functions become
  // MLIR's f32 polynomials (a few ulp), as on the CPU.
  RewritePatternSet approx(&ctx);
  math::populateExpansionPatterns(approx, {"powf"});
  populateMathPolynomialApproximationPatterns(approx, [](StringRef name) {
    name.consume_front("math.");
    return name == "tanh" || name == "erf" || name == "log" || name == "log2" || name == "log1p" || name == "exp";
  });
  if (failed(applyPatternsGreedily(*module, std::move(approx))))
    fail("cuda backend: math approximation did not converge:\n{}", diagnostics);
  PassManager llvmPm(&ctx);
  addLowerToLLVMPasses(llvmPm, ConvertVectorToLLVMPassOptions());
  // NVVM ops with no LLVM intrinsic (wgmma.mma_async) become inline PTX.
  llvmPm.addPass(createConvertNVVMToLLVMPass());
  if (failed(llvmPm.run(*module))) fail("cuda backend: lowering failed:\n{}", diagnostics);
  for (auto f : module->getOps<LLVM::LLVMFuncOp>()) {
    auto warps = f->getAttrOfType<IntegerAttr>("tile.num_warps");
    if (!warps) continue;
    f->removeAttr("tile.num_warps");
    if (auto shared = f->getAttrOfType<IntegerAttr>("tile.shared_bytes")) {
      for (CudaKernelInfo& k : out.kernels)
        if (k.name == f.getName()) k.sharedBytes = shared.getInt();
      f->removeAttr("tile.shared_bytes");
    }
    OpBuilder b(&ctx);
    // Programmatic dependent launch: the kernel may be scheduled while the
    // previous one in its stream runs, so it first waits for that grid
    // (and its memory); a kernel launched the ordinary way passes the wait
    // at once. It lets the next kernel be scheduled only as it returns:
    // signalled at entry, the next kernel's blocks sat on SMs waiting and
    // took them from this one's later blocks (H100, 2026-11-22: batch-32
    // decode 9.4 -> 11.3 ms). (runtime/device.h allowEarlyLaunch;
    // kernels.json "griddepcontrol_wait".)
    b.setInsertionPointToStart(&f.getBody().front());
    NVVM::GriddepcontrolOp::create(b, f.getLoc(), NVVM::GridDepActionKind::wait);
    f.walk([&](LLVM::ReturnOp r) {
      b.setInsertionPoint(r);
      NVVM::GriddepcontrolOp::create(b, r.getLoc(), NVVM::GridDepActionKind::launch_dependents);
    });
    f->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
    f->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(), b.getDenseI32ArrayAttr({int32_t(32 * warps.getInt()), 1, 1}));
    // Blocks per SM the kernel asks room for: ptxas caps its registers at
    // what that many blocks leave each thread.
    if (auto blocks = f->getAttrOfType<IntegerAttr>("tile.min_blocks_per_sm")) {
      f->removeAttr("tile.min_blocks_per_sm");
      f->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b.getI32IntegerAttr(int32_t(blocks.getInt())));
    }
  }

  // 32-bit pointers for .shared (every shared address fits): staged
  // operands' ldmatrix / cp.async addresses take one register instead of
  // two. NVPTX reads the option when it builds the target machine's data
  // layout; it is process-wide and has no other API.
  static std::once_flag shortPointers;
  std::call_once(shortPointers, [] {
    auto& opts = llvm::cl::getRegisteredOptions();
    if (auto it = opts.find("nvptx-short-ptr"); it != opts.end()) it->second->addOccurrence(0, "nvptx-short-ptr", "true");
  });
  std::string err;
  const std::string triple = "nvptx64-nvidia-cuda";
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), err);
  if (!t) fail("cuda backend: no NVPTX target in this LLVM: {}", err);
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(llvm::Triple(triple), nv.chip, nv.features, llvm::TargetOptions(), std::nullopt));
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(*module, llvmCtx);
  if (!llvmModule) fail("cuda backend: translation to LLVM IR failed:\n{}", diagnostics);
  // f32 denormals flush to zero (NVPTX then selects the .ftz forms): an
  // ex2.approx.f32 that keeps denormal results costs a compare and two
  // predicated multiplies around the MUFU op, which in the attention loops
  // is 3 more instructions per score; flushed, exp2 is the one op. Inputs
  // and outputs are 16-bit (and f32 logits); values under 2^-126 change no
  // result in them.
  for (llvm::Function& fn : *llvmModule)
    if (!fn.isDeclaration()) fn.addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());
  if (llvm::Error e = makeOptimizingTransformer(3, 0, tm.get())(llvmModule.get()))
    fail("cuda backend: LLVM optimization failed: {}", llvm::toString(std::move(e)));
  llvm::SmallString<0> ptx;
  {
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager emit;
    if (tm->addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      fail("cuda backend: the NVPTX target cannot emit PTX");
    emit.run(*llvmModule);
  }
  out.ptx = ptx.str().str();
  return out;
}

// The PTX module header NVPTX writes (comments, .version, .target,
// .address_size): everything up to the end of the .address_size line.
size_t ptxHeaderEnd(const std::string& ptx) {
  size_t at = ptx.find("\n.address_size ");
  if (at == std::string::npos) fail("cuda backend: PTX without an .address_size line");
  size_t end = ptx.find('\n', at + 1);
  return end == std::string::npos ? ptx.size() : end + 1;
}

}  // namespace

CudaModule compileCuda(const std::string& tileIr, const std::string& target) {
  return compileCuda(std::vector<std::string>{tileIr}, target, 1);
}

CudaModule compileCuda(const std::vector<std::string>& units, const std::string& target, int threads,
                       const std::function<void(size_t, size_t)>& progress,
                       const std::function<void(size_t, const CudaModule&)>& unitDone,
                       const std::vector<size_t>& startOrder) {
  initNvptx();
  nvptxTargetFor(target);  // an unknown target fails here, once
  if (units.empty()) fail("cuda backend: no kernels to compile");
  std::vector<size_t> order(units.size());
  std::iota(order.begin(), order.end(), 0);
  if (!startOrder.empty()) {
    if (!std::is_permutation(startOrder.begin(), startOrder.end(), order.begin(), order.end()))
      fail("cuda backend: the start order is not a permutation of the {} units", units.size());
    order = startOrder;
  }
  std::vector<CudaModule> done(units.size());
  std::vector<std::exception_ptr> errors(units.size());
  std::atomic<size_t> next{0};
  size_t finished = 0;
  std::mutex progressMutex;
  auto work = [&] {
    for (size_t n; (n = next.fetch_add(1)) < units.size();) {
      const size_t i = order[n];
      try {
        done[i] = compileUnit(units[i], target);
        for (CudaKernelInfo& k : done[i].kernels) k.unit = i;
        if (unitDone) unitDone(i, done[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(progressMutex);
      ++finished;
      if (progress) progress(finished, units.size());
    }
  };
  if (threads <= 0) threads = (int)std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && (size_t)t < units.size(); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);  // the first failing unit's error, whatever the thread count

  // One module: the first unit's header, then every unit's declarations and
  // entries in unit order (NVPTX writes no module-level symbol two units
  // could share: each kernel's shared memory is its own .extern).
  CudaModule out;
  out.target = target;
  out.chip = done[0].chip;
  const size_t headerEnd = ptxHeaderEnd(done[0].ptx);
  const std::string header = done[0].ptx.substr(0, headerEnd);
  out.ptx = header;
  for (CudaModule& m : done) {
    const size_t end = ptxHeaderEnd(m.ptx);
    if (m.ptx.compare(0, end, header) != 0) fail("cuda backend: units compiled to PTX headers that differ");
    out.ptx.append(m.ptx, end, std::string::npos);
    for (CudaKernelInfo& k : m.kernels) out.kernels.push_back(std::move(k));
  }
  return out;
}

}  // namespace strata::tile
