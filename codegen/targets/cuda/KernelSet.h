// The NVIDIA target's kernel sets (DESIGN.md step 7): which kernels a set
// holds (the default set of `strata compile-kernels`, the kernels a model's
// regions need), their blockings, and the writer of a kernel set and of a
// whole-model artifact that the runtime loads without the compiler
// (runtime/gpu_kernels.h, runtime/artifact.h). No MLIR in this header.
#pragma once
#include <string>

#include <vector>

#include "codegen/KernelSet.h"
#include "codegen/AttentionKernel.h"
#include "codegen/DataMovementKernels.h"
#include "codegen/ElementwiseKernel.h"
#include "codegen/GemmKernel.h"
#include "codegen/GreedyKernel.h"
#include "codegen/TopKKernel.h"
#include "ops/abi.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/PenaltyKernel.h"
#include "codegen/QuantizeKernel.h"

namespace strata::tile {

// A kernel set for an NVIDIA target (codegen/targets/cuda/Backend.h), what the GPU
// conformance tests and `strata-gpu bench` run:
//   kernels.ptx   the PTX of every kernel
//   kernels.mlir  their workgroup-level tile IR
//   kernels.json  {"format", "target", "kernels": [...]}: every kernel
//                 with "kind", "name", "threads" (per block),
//                 "shared_bytes" (dynamic shared memory per block),
//                 "dtype", "cubin" (its unit's file, with ptxas) and its
//                 kind's own fields (codegen/KernelSet.h
//                 kernelManifestEntries); the i8-activation GEMVs also
//                 name their quantize_rows kernels ("quantize",
//                 "norm_quantize", "quantize_threads", "quantize_blocks"),
//                 which have entries of their own ("block", "norm")
void writeCudaKernels(const KernelSetSpec& set, const std::string& target, const std::string& dir);

// The kernels a region graph (graph::formRegions) needs on an NVIDIA GPU
// with `dtype` (bf16, f16) storage and KV pages of `pageSize` tokens: the
// four row classes of each GEMM variant its gemm regions use, RMSNorm, RoPE
// for its query and KV head counts, the KV write, paged decode and paged
// prefill attention (the graph's scale), the row gather (embedding,
// lm_head rows) and one kernel per distinct fused elementwise region.
// Each region.elementwise node gets a "kernel" attribute: its kernel's name
// and launch contract (ElementwiseKernel.h elementwiseLaunchContract).
// Throws naming the node when a region has no GPU kernel.
// `tuning` (empty fields: the defaults) holds the tuning blockings of
// `strata compile-kernels --gemv-block / --decode-block / --medium-block /
// --paged-decode-block`.
struct CudaModelTuning {
  std::string gemvBlock, decodeBlock, mediumBlock, pagedDecodeBlock;
  // Keep each RMSNorm its own region (no graph-fuse-gemm-norm): the
  // fusion's A / B.
  bool unfusedNorms = false;
  // Keep each layer's RoPEs and KV write apart (no
  // graph-fuse-rope-kv-write): that fusion's A / B.
  bool unfusedRopeKvWrite = false;
};
KernelSetSpec cudaModelKernelSet(ops::GraphDef& regions, const std::string& dtype, int64_t pageSize,
                                     const CudaModelTuning& tuning = {});

// Writes a model compiled for an NVIDIA GPU (`arch`, e.g. sm_90) as an
// artifact directory that runtime/artifact.h reads: plan.json (the region
// graph, weights by reference, meta "kernels": {target: "cuda:<arch>",
// block_size, dtype}) and the kernel set's kernels.ptx, kernels.json and
// kernels.mlir. The runtime picks each node's kernel from kernels.json by
// its shapes (runtime/gpu_executor.h).
void writeCudaArtifact(const ops::GraphDef& regions, const KernelSetSpec& set, const std::string& arch,
                       const std::string& dtype, int64_t pageSize, const std::string& dir,
                       const nlohmann::json& extraMeta);

// A fused elementwise kernel's GPU blocking for rows of spec.cols: the
// widest block (up to 8 warps x 8 columns a lane) that divides the row, so
// the one-column tail loop runs only for widths that are not a multiple of
// 32 (then one warp, and fewer than 32 tail columns).
void cudaElementwiseBlocking(ElementwiseKernelSpec& spec);

// RMSNorm for the GPU in `dtype` storage: a row over 8 warps streaming 16
// elements per lane per step.
RmsNormKernelSpec cudaRmsNormSpec(const std::string& dtype);
// Those kernels for f32, bf16 and f16.
std::vector<RmsNormKernelSpec> cudaRmsNormKernelSet();

// Greedy sampling's argmax for the GPU in `dtype` storage (one warp per
// split, 32 elements per lane per step), and the bf16, f16 and f32 ones
// (f32: the rows a repetition penalty changed).
ArgmaxKernelSpec cudaArgmaxSpec(const std::string& dtype);
std::vector<ArgmaxKernelSpec> cudaArgmaxKernelSet();

// Sampling's top-k for the GPU in `dtype` storage (one warp per 1024-column
// split, 64 candidates a split), and the bf16, f16 and f32 ones.
TopKKernelSpec cudaTopKSpec(const std::string& dtype);
std::vector<TopKKernelSpec> cudaTopKKernelSet();
// The repetition penalty on f32 rows (PenaltyKernel.h): the set's one.
std::vector<RepetitionPenaltyKernelSpec> cudaRepetitionPenaltyKernelSet();

// A GPU RoPE kernel over `heads` heads of dim `headDim` (name
// rope_{dtype}_h{heads}_d{headDim}): one warp per token and group of up to
// 8 heads, lane vectors of 4 elements.
RopeKernelSpec cudaRopeSpec(int64_t heads, int64_t headDim, const std::string& dtype);
// The GPU RoPE kernel over the q heads and the KV heads of one projection
// in one launch (RopeKernelSpec::kvHeads; name
// rope_{dtype}_h{heads}k{kvHeads}_d{headDim}): up to 8 heads a program,
// the most dividing both counts.
RopeKernelSpec cudaJoinedRopeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, const std::string& dtype);
// RoPE kernels for the GPU: bf16 and f16 storage of q / k rows of 32 and 8
// heads of dim 128 (Llama-3-8B's query and key projections), and both in
// one launch (q then k, as the q / k / v GEMMs write them).
std::vector<RopeKernelSpec> cudaRopeKernelSet();
// The GPU kernel of region.rope_kv_write (graph-fuse-rope-kv-write; name
// rope_kv_write_{dtype}_h{heads}k{kvHeads}_d{headDim}_p{pageSize}): the
// joined RoPE's programs (up to 8 heads, the most dividing both counts,
// lane vectors of 4), the k programs also writing their heads of k and v.
RopeKvWriteKernelSpec cudaRopeKvWriteSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                          const std::string& dtype);

