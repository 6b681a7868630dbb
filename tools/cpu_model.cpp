#include "tools/cpu_model.h"

#include <chrono>
#include <cstdio>

#include "codegen/CpuBackend.h"

namespace strata::tools {

CompiledCpuModel compileCpuModel(ops::GraphDef regionGraph, int64_t blockSize, bool verbose) {
  auto t0 = std::chrono::steady_clock::now();
  tile::KernelPlan plan = tile::planCpuKernels(std::move(regionGraph), {"", blockSize});
  if (verbose)
    std::fprintf(stderr, "compiling %zu kernels for %s (KV block size %lld)...\n", plan.kernels.size(),
                 plan.graph.meta["kernels"]["target"].get<std::string>().c_str(), (long long)blockSize);
  std::shared_ptr<tile::CpuKernels> module = tile::CpuKernels::compile(plan.tileIr);
  CompiledCpuModel m;
  m.graph = std::move(plan.graph);
  m.kernels = [module](const std::string& name) { return module->lookup(name); };
  m.kernelCount = plan.kernels.size();
  m.compileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (verbose) std::fprintf(stderr, "compiled in %.1f s\n", m.compileSeconds);
  return m;
}

}  // namespace strata::tools
