// The LLM ops of ONNX opset 23 (RMSNormalization, RotaryEmbedding, Attention)
// and of onnxruntime's com.microsoft domain (GroupQueryAttention,
// SkipSimplifiedLayerNormalization's norm, FusedMatMul), as reference
// kernels: an imported graph runs before region formation raises them to
// strata's ops, and the raising is checked against them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/reference.h"

namespace strata::ops {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// [B, S, H * D] -> [B, H, S, D].
Tensor splitHeads(const Tensor& x, int64_t heads, const char* what) {
  if (x.rank() != 3 || heads <= 0 || x.dim(2) % heads)
    fail("{}: {} is not [B, S, heads * D] with {} heads", what, shapeStr(x.shape()), heads);
  return transpose(x.reshaped({x.dim(0), x.dim(1), heads, x.dim(2) / heads}), {0, 2, 1, 3});
}

// [B, H, S, D] -> [B, S, H * D].
Tensor mergeHeads(const Tensor& x) {
  Tensor t = transpose(x, {0, 2, 1, 3});
  return t.reshaped({x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

// Rotates the first R dims of every [D] row of x [B, H, S, D]; the angle
// table row of (b, s) is row(b, s) of cos/sin (R/2 entries each).
template <typename Row>
Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t R, bool interleaved, Row row) {
  int64_t B = x.dim(0), H = x.dim(1), S = x.dim(2), D = x.dim(3), half = R / 2;
  if (R % 2 || R > D || R <= 0) fail("rotary embedding: rotary dim {} does not fit head dim {}", R, D);
  Tensor xf = x.toF32(), c = cos.toF32(), sn = sin.toF32(), y(DType::F32, x.shape());
  std::copy(xf.data<float>(), xf.data<float>() + xf.numel(), y.mut<float>());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        int64_t r = row(b, s);
        const float* C = c.data<float>() + r * half;
        const float* Sn = sn.data<float>() + r * half;
        const float* p = xf.data<float>() + ((b * H + h) * S + s) * D;
        float* o = y.mut<float>() + ((b * H + h) * S + s) * D;
        for (int64_t i = 0; i < half; ++i) {
          int64_t a = interleaved ? 2 * i : i, bi = interleaved ? 2 * i + 1 : i + half;
          o[a] = p[a] * C[i] - p[bi] * Sn[i];
          o[bi] = p[bi] * C[i] + p[a] * Sn[i];
        }
      }
  return y;
}

}  // namespace

Tensor rmsNormAxes(const Tensor& x, const Tensor& scale, int64_t axis, float eps) {
  int64_t r = x.rank();
  if (axis < -r || axis >= r) fail("rms normalization: axis {} is out of range for rank {}", axis, r);
  if (axis < 0) axis += r;
  int64_t inner = 1;
  for (int64_t i = axis; i < r; ++i) inner *= x.dim(i);
  if (scale.numel() != inner)
    fail("rms normalization: scale {} does not cover the normalized dims of {}", shapeStr(scale.shape()), shapeStr(x.shape()));
  Tensor y = rmsNorm(x.toF32().reshaped({x.numel() / std::max<int64_t>(inner, 1), inner}), scale.reshaped({inner}), eps);
  return y.reshaped(x.shape());
}

Tensor layerNorm(const Tensor& x0, const Tensor& scale, const Tensor* bias, int64_t axis, float eps) {
  const Tensor x = x0.toF32();
  const int64_t r = x.rank();
  if (axis < -r || axis >= r) fail("LayerNormalization: axis {} is out of range for rank {}", axis, r);
  if (axis < 0) axis += r;
  int64_t inner = 1;
  for (int64_t i = axis; i < r; ++i) inner *= x.dim(i);
  if (scale.numel() != inner || (bias && bias->numel() != inner))
    fail("LayerNormalization: scale {} / bias {} do not cover the normalized dims of {}", shapeStr(scale.shape()),
         bias ? shapeStr(bias->shape()) : std::string("none"), shapeStr(x.shape()));
  const Tensor s = scale.toF32(), b = bias ? bias->toF32() : Tensor();
  Tensor y(DType::F32, x.shape());
  const float* p = x.data<float>();
  float* o = y.mut<float>();
  for (int64_t row = 0; row < (inner ? x.numel() / inner : 0); ++row, p += inner, o += inner) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += p[i];
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i) var += (p[i] - mean) * (p[i] - mean);
    const float inv = 1.f / std::sqrt(float(var / inner) + eps);
    for (int64_t i = 0; i < inner; ++i)
      o[i] = (p[i] - float(mean)) * inv * s.data<float>()[i] + (bias ? b.data<float>()[i] : 0.f);
  }
  return y;
}

