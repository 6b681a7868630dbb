// The generated kernels the Xe tests run, named once for both sides:
// strata_compile_xe_test_kernels (tests/gpu/, links the compiler) writes
// each module's SPIR-V at build time, and strata_xe_tests loads them by
// name, runtime only (no MLIR or LLVM), as strata_cuda_tests loads its
// kernels; tests/CMakeLists.txt runs spirv-val on every one of them.
//
// Specs only here (codegen's spec headers hold no MLIR): the emitters are
// called by the generator alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/AttentionKernel.h"
#include "codegen/DataMovementKernels.h"
#include "codegen/GemmKernel.h"
#include "codegen/GreedyKernel.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/TopKKernel.h"
#include "ops/tensor.h"

namespace strata::xetest {

struct GemmCase {
  ops::DType dtype;
  bool weightsNK, bias, residual, swiglu;
};

inline std::string gemmCaseName(const GemmCase& c) {
  return std::string(ops::dtypeName(c.dtype)) + (c.weightsNK ? "_nk" : "_kn") + (c.bias ? "_bias" : "") +
         (c.residual ? "_res" : "") + (c.swiglu ? "_swiglu" : "");
}

inline tile::GemmKernelSpec gemmSpec(const GemmCase& c) {
  tile::GemmKernelSpec s;
  s.name = "gemm";
  s.dtype = ops::dtypeName(c.dtype);
  s.weightsNK = c.weightsNK;
  s.bias = c.bias;
  s.residual = c.residual;
  s.swiglu = c.swiglu;
  // One sub-group of [16, 16] C blocks: Intel's CPU OpenCL compiler takes
  // about 15 s to build that kernel (with the built-ins), and minutes for a
  // two-sub-group [32, 32] one.
  s.blockM = 16;
  s.blockN = 16;
  s.blockK = 16;
  s.numWarps = 1;
  return s;
}

// The GEMMs with the run-time block check ("auto": ragged shapes), and with
// the block path alone ("always").
inline std::vector<GemmCase> gemmCases() {
  using D = ops::DType;
  return {{D::F16, false, false, false, false}, {D::BF16, false, false, false, false}, {D::F16, true, false, false, false},
          {D::BF16, true, true, true, false},   {D::F16, true, false, false, true},    {D::BF16, false, true, false, true}};
}
inline std::vector<GemmCase> gemmBlockCases() {
  using D = ops::DType;
  return {{D::F16, false, false, false, false}, {D::BF16, false, false, false, false}, {D::BF16, false, true, true, false},
          {D::F16, false, true, false, true},   {D::F16, true, false, false, false},   {D::BF16, true, true, true, false},
          {D::F16, true, false, false, true}};
}
// Built by ocloc for pvc with per-lane accesses only ("never") and with the
// 2D block path ("auto").
inline std::vector<GemmCase> gemmOclocCases() {
  return {{ops::DType::F16, false, true, true, false}, {ops::DType::BF16, false, true, true, false}};
}

inline std::string gemmModule(const GemmCase& c, const std::string& blockIo) {
  return "gemm_" + gemmCaseName(c) + "_" + blockIo;
}

inline tile::RmsNormKernelSpec rmsNormSpec(ops::DType dt) {
  tile::RmsNormKernelSpec s;
  s.name = "rms_norm";
  s.blockN = 64;
  s.dtype = ops::dtypeName(dt);
  s.numWarps = 1;
  return s;
}
inline std::vector<ops::DType> rmsNormTypes() { return {ops::DType::F32, ops::DType::F16, ops::DType::BF16}; }
inline std::string rmsNormModule(ops::DType dt, const std::string& blockIo = "auto") {
  return std::string("rms_norm_") + ops::dtypeName(dt) + "_" + blockIo;
}

// Head dims whose halves are not whole 16-column rows (16, 48) rotate whole
// heads (RopeKernelSpec::wholeHeads), as the xe model kernel set does.
inline bool ropeWholeHeads(int64_t headDim) { return (headDim / 2) % 16 != 0; }
inline tile::RopeKernelSpec ropeSpec(ops::DType dt, int64_t headDim) {
  tile::RopeKernelSpec s{"rope", 3, headDim, ops::dtypeName(dt)};
  s.wholeHeads = ropeWholeHeads(headDim);
  return s;
}
inline std::vector<ops::DType> ropeTypes() { return {ops::DType::F32, ops::DType::BF16}; }
inline std::vector<int64_t> ropeHeadDims() { return {16, 48, 64, 128}; }
inline std::string ropeModule(ops::DType dt, int64_t headDim) {
  return std::string("rope_") + ops::dtypeName(dt) + "_" + std::to_string(headDim);
}

inline tile::GatherRowsKernelSpec gatherRowsSpec(ops::DType dt) {
  tile::GatherRowsKernelSpec s;
  s.dtype = ops::dtypeName(dt);
  return s;
}
inline std::string gatherRowsModule(ops::DType dt) { return std::string("gather_rows_") + ops::dtypeName(dt); }

// The KV write's cache geometry: 2 KV heads of 64, blocks of 4 tokens.
constexpr int64_t kKvHeads = 2, kKvHeadDim = 64, kKvBlockSize = 4;
inline tile::KvWriteKernelSpec kvWriteSpec(ops::DType dt) {
  return tile::KvWriteKernelSpec{"kv_write", kKvHeads, kKvHeadDim, kKvBlockSize, ops::dtypeName(dt)};
}
inline std::string kvWriteModule(ops::DType dt) { return std::string("kv_write_") + ops::dtypeName(dt); }

// region.rope_kv_write (graph-fuse-rope-kv-write): 4 q heads over the KV
// write's heads, one head a program; the KV write's head dim and 16 (whole
// heads).
constexpr int64_t kRopeKvWriteHeads = 4;
inline std::vector<int64_t> ropeKvWriteHeadDims() { return {16, kKvHeadDim}; }
inline tile::RopeKvWriteKernelSpec ropeKvWriteSpec(ops::DType dt, int64_t headDim) {
  tile::RopeKvWriteKernelSpec s{"rope_kv_write", kRopeKvWriteHeads, kKvHeads, headDim, kKvBlockSize, ops::dtypeName(dt)};
  s.wholeHeads = ropeWholeHeads(headDim);
  return s;
}
inline std::string ropeKvWriteModule(ops::DType dt, int64_t headDim) {
  return std::string("rope_kv_write_") + ops::dtypeName(dt) + "_" + std::to_string(headDim);
}

// Row kernels (gather, KV write) run in f32 and bf16.
inline std::vector<ops::DType> rowTypes() { return {ops::DType::F32, ops::DType::BF16}; }

// Greedy sampling's device half (emitArgmaxKernel): 64 columns a step,
// so the test's splits take several steps and a ragged last one.
inline tile::ArgmaxKernelSpec argmaxSpec(ops::DType dt) {
  tile::ArgmaxKernelSpec s;
  s.blockN = 64;
  s.dtype = ops::dtypeName(dt);
  return s;
}
inline std::string argmaxModule(ops::DType dt) { return std::string("argmax_") + ops::dtypeName(dt); }

// Sampling's top-k per split of a row (emitTopKKernel): splits of 128
// columns and 8 candidates (the CUDA set's 1024 and 64 would cost the CPU
// OpenCL compiler minutes), so rows of a few hundred take several splits
// and a ragged last one.
inline tile::TopKKernelSpec topKSpec(ops::DType dt) {
  tile::TopKKernelSpec s;
  s.name = "top_k";
  s.blockN = 128;
  s.candidates = 8;
  s.dtype = ops::dtypeName(dt);
  return s;
}
inline std::string topKModule(ops::DType dt) { return std::string("top_k_") + ops::dtypeName(dt); }

// FlashAttention-2 in the unstaged form (AttentionKernelSpec::storageDots):
// one sub-group of 8 query rows (DPAS's M), 16 keys a step, 4 query heads
// over 2 KV heads (GQA), head dim 64; contiguous (causal and not) and
// paged (pages of 16, the key block).
struct AttentionCase {
  ops::DType dtype;
  bool paged, causal;
};
constexpr int64_t kAttnHeads = 4, kAttnKvHeads = 2, kAttnHeadDim = 64, kAttnBlockM = 8, kAttnBlockN = 16;
inline tile::AttentionKernelSpec attentionSpec(const AttentionCase& c) {
  tile::AttentionKernelSpec s;
  s.name = "attention";
  s.paged = c.paged;
  s.causal = c.causal;
  s.heads = kAttnHeads, s.kvHeads = kAttnKvHeads, s.headDim = kAttnHeadDim;
  s.scale = 0.125f;  // 1 / sqrt(64)
  s.blockM = kAttnBlockM, s.blockN = kAttnBlockN;
  s.dtype = ops::dtypeName(c.dtype);
  s.storageDots = true;
  return s;
}
inline std::vector<AttentionCase> attentionCases() {
  using D = ops::DType;
  return {{D::BF16, false, true}, {D::F16, false, false}, {D::BF16, true, true}, {D::F16, true, true}};
}
inline std::string attentionModule(const AttentionCase& c, const std::string& blockIo = "auto") {
  return std::string("attention_") + ops::dtypeName(c.dtype) + (c.paged ? "_paged" : c.causal ? "_causal" : "_full") +
         "_" + blockIo;
}
// Built by ocloc for pvc with per-lane accesses only, as the GEMMs.
inline std::vector<AttentionCase> attentionOclocCases() {
  return {{ops::DType::BF16, false, true}, {ops::DType::BF16, true, true}};
}

// The fused elementwise chains (tests/unit/elementwise_chains.h), formed
// into region.elementwise nodes, at widths that take the one-column tail
// loop alone, blocks of 32 and a tail, and whole blocks; one module a
// storage type holding every chain's kernel, and beside it
// elementwise_<dtype>.json: each kernel's launch contract
// (elementwiseLaunchContract) with its node's inputs and outputs and the
// values of the constants it reads.
inline std::vector<int64_t> elementwiseWidths() { return {1, 37, 96}; }
inline std::vector<ops::DType> elementwiseTypes() { return {ops::DType::BF16, ops::DType::F16}; }
constexpr int64_t kElementwiseBlockN = 32;
inline std::string elementwiseModule(ops::DType dt) { return std::string("elementwise_") + ops::dtypeName(dt); }

}  // namespace strata::xetest
