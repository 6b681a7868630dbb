// Matrix products, softmax and reductions (f32, accumulate in f32).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/reference.h"

namespace strata::ops {

namespace {
// C[m, n] += A[m, k] * B[k, n] with row strides; i-k-j order keeps B rows hot.
void gemmKernel(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K,
                int64_t lda, int64_t ldb, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      float a = A[i * lda + k];
      const float* b = B + k * ldb;
      float* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
    }
}

void requireF32(const Tensor& t, const char* what) {
  if (t.dtype() != DType::F32) fail("{}: expected f32, got {}", what, dtypeName(t.dtype()));
}
}  // namespace

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  requireF32(a0, "MatMul");
  requireF32(b0, "MatMul");
  if (a0.rank() == 0 || b0.rank() == 0) fail("MatMul: scalar operands are not allowed");
  Tensor a = a0.rank() == 1 ? a0.reshaped({1, a0.dim(0)}) : a0;
  Tensor b = b0.rank() == 1 ? b0.reshaped({b0.dim(0), 1}) : b0;
  int64_t M = a.dim(a.rank() - 2), K = a.dim(a.rank() - 1), N = b.dim(b.rank() - 1);
  if (b.dim(b.rank() - 2) != K)
    fail("MatMul: inner dimensions differ: {} x {}", shapeStr(a0.shape()), shapeStr(b0.shape()));
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcastShapes(ba, bb);
  Shape out = batch;
  out.push_back(M);
  out.push_back(N);
  Tensor c(DType::F32, out);
  int64_t nb = numel(batch), r = (int64_t)batch.size();
  auto sa = contiguousStrides(ba), sb = contiguousStrides(bb);
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < nb; ++t) {
    int64_t oa = 0, ob = 0;
    for (int64_t d = 0; d < r; ++d) {
      int64_t da = d - (r - (int64_t)ba.size()), db = d - (r - (int64_t)bb.size());
      if (da >= 0 && ba[da] != 1) oa += idx[d] * sa[da];
      if (db >= 0 && bb[db] != 1) ob += idx[d] * sb[db];
    }
    gemmKernel(a.data<float>() + oa * M * K, b.data<float>() + ob * K * N, c.mut<float>() + t * M * N, M, N, K, K, N, N);
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  if (a0.rank() == 1 && b0.rank() == 1) return c.reshaped({});
  if (a0.rank() == 1) { out.erase(out.end() - 2); return c.reshaped(out); }
  if (b0.rank() == 1) { out.pop_back(); return c.reshaped(out); }
  return c;
}

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor* c, float alpha, float beta, bool transA, bool transB) {
  if (a.rank() != 2 || b.rank() != 2) fail("Gemm: operands must be 2-D, got {} and {}", shapeStr(a.shape()), shapeStr(b.shape()));
  Tensor y = matmul(transA ? transpose(a, {1, 0}) : a, transB ? transpose(b, {1, 0}) : b);
  float* p = y.mut<float>();
  for (int64_t i = 0; i < y.numel(); ++i) p[i] *= alpha;
  if (c && beta != 0.f) {
    Tensor bc = binary(BinaryOp::Mul, c->toF32(), Tensor::scalarF32(beta));
    y = binary(BinaryOp::Add, y, bc);
  }
  return y;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias) {
  requireF32(x, "Linear");
  requireF32(w, "Linear");
  if (w.rank() != 2 || x.rank() < 1 || x.dim(x.rank() - 1) != w.dim(1))
    fail("Linear: input {} does not match weight {} ([out, in])", shapeStr(x.shape()), shapeStr(w.shape()));
  int64_t K = w.dim(1), N = w.dim(0), M = x.numel() / std::max<int64_t>(K, 1);
  Shape out = x.shape();
  out.back() = N;
  Tensor y(DType::F32, out);
  const float *px = x.data<float>(), *pw = w.data<float>();
  float* py = y.mut<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += px[m * K + k] * pw[n * K + k];
      py[m * N + n] = acc;
    }
  if (bias) {
    if (bias->numel() != N) fail("Linear: bias has {} elements, expected {}", bias->numel(), N);
    Tensor b = bias->toF32();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) py[m * N + n] += b.data<float>()[n];
  }
  return y;
}