Tensor gelu(const Tensor& x0, bool tanhApproximation) {
  const Tensor x = x0.toF32();
  Tensor y(DType::F32, x.shape());
  const float* p = x.data<float>();
  float* o = y.mut<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = p[i];
    o[i] = tanhApproximation ? 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)))
                             : 0.5f * v * (1.f + std::erf(v * 0.7071067812f));
  }
  return y;
}

Tensor rotaryEmbedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor* positions, bool interleaved,
                       int64_t rotaryDim, int64_t numHeads) {
  bool tokenMajor = x.rank() == 3;
  if (x.rank() != 4 && !tokenMajor) fail("RotaryEmbedding: input {} is neither 4-D nor 3-D", shapeStr(x.shape()));
  Tensor x4 = tokenMajor ? splitHeads(x, numHeads, "RotaryEmbedding") : x;
  int64_t B = x4.dim(0), S = x4.dim(2), R = rotaryDim ? rotaryDim : x4.dim(3);
  if (cos.shape() != sin.shape() || cos.dim(cos.rank() - 1) != R / 2)
    fail("RotaryEmbedding: cos {} / sin {} are not [..., {}]", shapeStr(cos.shape()), shapeStr(sin.shape()), R / 2);
  Tensor y;
  if (positions) {
    auto pos = positions->toI64Vector();
    int64_t rows = cos.numel() / (R / 2);
    if ((int64_t)pos.size() != B * S) fail("RotaryEmbedding: position_ids {} are not [B={}, S={}]", shapeStr(positions->shape()), B, S);
    for (int64_t p : pos)
      if (p < 0 || p >= rows) fail("RotaryEmbedding: position {} is outside the {}-row cos/sin cache", p, rows);
    y = rotate(x4, cos, sin, R, interleaved, [&](int64_t b, int64_t s) { return pos[b * S + s]; });
  } else {
    if (cos.rank() != 3 || cos.dim(0) != B || cos.dim(1) != S)
      fail("RotaryEmbedding: without position_ids cos/sin must be [B={}, S={}, {}], got {}", B, S, R / 2, shapeStr(cos.shape()));
    y = rotate(x4, cos, sin, R, interleaved, [&](int64_t b, int64_t s) { return b * S + s; });
  }
  return tokenMajor ? mergeHeads(y) : y;
}

std::vector<Tensor> onnxAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor* pastK,
                                  const Tensor* pastV, const OnnxAttentionSpec& s) {
  bool tokenMajor = q.rank() == 3;
  if (k.rank() != q.rank() || v.rank() != q.rank() || (q.rank() != 3 && q.rank() != 4))
    fail("Attention: Q {}, K {}, V {} must all be 3-D or all 4-D", shapeStr(q.shape()), shapeStr(k.shape()), shapeStr(v.shape()));
  Tensor q4 = tokenMajor ? splitHeads(q, s.qHeads, "Attention Q") : q;
  Tensor k4 = tokenMajor ? splitHeads(k, s.kvHeads, "Attention K") : k;
  Tensor v4 = tokenMajor ? splitHeads(v, s.kvHeads, "Attention V") : v;
  if ((pastK != nullptr) != (pastV != nullptr)) fail("Attention: past_key and past_value come together");
  if (pastK) k4 = concat({*pastK, k4}, 2), v4 = concat({*pastV, v4}, 2);
  int64_t B = q4.dim(0), H = q4.dim(1), S = q4.dim(2), T = k4.dim(2);
  float scale = s.scale != 0 ? s.scale : 1.f / std::sqrt((float)q4.dim(3));
  // The mask, broadcast to [B, H, S, maskT] (maskT <= T; keys past it are masked).
  Tensor m;
  Shape m4;
  if (mask) {
    if (mask->rank() > 4 || mask->rank() < 2) fail("Attention: attn_mask {} is not 2-D to 4-D", shapeStr(mask->shape()));
    m4 = mask->shape();
    while (m4.size() < 4) m4.insert(m4.begin(), 1);
    if ((m4[0] != 1 && m4[0] != B) || (m4[1] != 1 && m4[1] != H) || (m4[2] != 1 && m4[2] != S) || m4[3] > T)
      fail("Attention: attn_mask {} does not broadcast to [B={}, H={}, S={}, T={}]", shapeStr(mask->shape()), B, H, S, T);
    m = mask->dtype() == DType::Bool ? *mask : mask->toF32();
  }
  auto bias = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> float {
    if (s.causal && j > i) return kMasked;
    if (!m.defined()) return 0.f;
    if (j >= m4[3]) return kMasked;
    int64_t at = (((m4[0] == 1 ? 0 : b) * m4[1] + (m4[1] == 1 ? 0 : h)) * m4[2] + (m4[2] == 1 ? 0 : i)) * m4[3] + j;
    if (m.dtype() == DType::Bool) return m.data<uint8_t>()[at] ? 0.f : kMasked;
    return m.data<float>()[at];
  };
  Tensor y = attendBiased(q4, k4, v4, scale, s.softcap, bias);
  return {tokenMajor ? mergeHeads(y) : y, k4, v4};
}

