// Region reference kernels (f32, accumulate in f32, same summation order as
// ops::matmul / ops::attention so that region graphs reproduce unfused ones).
#include "ops/regions.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/error.h"
#include "ops/reference.h"

namespace strata::ops {

namespace {

void requireF32(const Tensor& t, const char* what, const char* region) {
  if (t.dtype() != DType::F32) fail("{}: {} must be f32, got {}", region, what, dtypeName(t.dtype()));
}

}  // namespace

std::vector<Tensor> gemmRegion(const Tensor& x, const std::vector<Tensor>& weights, const std::vector<Tensor>& biases,
                               const Tensor* residual, const Tensor* rows, const GemmSpec& spec) {
  if (weights.empty()) fail("gemm: no weights");
  if (!biases.empty() && biases.size() != weights.size()) fail("gemm: {} biases for {} weights", biases.size(), weights.size());
  if ((spec.epilogue == GemmEpilogue::SwiGLU || spec.epilogue == GemmEpilogue::GeGLU) && weights.size() != 2)
    fail("gemm: a gated epilogue needs 2 weights, got {}", weights.size());
  if (spec.epilogue == GemmEpilogue::GeluTanh && weights.size() != 1) fail("gemm: gelu needs 1 weight, got {}", weights.size());
  requireF32(x, "x", "gemm");
  if (x.rank() < 1) fail("gemm: x must have rank >= 1");
  int64_t K = x.dim(x.rank() - 1), R = K ? x.numel() / K : 0;
  const float* px = x.data<float>();
  // Output row r reads x row rowIdx[r].
  std::vector<int64_t> rowIdx;
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  if (rows) {
    rowIdx = rows->toI64Vector();
    for (int64_t r : rowIdx)
      if (r < 0 || r >= R) fail("gemm: row {} out of range [0, {})", r, R);
    if (lead.empty() || lead.back() != R) fail("gemm: rows need x as [1, .., T, K], got {}", shapeStr(x.shape()));
    lead.back() = (int64_t)rowIdx.size();
  } else {
    for (int64_t r = 0; r < R; ++r) rowIdx.push_back(r);
  }
  auto product = [&](size_t i) {
    const Tensor& w = weights[i];
    requireF32(w, "weight", "gemm");
    if (w.rank() != 2 || w.dim(spec.weightsNK ? 1 : 0) != K)
      fail("gemm: weight {} does not take K = {} ({} layout)", shapeStr(w.shape()), K, spec.weightsNK ? "[N, K]" : "[K, N]");
    int64_t N = w.dim(spec.weightsNK ? 0 : 1);
    const float* pw = w.data<float>();
    const float* pb = nullptr;
    if (!biases.empty() && biases[i].defined()) {
      requireF32(biases[i], "bias", "gemm");
      if (biases[i].numel() != N) fail("gemm: bias {} does not match N = {}", shapeStr(biases[i].shape()), N);
      pb = biases[i].data<float>();
    }
    Shape s = lead;
    s.push_back(N);
    Tensor y(DType::F32, s);
    float* py = y.mut<float>();
    for (size_t r = 0; r < rowIdx.size(); ++r) {
      const float* xr = px + rowIdx[r] * K;
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0;
        if (spec.weightsNK)
          for (int64_t k = 0; k < K; ++k) acc += xr[k] * pw[n * K + k];
        else
          for (int64_t k = 0; k < K; ++k) acc += xr[k] * pw[k * N + n];
        py[r * N + n] = pb ? acc + pb[n] : acc;
      }
    }
    return y;
  };
  std::vector<Tensor> outs;
  if (spec.epilogue == GemmEpilogue::SwiGLU) {
    Tensor g = product(0), u = product(1);
    if (g.shape() != u.shape()) fail("gemm: swiglu gate {} and up {} differ", shapeStr(g.shape()), shapeStr(u.shape()));
    float* pg = g.mut<float>();
    const float* pu = u.data<float>();
    for (int64_t i = 0; i < g.numel(); ++i) pg[i] = pg[i] / (1.f + std::exp(-pg[i])) * pu[i];
    outs.push_back(g);
  } else if (spec.epilogue == GemmEpilogue::GeGLU) {
    Tensor g = gelu(product(0), /*tanhApproximation=*/true), u = product(1);
    if (g.shape() != u.shape()) fail("gemm: geglu gate {} and up {} differ", shapeStr(g.shape()), shapeStr(u.shape()));
    float* pg = g.mut<float>();
    for (int64_t i = 0; i < g.numel(); ++i) pg[i] *= u.data<float>()[i];
    outs.push_back(g);
  } else if (spec.epilogue == GemmEpilogue::GeluTanh) {
    outs.push_back(gelu(product(0), /*tanhApproximation=*/true));
  } else {
    for (size_t i = 0; i < weights.size(); ++i) outs.push_back(product(i));
  }
  if (residual) {
    if (outs.size() != 1) fail("gemm: a residual needs a single output, have {}", outs.size());
    requireF32(*residual, "residual", "gemm");
    if (residual->numel() != outs[0].numel())
      fail("gemm: residual {} does not match output {}", shapeStr(residual->shape()), shapeStr(outs[0].shape()));
    float* py = outs[0].mut<float>();
    // Residual first, like the exporters' Add(residual, proj).
    for (int64_t i = 0; i < outs[0].numel(); ++i) py[i] = residual->data<float>()[i] + py[i];
    outs[0] = outs[0].reshaped(residual->shape());
  }
  return outs;
}

