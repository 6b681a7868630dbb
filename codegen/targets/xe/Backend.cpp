#include "codegen/targets/xe/Backend.h"

#include "codegen/LlvmLowering.h"
#include "codegen/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/LLVMIR/XeVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "ops/error.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern "C" {
void LLVMInitializeSPIRVTargetInfo();
void LLVMInitializeSPIRVTarget();
void LLVMInitializeSPIRVTargetMC();
void LLVMInitializeSPIRVAsmPrinter();
}

namespace strata::tile {

using namespace mlir;

namespace {

constexpr const char* kTriple = "spirv64-unknown-unknown";

void initSpirv() {
  static const bool ready = [] {
    LLVMInitializeSPIRVTargetInfo();
    LLVMInitializeSPIRVTarget();
    LLVMInitializeSPIRVTargetMC();
    LLVMInitializeSPIRVAsmPrinter();
    return true;
  }();
  (void)ready;
}

void checkTarget(const std::string& target) {
  if (target != "xe:pvc" && target != "xe:bmg")
    fail("xe backend: no lowering for target '{}' (known: xe:pvc, xe:bmg; xe:dg2's sub-group-8 DPAS form is not "
         "lowered yet)",
         target);
}

// A lane holds a tile's elements as one vector (a [32, 32] B block: 64
// halves), which SPIR-V cannot type (OpenCL vectors have at most 16
// elements) and LLVM 22's SPIR-V backend does not split: it stops at the
// first such phi or unmerge. LLVM's scalarizer (loads and stores too) breaks
// them into elements; instcombine and early-cse then rejoin the parts that
// are used as vectors (the DPAS operands, 8 elements) and drop the rest.
void splitWideVectors(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cam, mam);
  llvm::ModulePassManager mpm;
  if (llvm::Error e = pb.parsePassPipeline(mpm, "function(scalarizer<load-store>,instcombine<no-verify-fixpoint>,early-cse)"))
    fail("xe backend: {}", llvm::toString(std::move(e)));
  mpm.run(m, mam);
}

// Tile IR to optimized LLVM IR for the SPIR-V target; fills `out`'s kernels.
std::unique_ptr<llvm::Module> lowerToLlvm(const std::string& tileIr, const std::string& target, llvm::LLVMContext& llvmCtx,
                                          llvm::TargetMachine& tm, XeModule& out, const std::string& blockIo) {
  MLIRContext ctx;
  DialectRegistry registry;
  registry.insert<TileDialect, func::FuncDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  vector::VectorDialect, memref::MemRefDialect, LLVM::LLVMDialect, xevm::XeVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
  ctx.disableMultithreading();
  std::string diagnostics;
  auto handler = collectDiagnostics(ctx, diagnostics);

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(tileIr, &ctx);
  if (!module) fail("xe backend: cannot parse tile IR:\n{}", diagnostics);
  out.target = target;
  for (auto f : module->getOps<func::FuncOp>()) {
    int64_t warps = 1;
    if (auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps")) warps = a.getInt();
    out.kernels.push_back({f.getName().str(), 16, 16 * warps});
  }

  PassManager pm(&ctx);
  OpPassManager& fpm = pm.nest<func::FuncOp>();
  addTileLayoutPasses(fpm, target);
  ConvertTileToXeVMOptions xo;
  xo.blockIo = blockIo;
  pm.addPass(createConvertTileToXeVM(xo));  // a module pass: it declares the built-ins it calls
  OpPassManager& lowered = pm.nest<func::FuncOp>();
  lowered.addPass(createLoweredCanonicalizerPass());
  lowered.addPass(createCSEPass());
  if (failed(pm.run(*module))) fail("xe backend: lowering failed:\n{}", diagnostics);
  // tanh and erf have no LLVM intrinsic that the SPIR-V backend would emit
  // as OpenCL.std's: MLIR's f32 polynomials (a few ulp), as on the CPU and
  // CUDA. exp, log, pow and sqrt stay LLVM intrinsics, which it emits as
  // OpenCL.std instructions.
  RewritePatternSet approx(&ctx);
  populatePolynomialApproximateTanhPattern(approx);
  populatePolynomialApproximateErfPattern(approx);
  if (failed(applyPatternsGreedily(*module, std::move(approx))))
    fail("xe backend: math approximation did not converge:\n{}", diagnostics);
  PassManager llvmPm(&ctx);
  addLowerToLLVMPasses(llvmPm, ConvertVectorToLLVMPassOptions());
  llvmPm.addPass(createConvertXeVMToLLVMPass());
  llvmPm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(llvmPm.run(*module))) fail("xe backend: lowering to LLVM failed:\n{}", diagnostics);
  OpBuilder b(&ctx);
  for (auto f : module->getOps<LLVM::LLVMFuncOp>()) {
    auto warps = f->getAttrOfType<IntegerAttr>("tile.num_warps");
    if (!warps) continue;
    f->removeAttr("tile.num_warps");
    f->removeAttr("tile.target");
    f.setCConv(LLVM::cconv::CConv::SPIR_KERNEL);
    f.setIntelReqdSubGroupSizeAttr(b.getI32IntegerAttr(16));
    f.setReqdWorkGroupSizeAttr(b.getDenseI32ArrayAttr({int32_t(16 * warps.getInt()), 1, 1}));
  }
  std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(*module, llvmCtx);
  if (!m) fail("xe backend: translation to LLVM IR failed:\n{}", diagnostics);
  m->setDataLayout(tm.createDataLayout());
  m->setTargetTriple(tm.getTargetTriple());
  if (llvm::Error e = makeOptimizingTransformer(2, 0, &tm)(m.get()))
    fail("xe backend: LLVM optimization failed: {}", llvm::toString(std::move(e)));
  splitWideVectors(*m, tm);
  return m;
}

// LLVM 22's SPIR-V backend keeps its module analysis in a static
// (SPIRVModuleAnalysis::MAI) whose table of block label ids, keyed by the
// MachineFunction's address, is never reset between modules: a later module
// whose function is allocated where an earlier one's was takes that
// module's label ids, which collide with its own (invalid SPIR-V, "Id N is
// defined more than once"; Intel's CPU OpenCL runtime crashes reading it).
// Seen here in 7 % of the Xe test modules compiled in one process
// (2026-11-30); llvm/llvm-project#160613, fixed after LLVM 22 by making the
// analysis a member. Each module is therefore emitted in a child process,
// as llc would emit it alone, and this process's table stays empty. Drop
// the child with an LLVM that has the fix. The caller must not run other
// LLVM work on another thread meanwhile (the child gets this thread only).
std::string emitSpirv(llvm::Module& m, llvm::TargetMachine& tm) {
  int fds[2];
  if (pipe(fds) != 0) fail("xe backend: pipe: {}", std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    fail("xe backend: fork: {}", std::strerror(errno));
  }
  if (pid == 0) {  // the child: emit, write, _exit (no static destructors, no flushes of the parent's buffers)
    close(fds[0]);
    llvm::SmallString<0> spirv;
    {
      llvm::raw_svector_ostream os(spirv);
      llvm::legacy::PassManager emit;
      if (tm.addPassesToEmitFile(emit, os, nullptr, llvm::CodeGenFileType::ObjectFile)) _exit(2);
      emit.run(m);
    }
    for (const char *p = spirv.data(), *end = p + spirv.size(); p < end;) {
      const ssize_t w = write(fds[1], p, size_t(end - p));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(3);
      p += w;
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, size_t(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("xe backend: emitting SPIR-V failed ({} {}; LLVM's message, if any, is on stderr)",
         WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return out;
}

std::unique_ptr<llvm::TargetMachine> spirvMachine() {
  initSpirv();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(llvm::Triple(kTriple), err);
  if (!t) fail("xe backend: no SPIR-V target in this LLVM: {}", err);
  return std::unique_ptr<llvm::TargetMachine>(
      t->createTargetMachine(llvm::Triple(kTriple), "", "", llvm::TargetOptions(), std::nullopt));
}

}  // namespace

XeModule compileXe(const std::string& tileIr, const std::string& target, const std::string& blockIo) {
  checkTarget(target);
  auto tm = spirvMachine();
  llvm::LLVMContext llvmCtx;
  XeModule out;
  std::unique_ptr<llvm::Module> m = lowerToLlvm(tileIr, target, llvmCtx, *tm, out, blockIo);
  out.spirv = emitSpirv(*m, *tm);
  return out;
}

}  // namespace strata::tile
