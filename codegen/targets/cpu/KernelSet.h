// Writes a model compiled for the host CPU as an artifact directory
// (DESIGN.md step 7) that the runtime runs without the compiler
// (runtime/artifact.h reads it):
//   plan.json     the planned region graph (ops::toJson): nodes with their
//                 "kernel" attributes, weights as references into the source
//                 files (never copies), meta (ids, cache geometry, kernels:
//                 {target, block_size}, artifact: {format, kernels})
//   kernels.so    the generated kernels for the host CPU (abi::packedSymbol)
//   kernels.mlir  their workgroup-level tile IR, for inspection
// No MLIR in this header.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/targets/cpu/ModelKernels.h"

namespace strata::tile {

// Creates `dir` (or reuses an empty one / a previous artifact); throws
// strata::Error naming the path on failure. `extraMeta` entries (e.g. the
// tokenizer path) are merged into plan.json's meta.
void writeCpuArtifact(const KernelPlan& plan, const std::string& dir, const nlohmann::json& extraMeta);

}  // namespace strata::tile