namespace {
std::vector<float> ropeInvFreq(int64_t headDim, float theta) {
  std::vector<float> invFreq(headDim / 2);
  for (int64_t i = 0; i < headDim / 2; ++i) invFreq[i] = 1.f / std::pow(theta, (float)(2 * i) / (float)headDim);
  return invFreq;
}
float ropeAngle(int64_t position, float invFreq) { return (float)position * invFreq; }
}  // namespace

RopeTables ropeTables(int64_t positions, int64_t headDim, float theta) {
  if (positions <= 0 || headDim <= 0 || headDim % 2) fail("rope tables: {} positions of head dim {}", positions, headDim);
  int64_t half = headDim / 2;
  std::vector<float> invFreq = ropeInvFreq(headDim, theta);
  RopeTables t{Tensor(DType::F32, {positions, half}), Tensor(DType::F32, {positions, half})};
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < half; ++i) {
      float ang = ropeAngle(p, invFreq[i]);
      t.cos.mut<float>()[p * half + i] = std::cos(ang);
      t.sin.mut<float>()[p * half + i] = std::sin(ang);
    }
  return t;
}

Tensor ropeTokens(const Tensor& x, const Tensor& positions, int64_t headDim, float theta, int64_t rotaryDim) {
  requireF32(x, "x", "rope");
  const int64_t R = rotaryDim ? rotaryDim : headDim;
  if (x.rank() < 2 || headDim <= 0 || R <= 0 || R % 2 || R > headDim || x.dim(x.rank() - 1) % headDim)
    fail("rope: x {} is not [..., S, heads * {}] with an even rotary dim ({}) within it", shapeStr(x.shape()), headDim, R);
  int64_t F = x.dim(x.rank() - 1), tokens = x.numel() / F, heads = F / headDim, half = R / 2;
  auto pos = positions.toI64Vector();
  if ((int64_t)pos.size() != tokens) fail("rope: {} positions for {} tokens", pos.size(), tokens);
  std::vector<float> invFreq = ropeInvFreq(R, theta);
  Tensor y(DType::F32, x.shape());  // dims past the rotary ones pass through
  std::memcpy(y.mut<float>(), x.data<float>(), x.nbytes());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const float* p = x.data<float>() + t * F + h * headDim;
      float* o = y.mut<float>() + t * F + h * headDim;
      for (int64_t i = 0; i < half; ++i) {
        float ang = ropeAngle(pos[t], invFreq[i]), c = std::cos(ang), sn = std::sin(ang);
        o[i] = p[i] * c - p[i + half] * sn;
        o[i + half] = p[i + half] * c + p[i] * sn;
      }
    }
  return y;
}

Tensor kvWrite(const Tensor& cache, const Tensor& k, const Tensor& v, const Tensor& slotMapping) {
  requireF32(cache, "cache", "kv_write");
  requireF32(k, "k", "kv_write");
  requireF32(v, "v", "kv_write");
  if (cache.rank() != 5 || cache.dim(1) != 2)
    fail("kv_write: cache {} is not [num_blocks, 2, kv_heads, block_size, head_dim]", shapeStr(cache.shape()));
  int64_t NB = cache.dim(0), H = cache.dim(2), BS = cache.dim(3), D = cache.dim(4);
  auto slots = slotMapping.toI64Vector();
  int64_t T = (int64_t)slots.size();
  if (k.numel() != T * H * D || v.numel() != T * H * D)
    fail("kv_write: k {} / v {} are not {} tokens of {} kv heads x {}", shapeStr(k.shape()), shapeStr(v.shape()), T, H, D);
  float* pc = const_cast<float*>(cache.data<float>());  // the cache is updated in place by contract
  for (int64_t t = 0; t < T; ++t) {
    if (slots[t] < 0) continue;
    int64_t blk = slots[t] / BS, off = slots[t] % BS;
    if (blk >= NB) fail("kv_write: slot {} is beyond the cache's {} blocks of {}", slots[t], NB, BS);
    for (int64_t kv = 0; kv < 2; ++kv) {
      const float* src = (kv ? v : k).data<float>() + t * H * D;
      for (int64_t h = 0; h < H; ++h)
        std::copy(src + h * D, src + (h + 1) * D, pc + (((blk * 2 + kv) * H + h) * BS + off) * D);
    }
  }
  return cache;
}

