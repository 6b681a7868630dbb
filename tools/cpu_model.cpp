#include "tools/cpu_model.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "codegen/targets/cpu/Backend.h"
#include "runtime/devices/cpu/kernel_library.h"
#include "tools/kernel_cache.h"

namespace strata::tools {

namespace fs = std::filesystem;

namespace {

// Loads the cached library for `ir`, building it first when absent; nullopt
// when the cache cannot be used (then the caller JIT-compiles).
std::optional<abi::KernelLookup> cachedKernels(const std::string& ir, const std::string& target, bool& hit,
                                               const std::function<void()>& onCompile) {
  fs::path dir = kernelCacheDir();
  if (dir.empty()) return std::nullopt;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::nullopt;
  fs::path lib = dir / fmt::format("{:016x}.so", fnv1a(compilerStamp(), fnv1a(target, fnv1a(ir))));
  hit = fs::exists(lib, ec);
  if (!hit) {
    onCompile();
    fs::path tmp = lib;
    tmp += fmt::format(".{}.tmp", ::getpid());
    tile::CpuKernels::writeSharedLibrary(ir, tmp.string(), target);
    fs::rename(tmp, lib, ec);  // atomic: concurrent runs never see half a library
    if (ec) return std::nullopt;
  }
  return runtime::loadKernelLibrary(lib.string());
}

}  // namespace

CompiledCpuModel compileCpuModel(ops::GraphDef regionGraph, int64_t blockSize, bool verbose) {
  auto t0 = std::chrono::steady_clock::now();
  tile::KernelPlan plan = tile::planCpuKernels(std::move(regionGraph), {"", blockSize});
  std::string target = plan.graph.meta["kernels"]["target"].get<std::string>();
  CompiledCpuModel m;
  m.kernelCount = plan.kernels.size();
  auto progress = [&] {
    if (verbose)
      std::fprintf(stderr, "compiling %zu kernels for %s (KV block size %lld)...\n", m.kernelCount, target.c_str(),
                   (long long)blockSize);
  };
  if (auto cached = cachedKernels(plan.tileIr, target, m.fromCache, progress)) {
    m.kernels = std::move(*cached);
  } else {
    progress();
    std::shared_ptr<tile::CpuKernels> module = tile::CpuKernels::compile(plan.tileIr, target);
    m.kernels = [module](const std::string& name) { return module->lookup(name); };
  }
  m.graph = std::move(plan.graph);
  m.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (verbose && !m.fromCache) std::fprintf(stderr, "kernels ready in %.1f s\n", m.compileSeconds);
  return m;
}

}  // namespace strata::tools
