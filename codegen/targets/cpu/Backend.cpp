#include "codegen/targets/cpu/Backend.h"

#include <fmt/format.h>

#include <thread>

#include "codegen/LlvmLowering.h"
#include "codegen/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Dialect/X86Vector/Transforms.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/Threading.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "ops/error.h"

namespace strata::tile {

using namespace mlir;

std::string hostCpuTarget() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find("avx512f");
  return it != features.end() && it->second ? "cpu-avx512" : "cpu-avx2";
}

// Whether the host multiplies 16-bit pairs with accumulation (vpdpwssd) at
// the target's vector width: AVX-512 VNNI for 512-bit vectors, AVX-VNNI (or
// AVX-512 VNNI with VL) for 256-bit ones. Kernels always run on the host.
static bool hostHasVnni(const std::string& target) {
  llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
  auto has = [&](const char* name) { return f.lookup(name); };
  if (target == "cpu-avx512") return has("avx512vnni");
  return has("avxvnni") || (has("avx512vnni") && has("avx512vl"));
}

// LLVM's x86 backend splits vpdpwssd into vpmaddwd + vpaddd (the machine
// combiner, to shorten the accumulation chain) unless the CPU's tuning says
// the fused form is fast (fast-dpwssd), which no Intel core's tuning in
// LLVM 22 does. In the quantized kernels the split doubles the instructions
// and, with the adds reassociated, keeps every product live at once: the
// one-row GEMV spilled 6 KiB a block. Where the host has VNNI the kernels'
// functions take the host's features plus fast-dpwssd (a function's
// target-features replace the target machine's, so the whole list).
static void keepFusedIntDots(llvm::Module& m, const std::string& target) {
  if (!hostHasVnni(target)) return;
  std::string fs;
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    fs += (fs.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
  fs += ",+fast-dpwssd";
  for (llvm::Function& f : m)
    if (!f.isDeclaration()) f.addFnAttr("target-features", fs);
}

struct CpuKernels::Impl {
  MLIRContext ctx;
  std::unique_ptr<ExecutionEngine> engine;
};

CpuKernels::CpuKernels(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuKernels::~CpuKernels() = default;

namespace {

void initNativeTarget() {
  static const bool ready = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The AVX2 transpose lowering emits its blends as inline assembly.
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)ready;
}

void registerDialects(MLIRContext& ctx) {
  DialectRegistry registry;
  registry.insert<TileDialect, func::FuncDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  vector::VectorDialect, memref::MemRefDialect, LLVM::LLVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // Multithreaded: the function passes (layouts, the lowering to vectors,
  // canonicalization, the op-by-op conversions to LLVM) run on the kernels
  // in parallel. Dialects are loaded up front: none may load while passes
  // run on several threads.
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

// For every kernel, `void strata_<name>(void** args)`: loads parameter i from
// *args[i] and calls the kernel (the ABI of ops/abi.h). Built in the LLVM
// dialect so the JIT and the shared library export the same entry points.
void addPackedEntryPoints(ModuleOp m) {
  MLIRContext* ctx = m.getContext();
  OpBuilder b(ctx);
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto voidTy = LLVM::LLVMVoidType::get(ctx);
  for (LLVM::LLVMFuncOp f : llvm::to_vector(m.getOps<LLVM::LLVMFuncOp>())) {
    if (f.isExternal()) continue;
    Location loc = f.getLoc();
    b.setInsertionPointToEnd(m.getBody());
    auto w = LLVM::LLVMFuncOp::create(b, loc, abi::packedSymbol(f.getName().str()),
                                      LLVM::LLVMFunctionType::get(voidTy, {ptrTy}));
    Block* entry = w.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    SmallVector<Value> args;
    for (auto [i, t] : llvm::enumerate(f.getFunctionType().getParams())) {
      Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, entry->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      Value p = LLVM::LoadOp::create(b, loc, ptrTy, slot);
      args.push_back(LLVM::LoadOp::create(b, loc, t, p));
    }
    LLVM::CallOp::create(b, loc, f, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
}

// Parses the tile IR and lowers it to the LLVM dialect with packed entry
// points; diagnostics go to `diagnostics`.
OwningOpRef<ModuleOp> lowerToLLVM(MLIRContext& ctx, const std::string& tileIr, const std::string& target,
                                  std::string& diagnostics) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(tileIr, &ctx);
  if (!module) fail("cpu backend: cannot parse tile IR:\n{}", diagnostics);

  PassManager pm(&ctx);
  OpPassManager& fpm = pm.nest<func::FuncOp>();
  addTileLayoutPasses(fpm, target.empty() ? hostCpuTarget() : target);
  fpm.addPass(createConvertTileToVector({hostHasVnni(target.empty() ? hostCpuTarget() : target)}));
  fpm.addPass(createLoweredCanonicalizerPass());
  fpm.addPass(createConvertVectorToSCFPass(VectorTransferToSCFOptions().enableFullUnroll()));
  fpm.addPass(vector::createLowerVectorMultiReductionPass());
  if (failed(pm.run(*module))) fail("cpu backend: lowering failed:\n{}", diagnostics);
  // Math functions LLVM has no intrinsic for (tanh, erf), and exp / exp2,
  // which LLVM would scalarize into libm calls (attention's softmax, SiLU:
  // the paged-attention prefill spent half its time in expf / exp2f), become
  // vector polynomials, as MLIR approximates them (f32, a few ulp); exp2(x)
  // is exp(x ln 2) first.
  RewritePatternSet approx(&ctx);
  populatePolynomialApproximateTanhPattern(approx);
  populatePolynomialApproximateErfPattern(approx);
  math::populateExpansionPatterns(approx, {"exp2"});
  populateMathPolynomialApproximationPatterns(approx, [](StringRef name) { return name == "math.exp"; });
  // bf16 widening and narrowing become integer code (x86 without
  // AVX512-BF16 has no instruction for them; legalize-bf16-storage then
  // carries the remaining bf16 moves as i16).
  arith::populateExpandBFloat16Patterns(approx);
  // [8, 8] f32 transposes (transposed block loads are read in such pieces:
  // ConvertTileToVector) as AVX2's unpack / shuffle / permute sequence (its
  // blends are LLVM inline assembly: the dialect must be loaded first).
  ctx.getOrLoadDialect<LLVM::LLVMDialect>();
  x86vector::avx2::populateSpecializedTransposeLoweringPatterns(
      approx, x86vector::avx2::LoweringOptions().setTransposeOptions(
                  x86vector::avx2::TransposeLoweringOptions().lower8x8xf32()));
  // Kernel by kernel, in parallel (the patterns rewrite ops in place).
  FrozenRewritePatternSet frozen(std::move(approx));
  SmallVector<func::FuncOp> kernels(module->getOps<func::FuncOp>());
  if (failed(failableParallelForEach(&ctx, kernels, [&](func::FuncOp f) { return applyPatternsGreedily(f, frozen); })))
    fail("cpu backend: math approximation did not converge:\n{}", diagnostics);

  PassManager llvmPm(&ctx);
  ConvertVectorToLLVMPassOptions v2l;
  v2l.vectorContractLowering = vector::VectorContractLowering::OuterProduct;
  // Transposed block loads (K^T, [N, K] weights) end in a
  // vector.transpose: one shuffle of the flattened vector, which LLVM
  // lowers to permutes.
  v2l.vectorTransposeLowering = vector::VectorTransposeLowering::Shuffle1D;
  addLowerToLLVMPasses(llvmPm, v2l);
  llvmPm.addPass(createLegalizeBf16Storage());
  if (failed(llvmPm.run(*module))) fail("cpu backend: lowering failed:\n{}", diagnostics);
  addPackedEntryPoints(*module);
  return module;
}

// One module part (bitcode) optimized (O3) and compiled into the object
// file `object`, in a context and target machine of its own (so parts
// compile on separate threads); the error, or empty.
std::string compileObject(llvm::orc::JITTargetMachineBuilder builder, llvm::ArrayRef<char> bitcode,
                          const std::string& object) {
  auto tm = builder.createTargetMachine();
  if (!tm) return "no target machine for the host: " + llvm::toString(tm.takeError());
  llvm::LLVMContext ctx;
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "part"), ctx);
  if (!m) return "bitcode: " + llvm::toString(m.takeError());
  if (llvm::Error e = makeOptimizingTransformer(3, 0, tm->get())(m->get()))
    return "LLVM optimization failed: " + llvm::toString(std::move(e));
  std::error_code ec;
  llvm::raw_fd_ostream os(object, ec, llvm::sys::fs::OF_None);
  if (ec) return fmt::format("cannot write {}: {}", object, ec.message());
  llvm::legacy::PassManager emit;
  if ((*tm)->addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return "the host target cannot emit object files";
  emit.run(**m);
  return "";
}

std::string findLinker() {
  for (const char* p : {"/usr/lib/llvm-22/bin/ld.lld", "/usr/bin/ld.lld-22", "/usr/bin/ld.lld"})
    if (llvm::sys::fs::can_execute(p)) return p;
  if (auto p = llvm::sys::findProgramByName("ld.lld")) return *p;
  fail("cpu backend: no ld.lld found (install lld-22) to link the kernels into a shared library");
}

}  // namespace

std::unique_ptr<CpuKernels> CpuKernels::compile(const std::string& tileIr, const std::string& target) {
  initNativeTarget();
  auto impl = std::make_unique<Impl>();
  registerDialects(impl->ctx);
  std::string diagnostics;
  auto handler = collectDiagnostics(impl->ctx, diagnostics);
  OwningOpRef<ModuleOp> module = lowerToLLVM(impl->ctx, tileIr, target, diagnostics);

  // The options hold a function_ref: the transformer must outlive create().
  std::function<llvm::Error(llvm::Module*)> optimize = makeOptimizingTransformer(3, 0, nullptr);
  const std::string host = target.empty() ? hostCpuTarget() : target;
  std::function<llvm::Error(llvm::Module*)> transform = [&](llvm::Module* m) {
    keepFusedIntDots(*m, host);
    return optimize(m);
  };
  ExecutionEngineOptions opts;
  opts.transformer = transform;
  opts.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(*module, opts);
  if (!engine) fail("cpu backend: JIT compilation failed: {}", llvm::toString(engine.takeError()));
  impl->engine = std::move(*engine);
  return std::unique_ptr<CpuKernels>(new CpuKernels(std::move(impl)));
}

void CpuKernels::writeSharedLibrary(const std::string& tileIr, const std::string& path, const std::string& target) {
  if (!target.empty() && target != hostCpuTarget())
    fail("cpu backend: shared libraries are built for the host CPU ({}), not {}", hostCpuTarget(), target);
  initNativeTarget();
  MLIRContext ctx;
  registerDialects(ctx);
  std::string diagnostics;
  auto handler = collectDiagnostics(ctx, diagnostics);
  OwningOpRef<ModuleOp> module = lowerToLLVM(ctx, tileIr, target, diagnostics);

  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) fail("cpu backend: cannot describe the host CPU: {}", llvm::toString(builder.takeError()));
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = builder->createTargetMachine();
  if (!tm) fail("cpu backend: no target machine for the host: {}", llvm::toString(tm.takeError()));

  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(*module, llvmCtx);
  if (!llvmModule) fail("cpu backend: translation to LLVM IR failed:\n{}", diagnostics);
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  keepFusedIntDots(*llvmModule, target.empty() ? hostCpuTarget() : target);

  // LLVM's optimizer and code generator take one module at a time, and a
  // model's kernels are independent functions: the module is split into
  // one part per hardware thread (a kernel and its packed entry point stay
  // together), each optimized and compiled in its own context and thread,
  // and the objects linked into the one library. Measured 2026-11-30 on
  // the 2-core Xeon, a 124.7M Q4_K_M model's 24 kernels: see docs/codegen.md.
  std::vector<llvm::SmallVector<char, 0>> parts;
  const unsigned threads = std::max(1u, std::min<unsigned>(llvm::hardware_concurrency().compute_thread_count(),
                                                           std::distance(llvmModule->begin(), llvmModule->end())));
  llvm::SplitModule(*llvmModule, threads, [&](std::unique_ptr<llvm::Module> part) {
    llvm::raw_svector_ostream os(parts.emplace_back());
    llvm::WriteBitcodeToFile(*part, os);
  });
  std::vector<std::string> objects(parts.size()), errors(parts.size());
  {
    std::vector<std::thread> workers;
    for (size_t i = 0; i < parts.size(); ++i) {
      objects[i] = fmt::format("{}.{}.o", path, i);
      workers.emplace_back([&, i] { errors[i] = compileObject(*builder, parts[i], objects[i]); });
    }
    for (auto& w : workers) w.join();
  }
  auto removeObjects = [&] {
    for (const std::string& o : objects) llvm::sys::fs::remove(o);  // only the library is kept
  };
  for (const std::string& e : errors)
    if (!e.empty()) {
      removeObjects();
      fail("cpu backend: {}", e);
    }
  std::string linker = findLinker(), log = path + ".link.log";
  llvm::SmallVector<llvm::StringRef> argv = {linker, "-shared", "--no-undefined-version", "-o", path};
  for (const std::string& o : objects) argv.push_back(o);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(linker, argv, std::nullopt, redirects, 0, 0, &err);
  removeObjects();
  if (rc != 0) {
    auto out = llvm::MemoryBuffer::getFile(log);
    fail("cpu backend: linking {} failed ({}): {}", path, err.empty() ? "exit " + std::to_string(rc) : err,
         out ? (*out)->getBuffer().str() : std::string());
  }
  llvm::sys::fs::remove(log);
}

abi::PackedKernel CpuKernels::lookup(const std::string& name) const {
  auto fn = impl_->engine->lookup(abi::packedSymbol(name));
  // The JIT compiles on first lookup: the error is either a missing kernel
  // or a symbol the kernels need and the process lacks (say which).
  if (!fn) fail("cpu backend: cannot look up kernel '{}': {}", name, llvm::toString(fn.takeError()));
  return reinterpret_cast<abi::PackedKernel>(*fn);
}

}  // namespace strata::tile
