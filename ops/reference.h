// Reference CPU kernels: the plain, obviously-correct implementation of every
// graph op. They are the oracle later kernels are checked against, so clarity
// beats speed here. Semantics follow the ONNX operator spec (numpy-style
// broadcasting, negative axes counted from the back); the strata high-level
// ops (rms_norm, rope, attention, linear, silu) are documented below.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ops/tensor.h"

namespace strata::ops {

// ---- elementwise -----------------------------------------------------------
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Max, Min, Mod, Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor };
enum class UnaryOp { Neg, Abs, Sqrt, Reciprocal, Exp, Log, Sigmoid, Silu, Tanh, Erf, Relu, Cos, Sin, Floor, Ceil, Not, IsNaN, IsInf };

Shape broadcastShapes(const Shape& a, const Shape& b);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor unary(UnaryOp op, const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

// ---- data movement ---------------------------------------------------------
// ONNX Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape, bool allowzero = false);
Tensor transpose(const Tensor& x, std::vector<int64_t> perm);  // empty perm = reverse
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             std::vector<int64_t> axes, std::vector<int64_t> steps);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(const Tensor& x, int64_t axis, std::vector<int64_t> sizes, int64_t numOutputs);
Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis);
Tensor gatherND(const Tensor& data, const Tensor& indices, int64_t batchDims);
Tensor expand(const Tensor& x, const std::vector<int64_t>& shape);
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes);
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes);  // empty = all 1-dims
Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta);
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse);
Tensor constantOfShape(const std::vector<int64_t>& shape, const Tensor& value);
Tensor trilu(const Tensor& x, int64_t k, bool upper);

// ---- linear algebra and reductions -----------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);  // numpy matmul semantics
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor* c, float alpha, float beta, bool transA, bool transB);
// y[..., n] = sum_k x[..., k] * w[n, k] (+ bias[n]): the layout HF checkpoints store.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias);
Tensor softmax(const Tensor& x, int64_t axis);
// x - log(sum(exp(x))) along `axis` (the sum in double).
Tensor logSoftmax(const Tensor& x, int64_t axis);
enum class ReduceOp { Sum, Mean, Max, Min };
Tensor reduce(ReduceOp op, const Tensor& x, std::vector<int64_t> axes, bool keepdims, bool noopWithEmptyAxes = false);

// ---- LLM building blocks (strata high-level ops) ---------------------------
// x * rsqrt(mean(x^2, last axis) + eps) * weight
Tensor rmsNorm(const Tensor& x, const Tensor& weight, float eps);
// Rotate-half RoPE on x [B, H, S, D] at positions [B, S]: the first half of
// the rotary dims R pairs with the second half, frequency theta^(-2i/R);
// dims R.. pass through (partial rotary, Phi-3 / GPT-NeoX style). R = 0
// means D.
Tensor rope(const Tensor& x, const Tensor& positions, float theta, int64_t rotaryDim = 0);
// Scaled dot-product attention with GQA: q [B, Hq, S, D], k/v [B, Hkv, T, D],
// Hq % Hkv == 0. With `causal`, query i sits at absolute position T - S + i and
// sees keys j <= T - S + i. With `keyMask` [B, T] (nonzero = keep; the
// exporters' attention_mask) masked keys are skipped; a row with no visible
// key yields zeros. Returns [B, Hq, S, D].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, bool causal,
                 const Tensor* keyMask = nullptr);

// The attention every form above reduces to: q [B, Hq, S, D], k/v [B, Hkv, T,
// D / Dv]; query head h reads KV head h / (Hq / Hkv) (GQA grouping, as torch's
// enable_gqa and onnxruntime compute it). bias(b, h, i, j) is added to the
// scaled (and, with softcap > 0, capped) score; -inf masks the key. A row with
// no visible key yields zeros. Returns [B, Hq, S, Dv].
using AttentionBias = std::function<float(int64_t b, int64_t h, int64_t i, int64_t j)>;
Tensor attendBiased(const Tensor& q, const Tensor& k, const Tensor& v, float scale, float softcap, const AttentionBias& bias);

// ---- LLM ops of ONNX opset 23 and onnxruntime's com.microsoft domain ------
// (ops/llm_onnx.cpp; region formation raises them to the ops above.)

// RMSNormalization-23 / SimplifiedLayerNormalization: normalizes over the axes
// from `axis` on (their product), scale broadcast over them.
Tensor rmsNormAxes(const Tensor& x, const Tensor& scale, int64_t axis, float eps);
// ONNX LayerNormalization (opset 17): over the axes from `axis` on, (x -
// mean) / sqrt(variance + eps) * scale (+ bias), in f32; scale and bias
// hold one value per normalized element.
Tensor layerNorm(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, float eps);
// ONNX Gelu (opset 20): x Phi(x) with the erf form ("none") or the tanh
// approximation ("tanh").
Tensor gelu(const Tensor& x, bool tanhApproximation);
// RotaryEmbedding-23: x [B, H, S, D] or [B, S, H * D] (numHeads given);
// cos/sin [B, S, R/2], or [maxPos, R/2] indexed by positions [B, S]; R =
// rotaryDim (0: all of D); pairs are (i, i + R/2), or (2i, 2i + 1) when
// interleaved; dims from R on pass through.
Tensor rotaryEmbedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor* positions, bool interleaved,
                       int64_t rotaryDim, int64_t numHeads);
// Attention-23: q/k/v 4-D [B, H, S, D] or 3-D [B, S, H * D] (qHeads/kvHeads
// given); past K/V [B, Hkv, P, D] are put before the new ones; mask bool
// (true = attend) or additive, broadcast to [B, Hq, S, T], padded with
// "masked" up to T keys; causal: query i sees keys j <= i (the spec's
// upper-left alignment); scale 0 = 1/sqrt(D). Returns {Y, present_key,
// present_value}; Y has q's rank.
struct OnnxAttentionSpec {
  float scale = 0, softcap = 0;
  bool causal = false;
  int64_t qHeads = 0, kvHeads = 0;
};
std::vector<Tensor> onnxAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor* pastK,
                                  const Tensor* pastV, const OnnxAttentionSpec& s);
// com.microsoft GroupQueryAttention: q [B, S, Hq * D], k/v [B, S, Hkv * D],
// past K/V [B, Hkv, P, D] (optional), seqlens_k [B] (total length - 1 per
// sequence), total_sequence_length (scalar). Sequence b holds L_b = seqlens_k[b]
// + 1 tokens after this step, the new ones at L_b - S + i. Causal; with
// doRotary, q and k are rotated at those positions from cos/sin caches
// [maxPos, D/2]. Returns {output [B, S, Hq * D], present_key, present_value
// [B, Hkv, max(P, total), D]}.
struct GqaSpec {
  int64_t heads = 0, kvHeads = 0;
  float scale = 0, softcap = 0;
  bool doRotary = false, rotaryInterleaved = false;
  int64_t localWindow = -1;
};
std::vector<Tensor> groupQueryAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* pastK,
                                        const Tensor* pastV, const Tensor& seqlensK, const Tensor& totalSeqLen,
                                        const Tensor* cos, const Tensor* sin, const GqaSpec& s);
// com.microsoft FusedMatMul: alpha * op(A) @ op(B), op = swap of the last two
// dims when trans is set.
Tensor fusedMatMul(const Tensor& a, const Tensor& b, float alpha, bool transA, bool transB);

// Normalizes a possibly negative axis against `rank`; throws when out of range.
int64_t normAxis(int64_t axis, int64_t rank);
std::vector<int64_t> contiguousStrides(const Shape& s);

}  // namespace strata::ops
