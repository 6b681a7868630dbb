// The Intel Xe target's kernel sets (DESIGN.md step 7): the kernels a
// model's regions need on xe:pvc / xe:bmg, at the blockings the Xe
// conformance tests run (tests/unit/xe_test_kernels.h), and the writer of
// the artifact directory. No MLIR in this header.
//   plan.json     the region graph (weights by reference), meta "kernels":
//                 {target: "xe:pvc"|"xe:bmg", block_size, dtype}
//   kernels.spv   one SPIR-V module holding every kernel (Backend.h: its
//                 parameters, ND-range and the Intel built-ins it imports)
//   kernels.mlir  their workgroup-level tile IR
//   kernels.json  {"format", "target", "spirv", "sub_group_size",
//                 "kernels": [...]}: every kernel with "kind", "name",
//                 "dtype", "threads" (work-items a work-group: 16 x its
//                 sub-groups, as a CUDA block's threads) and its kind's
//                 own fields (codegen/KernelSet.h kernelManifestEntries)
// The GPU executor runs it (runtime/gpu_kernels.h loads the set) on an
// Intel GPU through the level_zero device (runtime/devices/level_zero/
// device.h) and here on the Xe test device (runtime/devices/opencl/).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/KernelSet.h"
#include "ops/graph_def.h"

namespace strata::tile {

// The kernels a region graph (graph::formRegions without the CUDA target's
// norm prologue) needs on an Intel Xe GPU with `dtype` (bf16, f16) storage
// and KV pages of `pageSize` tokens (a multiple of 16: a step of the paged
// attention is one page): one GEMM per variant its gemm regions use (one
// sub-group of [16, 16] C blocks, every row count), RMSNorm, RoPE or the
// fused RoPE + KV write, the KV write, paged attention in the unstaged form
// (every step, prefill and decode alike), the row gather, greedy argmax and
// sampling's top-k, and one kernel per distinct fused elementwise region
// (whose node gets a "kernel" attribute as for cuda). Throws naming the
// node for a region with no Xe kernel (block-quantized weights among them).
KernelSetSpec xeModelKernelSet(ops::GraphDef& regions, const std::string& dtype, int64_t pageSize);

// Compiles `set` for `target` (xe:pvc, xe:bmg) and writes the artifact
// above into `dir`, plan.json last (its presence says it is complete).
void writeXeArtifact(const ops::GraphDef& regions, const KernelSetSpec& set, const std::string& target,
                     const std::string& dtype, int64_t pageSize, const std::string& dir,
                     const nlohmann::json& extraMeta);

}  // namespace strata::tile
