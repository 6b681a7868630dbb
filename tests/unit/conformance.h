// Helpers shared by the conformance tests of generated kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>

#include "ops/abi.h"
#include "ops/tensor.h"

namespace strata::ops {
// gtest prints parameters through this (found by argument-dependent lookup).
inline void PrintTo(DType t, std::ostream* os) { *os << dtypeName(t); }
}  // namespace strata::ops

namespace strata::testing {

// Uniform in [lo, hi).
inline ops::Tensor randomTensor(ops::Shape shape, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  ops::Tensor t(ops::DType::F32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.mut<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// max |got - want| / max |want|: the error relative to the output's scale.
inline double maxRelError(const ops::Tensor& got, const ops::Tensor& want) {
  double maxAbs = 0, maxRef = 1e-6;
  const float *g = got.data<float>(), *w = want.data<float>();
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = std::abs((double)g[i] - w[i]);
    maxAbs = std::max(maxAbs, d != d ? 1e30 : d);  // NaN counts as a failure
    maxRef = std::max(maxRef, (double)std::abs(w[i]));
  }
  return maxAbs / maxRef;
}

// The bound for a kernel whose f32 result (within `f32Bound` of the
// reference) is stored in `storage`: plus half an ulp of the output's
// largest magnitude (2^-11 for f16, 2^-8 for bf16), with 10 % to spare for
// the f32 arithmetic. Truncating instead of rounding on the store exceeds it.
inline double storageBound(ops::DType storage, double f32Bound) {
  if (storage == ops::DType::F16) return f32Bound + 1.1 * 0x1p-11;
  if (storage == ops::DType::BF16) return f32Bound + 1.1 * 0x1p-8;
  return f32Bound;
}

// `t` as a kernel of storage type `dt` reads it: rounded to `dt`, back in f32.
inline ops::Tensor stored(const ops::Tensor& t, ops::DType dt) { return t.cast(dt).toF32(); }

// One unit in the last place of `dt` (bf16, f16) at |v| (subnormal steps
// below the normal range).
inline double ulp(ops::DType dt, double v) {
  const int mantissa = dt == ops::DType::F16 ? 10 : 7, minExp = dt == ops::DType::F16 ? -14 : -126;
  int e = v == 0 ? minExp : std::max(minExp, std::ilogb(v));
  return std::ldexp(1.0, e - mantissa);
}

// The largest |got - want| of a result stored in `dt`, in units of the
// allowed error: 1e-4 of the output's largest magnitude (f32 arithmetic)
// plus one ulp of `dt` at the element's value (its rounding). Pass: <= 1;
// NaN fails.
inline double worstStoredError(const ops::Tensor& got, const ops::Tensor& want, ops::DType dt) {
  const float *g = got.data<float>(), *w = want.data<float>();
  double maxRef = 0, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) maxRef = std::max(maxRef, (double)std::abs(w[i]));
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = std::abs((double)g[i] - w[i]);
    worst = std::max(worst, d != d ? 1e30 : d / (1e-4 * maxRef + ulp(dt, std::abs(w[i]))));
  }
  return worst;
}

// A GEMM kernel's B argument: `w` as stored ([K, N], or [N, K] when `nk`),
// or panel-packed `packedWidth` wide (abi::packPanels) when that is not 0.
inline ops::Tensor gemmWeight(const ops::Tensor& w, bool nk, int64_t packedWidth) {
  return packedWidth ? abi::packPanels(w, nk, packedWidth) : w;
}

}  // namespace strata::testing
