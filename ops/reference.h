// Reference CPU kernels: the plain, obviously-correct implementation of every
// graph op. They are the oracle later kernels are checked against, so clarity
// beats speed here. Semantics follow the ONNX operator spec (numpy-style
// broadcasting, negative axes counted from the back); the strata high-level
// ops (rms_norm, rope, attention, linear, silu) are documented below.
#pragma once
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
enum class ReduceOp { Sum, Mean, Max, Min };
Tensor reduce(ReduceOp op, const Tensor& x, std::vector<int64_t> axes, bool keepdims, bool noopWithEmptyAxes = false);

// ---- LLM building blocks (strata high-level ops) ---------------------------
// x * rsqrt(mean(x^2, last axis) + eps) * weight
Tensor rmsNorm(const Tensor& x, const Tensor& weight, float eps);
// Rotate-half RoPE on x [B, H, S, D] at positions [B, S]: the first half of D
// pairs with the second half, frequency theta^(-2i/D).
Tensor rope(const Tensor& x, const Tensor& positions, float theta);
// Scaled dot-product attention with GQA: q [B, Hq, S, D], k/v [B, Hkv, T, D],
// Hq % Hkv == 0. With `causal`, query i sits at absolute position T - S + i and
// sees keys j <= T - S + i. With `keyMask` [B, T] (nonzero = keep; the
// exporters' attention_mask) masked keys are skipped; a row with no visible
// key yields zeros. Returns [B, Hq, S, D].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, bool causal,
                 const Tensor* keyMask = nullptr);

// Normalizes a possibly negative axis against `rank`; throws when out of range.
int64_t normAxis(int64_t axis, int64_t rank);
std::vector<int64_t> contiguousStrides(const Shape& s);

}  // namespace strata::ops