std::vector<Tensor> groupQueryAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* pastK,
                                        const Tensor* pastV, const Tensor& seqlensK, const Tensor& totalSeqLen,
                                        const Tensor* cos, const Tensor* sin, const GqaSpec& s) {
  Tensor q4 = splitHeads(q, s.heads, "GroupQueryAttention query");
  Tensor k4 = splitHeads(k, s.kvHeads, "GroupQueryAttention key");
  Tensor v4 = splitHeads(v, s.kvHeads, "GroupQueryAttention value");
  int64_t B = q4.dim(0), S = q4.dim(2), D = q4.dim(3), Hk = s.kvHeads, P = pastK ? pastK->dim(2) : 0;
  if ((pastK != nullptr) != (pastV != nullptr)) fail("GroupQueryAttention: past_key and past_value come together");
  if (s.localWindow != -1) fail("GroupQueryAttention: local_window_size {} (sliding window) is not supported", s.localWindow);
  auto lens = seqlensK.toI64Vector();
  int64_t total = totalSeqLen.toI64Vector().at(0);
  if ((int64_t)lens.size() != B) fail("GroupQueryAttention: seqlens_k {} is not [B={}]", shapeStr(seqlensK.shape()), B);
  std::vector<int64_t> pastLen(B);
  for (int64_t b = 0; b < B; ++b) {
    int64_t L = lens[b] + 1;
    pastLen[b] = L - S;
    if (pastLen[b] < 0 || pastLen[b] > P || L > total)
      fail("GroupQueryAttention: sequence {} holds {} tokens after this step, which does not fit {} new, {} past, {} total",
           b, L, S, P, total);
  }
  if (s.doRotary) {
    if (!cos || !sin) fail("GroupQueryAttention: do_rotary needs cos_cache and sin_cache");
    std::vector<int64_t> pos(B * S);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < S; ++i) pos[b * S + i] = pastLen[b] + i;
    Tensor p = Tensor::fromI64(pos, {B, S});
    int64_t R = 2 * cos->dim(cos->rank() - 1);
    q4 = rotaryEmbedding(q4, *cos, *sin, &p, s.rotaryInterleaved, R, s.heads);
    k4 = rotaryEmbedding(k4, *cos, *sin, &p, s.rotaryInterleaved, R, s.kvHeads);
  }
  // present: the first pastLen[b] cached entries, then the new ones; zeros after.
  int64_t T = std::max(P, total);
  Tensor present[2] = {Tensor(DType::F32, {B, Hk, T, D}), Tensor(DType::F32, {B, Hk, T, v4.dim(3)})};
  const Tensor* past[2] = {pastK, pastV};
  const Tensor fresh[2] = {k4.toF32(), v4.toF32()};
  for (int kv = 0; kv < 2; ++kv) {
    int64_t Dx = present[kv].dim(3);
    Tensor pf = past[kv] ? past[kv]->toF32() : Tensor();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hk; ++h) {
        float* dst = present[kv].mut<float>() + (b * Hk + h) * T * Dx;
        if (pf.defined()) std::copy_n(pf.data<float>() + (b * Hk + h) * P * Dx, pastLen[b] * Dx, dst);
        std::copy_n(fresh[kv].data<float>() + (b * Hk + h) * S * Dx, S * Dx, dst + pastLen[b] * Dx);
      }
  }
  float scale = s.scale != 0 ? s.scale : 1.f / std::sqrt((float)D);
  Tensor y = attendBiased(q4, present[0], present[1], scale, s.softcap, [&](int64_t b, int64_t, int64_t i, int64_t j) {
    return j <= pastLen[b] + i ? 0.f : kMasked;
  });
  return {mergeHeads(y), present[0], present[1]};
}

Tensor fusedMatMul(const Tensor& a, const Tensor& b, float alpha, bool transA, bool transB) {
  auto swapLast = [](const Tensor& x) {
    if (x.rank() < 2) fail("FusedMatMul: a transposed operand needs rank >= 2, got {}", shapeStr(x.shape()));
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < x.rank(); ++i) perm.push_back(i);
    std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
    return transpose(x, perm);
  };
  Tensor y = matmul(transA ? swapLast(a) : a, transB ? swapLast(b) : b);
  if (alpha != 1.f) y = binary(BinaryOp::Mul, y, Tensor::scalarF32(alpha));
  return y;
}

}  // namespace strata::ops
