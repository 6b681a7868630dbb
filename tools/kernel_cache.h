// Where strata keeps what it compiled, for later runs to load instead of
// compiling again: the CPU kernel libraries of `strata run --backend cpu`
// (tools/cpu_model.h) and the GPU artifacts of `strata run --backend cuda`
// (tools/cuda_model.h). Entries are keyed by what was compiled and by this
// binary (a rebuilt compiler never reuses old output).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ops/hash.h"

namespace strata::tools {

// $STRATA_KERNEL_CACHE, else $XDG_CACHE_HOME/strata/kernels, else
// ~/.cache/strata/kernels; empty when STRATA_KERNEL_CACHE=off (or no home).
std::filesystem::path kernelCacheDir();
// This binary's identity: its path, size and modification time.
std::string compilerStamp();
using ops::fnv1a;  // cache keys (ops/hash.h)

}  // namespace strata::tools