// FlashAttention-2 forward kernels for the GPU (cudaAttentionSpec, scale
// 1 / sqrt(head dim)), causal and not, bf16 and f16: 32 heads of dim 64 and
// of dim 128 (the peers' benchmark shapes), and Llama-3-8B's GQA (32 query
// heads over 8 KV heads, dim 128).
// `blocking` (applyAttentionBlocking text), when given, replaces the
// blocking of every one.
std::vector<AttentionKernelSpec> cudaAttentionKernelSet(const std::string& blocking = "");

// Paged decode attention for the GPU (cudaPagedDecodeSpec): bf16 and f16
// caches of Llama-3-8B's attention (32 query heads over 8 KV heads, dim
// 128) in pages of 16 tokens. `blocking` "NxS" (for tuning), when given,
// replaces the keys per step (N, whole pages) and the buffers (S >= 2).
std::vector<AttentionKernelSpec> cudaPagedDecodeKernelSet(const std::string& blocking = "");
// A --paged-decode-block blocking "NxS[xW]" (N keys a step, whole pages; S
// >= 2 buffers; W warps sharing a step's keys) applied to a decode spec;
// empty: unchanged. Throws naming the option when malformed.
void applyPagedDecodeBlocking(AttentionKernelSpec& s, const std::string& blocking);
// Paged prefill attention for the GPU (cudaPagedPrefillSpec), same shapes.
std::vector<AttentionKernelSpec> cudaPagedPrefillKernelSet();

// Data movement for the GPU, bf16 and f16: row gathers (embedding lookup;
// one warp copies 256 columns, 8 per lane; and into f32, the rows a
// repetition penalty changes) and the paged KV write of Llama-3-8B's 8 KV
// heads of dim 128 into pages of 16.
GatherRowsKernelSpec cudaGatherRowsSpec(const std::string& dtype, const std::string& outDtype = "");
// A block-quantized table's gather in GPU form `form` (abi::gpuInt8Form;
// GatherRowsKernelSpec::quantBlock) widening rows into `outDtype`:
// "gather_rows_<form>_to_<outDtype>".
GatherRowsKernelSpec cudaQuantGatherRowsSpec(const abi::Int8BlockForm& form, const std::string& outDtype);
std::vector<GatherRowsKernelSpec> cudaGatherRowsKernelSet();
std::vector<KvWriteKernelSpec> cudaKvWriteKernelSet();
// region.rope_kv_write of Llama-3-8B's attention (32 q heads, 8 KV heads
// of dim 128, pages of 16), bf16 and f16.
std::vector<RopeKvWriteKernelSpec> cudaRopeKvWriteKernelSet();