Tensor pagedAttention(const Tensor& q, const Tensor& cache, const Tensor& blockTables, const Tensor& seqStarts,
                      const Tensor& contextLens, const PagedAttentionSpec& spec) {
  requireF32(q, "q", "paged_attention");
  requireF32(cache, "cache", "paged_attention");
  int64_t Hq = spec.heads, Hk = spec.kvHeads, D = spec.headDim;
  if (Hq <= 0 || Hk <= 0 || D <= 0 || Hq % Hk) fail("paged_attention: heads {} / kv heads {} / head dim {} invalid", Hq, Hk, D);
  if (cache.rank() != 5 || cache.dim(1) != 2 || cache.dim(2) != Hk || cache.dim(4) != D)
    fail("paged_attention: cache {} is not [num_blocks, 2, {}, block_size, {}]", shapeStr(cache.shape()), Hk, D);
  int64_t BS = cache.dim(3), NB = cache.dim(0), F = Hq * D;
  if (q.rank() < 1 || q.dim(q.rank() - 1) != F) fail("paged_attention: q {} is not [..., T, {}]", shapeStr(q.shape()), F);
  int64_t T = q.numel() / F;
  auto starts = seqStarts.toI64Vector();
  auto ctx = contextLens.toI64Vector();
  if (blockTables.rank() != 2) fail("paged_attention: block_tables {} is not [N, max_blocks]", shapeStr(blockTables.shape()));
  auto tables = blockTables.toI64Vector();
  int64_t N = (int64_t)ctx.size(), MB = blockTables.dim(1);
  if ((int64_t)starts.size() != N + 1 || blockTables.dim(0) != N || starts.front() != 0 || starts.back() != T)
    fail("paged_attention: seq_starts {} / context_lens {} / block_tables {} do not describe {} tokens",
         shapeStr(seqStarts.shape()), shapeStr(contextLens.shape()), shapeStr(blockTables.shape()), T);
  Tensor o(DType::F32, q.shape());
  const float* pc = cache.data<float>();
  int64_t group = Hq / Hk;
  std::vector<float> sc;
  for (int64_t n = 0; n < N; ++n) {
    int64_t qLen = starts[n + 1] - starts[n];
    if (qLen < 0 || ctx[n] < qLen || ctx[n] > MB * BS)
      fail("paged_attention: sequence {} has {} new tokens, context {}, room for {}", n, qLen, ctx[n], MB * BS);
    sc.resize(ctx[n]);
    for (int64_t i = 0; i < qLen; ++i) {
      int64_t t = starts[n] + i, visible = ctx[n] - qLen + i + 1;
      for (int64_t h = 0; h < Hq; ++h) {
        int64_t kh = h / group;
        auto row = [&](int64_t p, int64_t kv) {
          int64_t blk = tables[n * MB + p / BS];
          if (blk < 0 || blk >= NB) fail("paged_attention: sequence {} position {} maps to block {} of {}", n, p, blk, NB);
          return pc + (((blk * 2 + kv) * Hk + kh) * BS + p % BS) * D;
        };
        const float* Q = q.data<float>() + t * F + h * D;
        float m = -std::numeric_limits<float>::infinity(), sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          const float* K = row(j, 0);
          float acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += Q[d] * K[d];
          sc[j] = acc * spec.scale;
          m = std::max(m, sc[j]);
        }
        for (int64_t j = 0; j < visible; ++j) sum += (sc[j] = std::exp(sc[j] - m));
        float* O = o.mut<float>() + t * F + h * D;
        for (int64_t j = 0; j < visible; ++j) {
          const float* V = row(j, 1);
          for (int64_t d = 0; d < D; ++d) O[d] += sc[j] / sum * V[d];
        }
      }
    }
  }
  return o;
}

}  // namespace strata::ops
