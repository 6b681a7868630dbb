// LLM building blocks: the high-level ops the HF builder emits directly and
// region formation later matches. Defined to agree with transformers' Llama.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/reference.h"

namespace strata::ops {

Tensor rmsNorm(const Tensor& x, const Tensor& weight, float eps) {
  if (x.dtype() != DType::F32) fail("rms_norm: expected f32 input");
  int64_t d = x.dim(x.rank() - 1), rows = x.numel() / std::max<int64_t>(d, 1);
  if (weight.numel() != d) fail("rms_norm: weight has {} elements, hidden size is {}", weight.numel(), d);
  Tensor w = weight.toF32(), y(DType::F32, x.shape());
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x.data<float>() + r * d;
    float ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += p[i] * p[i];
    float inv = 1.f / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) y.mut<float>()[r * d + i] = p[i] * inv * w.data<float>()[i];
  }
  return y;
}

Tensor rope(const Tensor& x, const Tensor& positions, float theta, int64_t rotaryDim) {
  if (x.rank() != 4 || x.dtype() != DType::F32) fail("rope: expected f32 [B, H, S, D], got {}", shapeStr(x.shape()));
  int64_t B = x.dim(0), H = x.dim(1), S = x.dim(2), D = x.dim(3);
  const int64_t R = rotaryDim ? rotaryDim : D, half = R / 2;
  if (R % 2 || R < 0 || R > D) fail("rope: rotary dim {} is odd or outside head dim {}", R, D);
  auto pos = positions.toI64Vector();
  if ((int64_t)pos.size() != B * S) fail("rope: positions {} do not match [B={}, S={}]", shapeStr(positions.shape()), B, S);
  Tensor y(DType::F32, x.shape());  // dims past the rotary ones pass through
  std::memcpy(y.mut<float>(), x.data<float>(), x.nbytes());
  std::vector<float> invFreq(half);
  for (int64_t i = 0; i < half; ++i) invFreq[i] = 1.f / std::pow(theta, (float)(2 * i) / (float)R);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const float* p = x.data<float>() + ((b * H + h) * S + s) * D;
        float* o = y.mut<float>() + ((b * H + h) * S + s) * D;
        for (int64_t i = 0; i < half; ++i) {
          float ang = (float)pos[b * S + s] * invFreq[i], c = std::cos(ang), sn = std::sin(ang);
          o[i] = p[i] * c - p[i + half] * sn;
          o[i + half] = p[i + half] * c + p[i] * sn;
        }
      }
  return y;
}

Tensor attendBiased(const Tensor& q, const Tensor& k, const Tensor& v, float scale, float softcap, const AttentionBias& bias) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) fail("attention: q/k/v must be rank 4");
  int64_t B = q.dim(0), Hq = q.dim(1), S = q.dim(2), D = q.dim(3), Hk = k.dim(1), T = k.dim(2);
  if (k.dim(0) != B || v.dim(0) != B || k.dim(3) != D || v.dim(1) != Hk || v.dim(2) != T || Hk == 0 || Hq % Hk)
    fail("attention: shapes q {} k {} v {} do not agree", shapeStr(q.shape()), shapeStr(k.shape()), shapeStr(v.shape()));
  Tensor qf = q.toF32(), kf = k.toF32(), vf = v.toF32();
  int64_t Dv = v.dim(3), group = Hq / Hk;
  const float kMasked = -std::numeric_limits<float>::infinity();
  Tensor o(DType::F32, {B, Hq, S, Dv});
  std::vector<float> sc(T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t kh = h / group;
      const float* K = kf.data<float>() + (b * Hk + kh) * T * D;
      const float* V = vf.data<float>() + (b * Hk + kh) * T * Dv;
      for (int64_t i = 0; i < S; ++i) {
        const float* Q = qf.data<float>() + ((b * Hq + h) * S + i) * D;
        float m = kMasked, sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          float add = bias(b, h, i, j);
          if (add == kMasked) { sc[j] = kMasked; continue; }
          float acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += Q[d] * K[j * D + d];
          acc *= scale;
          if (softcap > 0) acc = softcap * std::tanh(acc / softcap);
          sc[j] = acc + add;
          m = std::max(m, sc[j]);
        }
        float* O = o.mut<float>() + ((b * Hq + h) * S + i) * Dv;
        if (m == kMasked) continue;  // no visible key: zeros
        for (int64_t j = 0; j < T; ++j) sum += (sc[j] = sc[j] == kMasked ? 0.f : std::exp(sc[j] - m));
        for (int64_t j = 0; j < T; ++j)
          if (sc[j] != 0.f)
            for (int64_t d = 0; d < Dv; ++d) O[d] += sc[j] / sum * V[j * Dv + d];
      }
    }
  return o;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, bool causal, const Tensor* keyMask) {
  if (q.rank() != 4 || k.rank() != 4) fail("attention: q/k/v must be rank 4");
  int64_t B = q.dim(0), S = q.dim(2), T = k.dim(2);
  if (causal && T < S) fail("attention: causal with fewer keys ({}) than queries ({})", T, S);
  std::vector<int64_t> keep;
  if (keyMask) {
    keep = keyMask->toI64Vector();
    if ((int64_t)keep.size() != B * T) fail("attention: key mask {} is not [B={}, T={}]", shapeStr(keyMask->shape()), B, T);
  }
  const float kMasked = -std::numeric_limits<float>::infinity();
  return attendBiased(q, k, v, scale, 0.f, [&](int64_t b, int64_t, int64_t i, int64_t j) {
    bool visible = (!causal || j <= T - S + i) && (keep.empty() || keep[b * T + j] != 0);
    return visible ? 0.f : kMasked;
  });
}

}  // namespace strata::ops
