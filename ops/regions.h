// Reference implementations of the region ops that region formation
// (graph/, DESIGN.md step 3) produces. Each region is what codegen turns into
// one kernel; these plain loops are the oracle those kernels are checked
// against, and what `strata run --backend reference` executes.
//
// Token-major layout: activations are [..., tokens, features]; a head-split
// tensor is [..., tokens, heads * head_dim] (head h owns features
// [h * head_dim, (h + 1) * head_dim)). The paged form flattens all sequences
// of a step into one token axis; per-sequence structure lives in
// `seq_starts` (token offsets, N + 1 entries) and `context_lens`.
#pragma once
#include <string>
#include <vector>

#include "ops/tensor.h"

namespace strata::ops {

// ---- gemm + epilogue ---------------------------------------------------------
enum class GemmEpilogue { None, SwiGLU, GeluTanh, GeGLU };
struct GemmSpec {
  bool weightsNK = false;  // W as [N, K] (HF Linear) instead of [K, N] (ONNX MatMul)
  GemmEpilogue epilogue = GemmEpilogue::None;
};
// x [..., K]; one output per weight (W_i -> y_i = x @ W_i + bias_i), except
// SwiGLU (two weights, one output silu(x @ W_0 + b_0) * (x @ W_1 + b_1))
// GeluTanh (one weight, gelu_tanh(x @ W + b), as ops::gelu computes it) and
// GeGLU (SwiGLU with gelu_tanh for silu: Gemma's MLP).
// `biases` is empty or one per weight; `residual` (same shape as the single
// output) is added last. With `rows`, x is first viewed as [R, K] and only
// rows[i] are computed; x must be [1, .., 1, T, K] and the output is
// [1, .., 1, len(rows), N] (lm_head on the last token of each sequence).
std::vector<Tensor> gemmRegion(const Tensor& x, const std::vector<Tensor>& weights, const std::vector<Tensor>& biases,
                               const Tensor* residual, const Tensor* rows, const GemmSpec& spec);

// ---- rope ----------------------------------------------------------------------
// Rotate-half RoPE on a token-major x [..., S, heads * headDim] at positions
// with S * (leading dims) entries, on each head's first rotaryDim dims (0:
// all) at frequency theta^(-2i/rotaryDim); the rest pass through. Same
// arithmetic as ops::rope on the head-major layout.
Tensor ropeTokens(const Tensor& x, const Tensor& positions, int64_t headDim, float theta, int64_t rotaryDim = 0);
// cos/sin tables [positions, rotaryDim / 2]: row p holds cos / sin of
// p * theta^(-2i/rotaryDim), computed exactly as ropeTokens computes them (a
// kernel reading the tables matches it bit for bit).
struct RopeTables {
  Tensor cos, sin;
};
RopeTables ropeTables(int64_t positions, int64_t rotaryDim, float theta);

// ---- paged KV cache --------------------------------------------------------------
// A layer's cache is [num_blocks, 2, kv_heads, block_size, head_dim] (index
// 1: 0 = K, 1 = V). A token's slot is block * block_size + offset.
// Writes k/v [..., T, kv_heads * head_dim] into the cache at slot_mapping [T]
// (negative slot: skipped) in place, and returns the cache (same storage).
Tensor kvWrite(const Tensor& cache, const Tensor& k, const Tensor& v, const Tensor& slotMapping);

struct PagedAttentionSpec {
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  float scale = 1.f;
};
// q [..., T, heads * headDim] flattened over all sequences. Sequence n owns
// tokens [seq_starts[n], seq_starts[n + 1]) and has context_lens[n] tokens in
// the cache (its new ones included); its i-th new token sits at position
// context_lens[n] - q_len + i and sees cache positions 0..that (causal).
// Position p is read from block block_tables[n][p / block_size]. GQA: query
// head h reads KV head h / (heads / kvHeads). Returns q's shape.
Tensor pagedAttention(const Tensor& q, const Tensor& cache, const Tensor& blockTables, const Tensor& seqStarts,
                      const Tensor& contextLens, const PagedAttentionSpec& spec);

}  // namespace strata::ops