// One GEMM variant of a GPU kernel set: storage type, weight layout and
// epilogue. suffix() names its kernels: gemm_<dtype>_<kn|nk>[_bias]
// [_residual][_swiglu]_<class>.
struct CudaGemmVariant {
  std::string dtype;
  bool weightsNK = false, bias = false, residual = false, swiglu = false;
  std::string suffix() const;
};

// A variant's kernels, one per row class (cudaGemmSpec): decode,
// medium, prefill and large, each recording in kernels.json the most rows
// it is meant for (`max_rows`: 16, 128, 1024, 0 = any); with [N, K]
// weights also the GEMV form for one row ("_gemv", max_rows 1,
// kCudaGemvBlocking, SwiGLU kCudaSwigluGemvBlocking, unless `gemv` names
// another). SwiGLU from the
// prefill class up runs 128 x 128 x 64 warpgroup-dot blocks on 8 warps with
// [N, K] weights, else 128 x 64 x 32 mma.sync blocks on 4 warps (two
// accumulators either way).
// Plain and residual [N, K] GEMMs add column variants of the prefill
// class for up to kCudaColumnVariantRows rows: "_narrow" (64 x 64 blocks,
// N <= 4096) and, plain only, "_wide" (128 x 128 on two warpgroups, N >=
// 16384), with max_rows 256 and min_cols / max_cols; the medium class
// "_wide" (plain, 64 x 128 blocks, N >= 16384) and both classes "_deep"
// (64 x 128 blocks splitting K across programs, N <= 4096, K >=
// kCudaDeepK: min_depth) and the large class "_narrow" (128 x 128 blocks,
// N <= 4096, up to kCudaLargeNarrowRows rows), and the medium class
// "_upper" (64 x 64 TMA blocks, dots in flight, N <= kCudaMediumUpperCols,
// from kCudaSplitKRows + 1 rows: min_rows). SwiGLU with [N, K] weights takes the medium
// class up to kCudaSplitKRows rows and the prefill class's blocks above.
// Non-zero blockings replace the class's block shape (the prefill one both
// prefill classes, and then no column variants); warpgroup-dot blockings
// only for [N, K] weights.
std::vector<GemmKernelSpec> cudaGemmKernels(const CudaGemmVariant& v, const GemmBlocking& decode = {},
                                            const GemmBlocking& medium = {}, const GemmBlocking& prefill = {},
                                            const GemmBlocking& gemv = {});

// An [N, K] variant's GEMMs over block-quantized weights in GPU form
// `form` (abi::gpuInt8Form): "_gemv_<form>" for one row (max_rows 1), the
// GEMV's integer form (A quantized to i8 a block, codegen/GemvI8Kernel.cpp);
// "_mma_<form>" (up to kCudaDecodeRows) and "_mma_wide_<form>" (any more),
// mma.sync kernels whose weight blocks are widened into shared memory
// (GemmKernel.cpp), each weight read once per block of rows.
std::vector<GemmKernelSpec> cudaQuantGemvKernels(const CudaGemmVariant& v, const abi::Int8BlockForm& form);
// The quantize_rows kernel an i8-activation GEMV (GemmKernelSpec::
// int8Activations) runs first on its A: one per A's storage and weight
// block ([rmsnorm_]quantize_rows_<dtype>_q<block>), `norm` with the RMSNorm
// prologue (a region.gemm with norm = 1). Each is its own kernels.json
// entry (kind quantize_rows, own unit); the GEMV's entry names both
// ("quantize", "norm_quantize") with their launch ("quantize_threads",
// "quantize_blocks": blocks a program).
QuantizeRowsKernelSpec cudaQuantizeRowsSpec(const GemmKernelSpec& gemv, bool norm = false);
// The distinct quantize_rows kernels (both forms) the i8-activation GEMVs
// of `gemms` run.
std::vector<QuantizeRowsKernelSpec> cudaQuantizeRowsKernels(const std::vector<GemmKernelSpec>& gemms);

// The set `strata compile-kernels` builds: for bf16 and f16, the four
// classes of plain GEMMs with [K, N] and [N, K] weights and of the [N, K]
// epilogues Llama-family models use (residual, SwiGLU, bias), and those
// [N, K] variants' quantized GEMVs in every GPU form (abi::gpuInt8Forms).
std::vector<GemmKernelSpec> cudaGemmKernelSet(const GemmBlocking& decode = {}, const GemmBlocking& medium = {},
                                              const GemmBlocking& prefill = {}, const GemmBlocking& gemv = {});

}  // namespace strata::tile
