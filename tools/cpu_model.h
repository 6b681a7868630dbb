// Compiles a region graph's kernels for the host CPU in process and returns
// the planned graph with a lookup into the compiled kernels: what `strata run
// --backend cpu` and the benchmarks execute.
//
// Kernel cache: compiled kernels are kept as shared libraries under
// $STRATA_KERNEL_CACHE (default $XDG_CACHE_HOME/strata/kernels or
// ~/.cache/strata/kernels), keyed by the tile IR, the target and this binary
// (a rebuilt compiler never reuses old code). STRATA_KERNEL_CACHE=off, or a
// cache that cannot be written, compiles with the in-process JIT instead.
#pragma once
#include <memory>

#include "codegen/targets/cpu/ModelKernels.h"
#include "ops/abi.h"

namespace strata::tools {

struct CompiledCpuModel {
  ops::GraphDef graph;         // region nodes annotated with their kernels
  abi::KernelLookup kernels;   // keeps the compiled code loaded
  size_t kernelCount = 0;
  double compileSeconds = 0;
  bool fromCache = false;
};

// Progress ("compiling N kernels ...") goes to stderr when `verbose`.
CompiledCpuModel compileCpuModel(ops::GraphDef regionGraph, int64_t blockSize, bool verbose);

}  // namespace strata::tools