namespace {
// A fresh f32 tensor of x's shape, `line(in, out, d, stride)` having filled
// each line of it along `axis` (d elements `stride` apart) from x's line.
template <typename Line>
Tensor alongAxis(const Tensor& x, int64_t axis, const char* op, Line line) {
  requireF32(x, op);
  int64_t a = normAxis(axis, x.rank()), d = x.dim(a), outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= x.dim(i);
  for (int64_t i = a + 1; i < x.rank(); ++i) inner *= x.dim(i);
  Tensor y(DType::F32, x.shape());
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t j = 0; j < inner; ++j) line(x.data<float>() + i * d * inner + j, y.mut<float>() + i * d * inner + j, d, inner);
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) {
  return alongAxis(x, axis, "Softmax", [](const float* p, float* o, int64_t d, int64_t st) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < d; ++t) m = std::max(m, p[t * st]);
    float s = 0;
    for (int64_t t = 0; t < d; ++t) s += (o[t * st] = std::isinf(m) && m < 0 ? 0.f : std::exp(p[t * st] - m));
    for (int64_t t = 0; t < d; ++t) o[t * st] = s > 0 ? o[t * st] / s : 0.f;
  });
}

Tensor logSoftmax(const Tensor& x, int64_t axis) {
  return alongAxis(x, axis, "LogSoftmax", [](const float* p, float* o, int64_t d, int64_t st) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < d; ++t) m = std::max(m, p[t * st]);
    double s = 0;
    for (int64_t t = 0; t < d; ++t) s += std::exp((double)p[t * st] - m);
    const float lse = m + (float)std::log(s);
    for (int64_t t = 0; t < d; ++t) o[t * st] = p[t * st] - lse;
  });
}

Tensor reduce(ReduceOp op, const Tensor& x0, std::vector<int64_t> axes, bool keepdims, bool noopWithEmptyAxes) {
  bool isInt = x0.dtype() == DType::I64 || x0.dtype() == DType::I32;
  Tensor x = x0.toF32();
  int64_t r = x.rank();
  if (axes.empty()) {
    if (noopWithEmptyAxes) return x0;
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  std::vector<bool> red(r, false);
  for (int64_t a : axes) red[normAxis(a, r)] = true;
  Shape out, kept;
  for (int64_t i = 0; i < r; ++i) {
    if (red[i]) { if (keepdims) out.push_back(1); kept.push_back(1); }
    else { out.push_back(x.dim(i)); kept.push_back(x.dim(i)); }
  }
  Tensor y(DType::F32, kept);
  int64_t count = x.numel() / std::max<int64_t>(y.numel(), 1);
  float init = op == ReduceOp::Max ? -std::numeric_limits<float>::infinity()
             : op == ReduceOp::Min ? std::numeric_limits<float>::infinity() : 0.f;
  float* o = y.mut<float>();
  std::fill(o, o + y.numel(), init);
  auto ks = contiguousStrides(kept);
  std::vector<int64_t> idx(r, 0);
  const float* p = x.data<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += red[d] ? 0 : idx[d] * ks[d];
    float v = p[i];
    o[off] = op == ReduceOp::Max ? std::max(o[off], v) : op == ReduceOp::Min ? std::min(o[off], v) : o[off] + v;
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[d] < x.dim(d)) break;
      idx[d] = 0;
    }
  }
  if (op == ReduceOp::Mean)
    for (int64_t i = 0; i < y.numel(); ++i) o[i] /= (float)count;
  Tensor res = y.reshaped(out);
  return isInt ? res.cast(x0.dtype()) : res;
}

}  // namespace strata::ops
