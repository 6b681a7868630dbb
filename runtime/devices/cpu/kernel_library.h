// Loads generated CPU kernels from a shared library (an artifact's
// kernels.so, or the kernel cache) with dlopen; no compiler involved.
#pragma once
#include <string>

#include "ops/abi.h"

namespace strata::runtime {

// The library's kernels by name (symbol abi::packedSymbol(name)); the
// returned lookup keeps the library loaded. Throws strata::Error naming the
// file when it cannot be loaded, or a kernel when it is missing.
abi::KernelLookup loadKernelLibrary(const std::string& path);

// Whether this CPU can run kernels built for `target` ("cpu-avx2",
// "cpu-avx512"); `why` says what is missing.
bool hostRuns(const std::string& target, std::string& why);

}  // namespace strata::runtime
