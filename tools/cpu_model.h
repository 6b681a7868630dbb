// Compiles a region graph's kernels for the host CPU in process (the JIT) and
// returns the planned graph with a lookup into the compiled module: what
// `strata run --backend cpu` and the benchmarks execute.
#pragma once
#include <memory>

#include "codegen/RegionKernels.h"
#include "ops/abi.h"

namespace strata::tools {

struct CompiledCpuModel {
  ops::GraphDef graph;         // region nodes annotated with their kernels
  abi::KernelLookup kernels;   // keeps the JIT module alive
  size_t kernelCount = 0;
  double compileSeconds = 0;
};

// Progress ("compiling N kernels ...") goes to stderr when `verbose`.
CompiledCpuModel compileCpuModel(ops::GraphDef regionGraph, int64_t blockSize, bool verbose);

}  // namespace strata::tools
