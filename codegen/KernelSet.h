// A GPU kernel set, target-neutral (DESIGN.md step 7): the kernel specs a
// set holds, the tile IR of each, and each kernel's manifest entry in
// kernels.json, which the targets' writers (codegen/targets/<target>/
// KernelSet.h) complete with what their binaries say (threads and shared
// memory for cuda, work-group sizes for xe). No MLIR in this header.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/AttentionKernel.h"
#include "codegen/DataMovementKernels.h"
#include "codegen/ElementwiseKernel.h"
#include "codegen/GemmKernel.h"
#include "codegen/GreedyKernel.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/PenaltyKernel.h"
#include "codegen/TopKKernel.h"
#include "ops/graph_def.h"

namespace strata::tile {

struct KernelSetSpec {
  std::vector<GemmKernelSpec> gemms;
  std::vector<RmsNormKernelSpec> norms;
  std::vector<RopeKernelSpec> ropes;
  std::vector<AttentionKernelSpec> attentions;
  std::vector<AttentionKernelSpec> pagedDecodes;   // GPU decode form, each with its combine kernel
  std::vector<AttentionKernelSpec> pagedPrefills;  // GPU paged prefill form (xe: the unstaged paged form, every step)
  std::vector<GatherRowsKernelSpec> gathers;
  std::vector<KvWriteKernelSpec> kvWrites;
  std::vector<ArgmaxKernelSpec> argmaxes;  // greedy sampling's device half
  std::vector<TopKKernelSpec> topks;       // temperature / top-k / top-p sampling's device half
  std::vector<RepetitionPenaltyKernelSpec> penalties;  // the repetition penalty on f32 copies of rows
  std::vector<ElementwiseKernelSpec> elementwises;  // fused elementwise regions (one per distinct region)
  std::vector<RopeKvWriteKernelSpec> ropeKvWrites;  // region.rope_kv_write
};

// The kernel of fused elementwise region `n` of `g` in `set`: planned in
// blocks of 32 columns (planElementwiseRegion) with `dtype` storage, then
// `blocking` (the target's, if any); added to set.elementwises as
// elementwise_<dtype>_<i> unless a kernel emitting the same text
// (elementwiseKernelKey) is there. `n` gets a "kernel" attribute: that
// kernel's name and launch contract (elementwiseLaunchContract).
void addElementwiseRegionKernel(KernelSetSpec& set, const ops::GraphDef& g, ops::NodeDef& n, const std::string& dtype,
                                const std::function<void(ElementwiseKernelSpec&)>& blocking = {});

// The tile IR of every kernel of `set`, one call of `unit` a kernel (a
// paged decode kernel with its combine kernel in one), in the order of the
// struct's fields, with a rough cost (its accumulators' elements a program;
// 0 for kernels without dots) for writers that start the costliest first.
void forEachKernelText(const KernelSetSpec& set, const std::function<void(std::string text, int64_t cost)>& unit);

// kernels.json's "kernels": one entry a kernel of `set`, in the order of
// its fields: `entry(kind, name, dtype, own)` makes it from the fields the
// kind has of its own (below) and adds the target's (it throws for a
// kernel its binary lacks). The kinds' own fields: GEMMs "weights":
// "kn"|"nk", "bias", "residual", "swiglu", "block_m", "block_n", "block_k",
// "num_warps", "stages", "max_rows", "min_cols", "max_cols", "min_depth",
// "min_rows", "tma", "dots_in_flight", "split_k_programs", "gemv",
// "tma_store", and for block-quantized weights "quant_block" (0: the
// dtype's), "quant_nibbles", "quant_offsets", "quant_super"; RMSNorms
// "block_n", "lane_vector"; RoPEs "heads", "kv_heads", "head_dim",
// "heads_per_program"; attentions "heads", "kv_heads", "head_dim",
// "causal", "scale", "block_m", "block_n", "stages", "tma"; paged decodes
// "heads", "kv_heads", "head_dim", "page_size", "scale", "block_n",
// "stages", "combine" (its combine kernel, an "attention_combine" entry
// made first), "combine_threads", "stores_one_split",
// "combine_splits_per_step"; paged prefills "heads", "kv_heads",
// "head_dim", "page_size", "scale", "block_m", "block_n", "storage_dots"
// (the unstaged form); row gathers "block_n", "out_dtype" and the quant
// fields; KV writes "kv_heads", "head_dim", "page_size"; RoPE + KV writes
// "heads", "kv_heads", "head_dim", "page_size", "heads_per_program";
// argmaxes "block_n"; top-ks "block_n", "candidates"; elementwise
// "block_n", "cols".
using ManifestEntry =
    std::function<nlohmann::json(const char* kind, const std::string& name, const std::string& dtype, const nlohmann::json& own)>;
nlohmann::json kernelManifestEntries(const KernelSetSpec& set, const ManifestEntry& entry);

}  // namespace strata::tile
