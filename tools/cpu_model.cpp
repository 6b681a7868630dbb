#include "tools/cpu_model.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "codegen/CpuBackend.h"
#include "runtime/kernel_library.h"

namespace strata::tools {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// "" when caching is off.
fs::path cacheDir() {
  const char* env = std::getenv("STRATA_KERNEL_CACHE");
  if (env && std::string(env) == "off") return {};
  if (env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "strata" / "kernels";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "strata" / "kernels";
  return {};
}

// Identifies the compiler that produced a library: this binary's size and
// modification time.
std::string compilerStamp() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  auto size = fs::file_size(exe, ec);
  auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
  return fmt::format("{}:{}:{}", exe.string(), size, time);
}

// Loads the cached library for `ir`, building it first when absent; nullopt
// when the cache cannot be used (then the caller JIT-compiles).
std::optional<abi::KernelLookup> cachedKernels(const std::string& ir, const std::string& target, bool& hit,
                                               const std::function<void()>& onCompile) {
  fs::path dir = cacheDir();
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
