#include "ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ops/error.h"

namespace strata::ops {

namespace {

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfToFloat(h);
}

// Q8_0: d (f16), 32 int8 quants: x = d q.
void q8_0(const uint8_t* b, int8_t* q, float* d, float*) {
  *d = half(b);
  for (int i = 0; i < 32; ++i) q[i] = int8_t(b[2 + i]);
}

// Q4_0: d, 16 bytes of nibbles (low nibbles values 0-15, high 16-31): x = d (q - 8).
void q4_0(const uint8_t* b, int8_t* q, float* d, float*) {
  *d = half(b);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t(int(b[2 + i] & 0xF) - 8);
    q[i + 16] = int8_t(int(b[2 + i] >> 4) - 8);
  }
}

// Q5_0: d, 32 fifth bits (u32), nibbles: x = d (q - 16).
void q5_0(const uint8_t* b, int8_t* q, float* d, float*) {
  *d = half(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t(((b[6 + i] & 0xF) | int(((qh >> i) & 1) << 4)) - 16);
    q[i + 16] = int8_t(((b[6 + i] >> 4) | int(((qh >> (i + 16)) & 1) << 4)) - 16);
  }
}

// Q4_1: d, m, nibbles: x = d q + m.
void q4_1(const uint8_t* b, int8_t* q, float* d, float* m) {
  *d = half(b);
  *m = half(b + 2);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t(b[4 + i] & 0xF);
    q[i + 16] = int8_t(b[4 + i] >> 4);
  }
}

// Q5_1: d, m, fifth bits, nibbles: x = d q + m.
void q5_1(const uint8_t* b, int8_t* q, float* d, float* m) {
  *d = half(b);
  *m = half(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t((b[8 + i] & 0xF) | int(((qh >> i) & 1) << 4));
    q[i + 16] = int8_t((b[8 + i] >> 4) | int(((qh >> (i + 16)) & 1) << 4));
  }
}

// The K formats' 6-bit scale and min of sub-block j (of 8) from the 12
// packed bytes: sub-blocks 0-3 in the low 6 bits of bytes j and j + 4, 4-7
// in nibbles of bytes j + 4 with their top 2 bits in bytes j - 4 and j.
void scaleMin(int j, const uint8_t* q, float& sc, float& m) {
  if (j < 4) {
    sc = float(q[j] & 63);
    m = float(q[j + 4] & 63);
  } else {
    sc = float((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = float((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K and Q5_K's scales and offsets: sub-block j of 32 is x = (d sc_j) q
// - dmin m_j (ggml's two f32 products, then the difference: adding the
// negated product is the same operation).
void kScales(const uint8_t* b, float* scale, float* offset) {
  const float d = half(b), dmin = half(b + 2);
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    scaleMin(j, b + 4, sc, m);
    scale[j] = d * sc;
    offset[j] = -(dmin * m);
  }
}

// Q4_K: a super-block of 256 in 8 sub-blocks of 32: d, dmin (f16), 12 bytes
// of 6-bit scales and mins, 128 bytes of nibbles (each 32-byte run holds
// two sub-blocks: low nibbles, then high).
void q4_k(const uint8_t* b, int8_t* q, float* scale, float* offset) {
  kScales(b, scale, offset);
  const uint8_t* n = b + 16;
  for (int j = 0; j < 8; j += 2, n += 32, q += 64)
    for (int l = 0; l < 32; ++l) {
      q[l] = int8_t(n[l] & 0xF);
      q[32 + l] = int8_t(n[l] >> 4);
    }
}

// Q5_K: as Q4_K with a fifth bit per value (32 bytes, bit pair 2j / 2j + 1
// for sub-blocks j, j + 1).
void q5_k(const uint8_t* b, int8_t* q, float* scale, float* offset) {
  kScales(b, scale, offset);
  const uint8_t* qh = b + 16;
  const uint8_t* n = b + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 8; j += 2, n += 32, q += 64, u1 <<= 2, u2 <<= 2)
    for (int l = 0; l < 32; ++l) {
      q[l] = int8_t((n[l] & 0xF) + (qh[l] & u1 ? 16 : 0));
      q[32 + l] = int8_t((n[l] >> 4) + (qh[l] & u2 ? 16 : 0));
    }
}

// Q6_K: 256 values of 6 bits (low 4 in 128 bytes, high 2 in 64), 16 int8
// scales of 16 values each, d (f16): x = (d sc) (q - 32).
void q6_k(const uint8_t* b, int8_t* q, float* scale, float*) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int j = 0; j < 16; ++j) scale[j] = d * float(sc[j]);
  for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, q += 128)
    for (int l = 0; l < 32; ++l) {
      q[l] = int8_t(int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      q[l + 32] = int8_t(int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      q[l + 64] = int8_t(int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      q[l + 96] = int8_t(int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
}

// Scale parts (QuantFormat::scaleParts). The 32-value formats: d (and m)
// are the block's only scale (and offset), f16 values.
void dOnly(const uint8_t* b, float* sup, int8_t*, int8_t*) {
  sup[0] = half(b);
  sup[1] = 0.f;
}
void dAndM(const uint8_t* b, float* sup, int8_t*, int8_t*) {
  sup[0] = half(b);
  sup[1] = half(b + 2);
}
// Q4_K / Q5_K: d and -dmin times each sub-block's 6-bit scale and min
// (kScales' products: -(dmin m) = (-dmin) m exactly).
void kParts(const uint8_t* b, float* sup, int8_t* sub, int8_t* subOffset) {
  sup[0] = half(b);
  sup[1] = -half(b + 2);
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    scaleMin(j, b + 4, sc, m);
    sub[j] = int8_t(sc);
    subOffset[j] = int8_t(m);
  }
}
// Q6_K: d times each sub-block's int8 scale.
void q6Parts(const uint8_t* b, float* sup, int8_t* sub, int8_t* subOffset) {
  sup[0] = half(b + 208);
  sup[1] = 0.f;
  std::memcpy(sub, b + 192, 16);
  std::memset(subOffset, 0, 16);
}

// A block's values from its integers, scales and offsets (one form for
// every format; the order of operations is ggml's).
template <int64_t Elems, int64_t Sub, bool Offsets, void (*Ints)(const uint8_t*, int8_t*, float*, float*)>
void dequantizeInts(const uint8_t* b, float* y) {
  int8_t q[Elems];
  float scale[Elems / Sub], offset[Elems / Sub] = {};
  Ints(b, q, scale, offset);
  for (int64_t i = 0; i < Elems; ++i) {
    y[i] = scale[i / Sub] * float(q[i]);
    if (Offsets) y[i] += offset[i / Sub];
  }
}

template <int64_t Elems, int64_t Sub, bool Offsets, void (*Ints)(const uint8_t*, int8_t*, float*, float*)>
constexpr QuantFormat format(const char* name, int64_t bytes, int64_t bits, int64_t qMin,
                             void (*parts)(const uint8_t*, float*, int8_t*, int8_t*)) {
  return {name, Elems, bytes, Sub, Offsets, bits, qMin, Ints, dequantizeInts<Elems, Sub, Offsets, Ints>, parts};
}

const QuantFormat kFormats[] = {
    format<32, 32, false, q4_0>("Q4_0", 18, 4, -8, dOnly),     format<32, 32, true, q4_1>("Q4_1", 20, 4, 0, dAndM),
    format<32, 32, false, q5_0>("Q5_0", 22, 5, -16, dOnly),    format<32, 32, true, q5_1>("Q5_1", 24, 5, 0, dAndM),
    format<32, 32, false, q8_0>("Q8_0", 34, 8, -128, dOnly),   format<256, 32, true, q4_k>("Q4_K", 144, 4, 0, kParts),
    format<256, 32, true, q5_k>("Q5_K", 176, 5, 0, kParts),    format<256, 16, false, q6_k>("Q6_K", 210, 6, -32, q6Parts),
};

}  // namespace

const QuantFormat* quantFormat(std::string_view name) {
  for (const QuantFormat& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}

std::optional<int64_t> quantizedBytes(const QuantFormat& f, const Shape& shape) {
  if (shape.empty() || shape.back() % f.blockElems) return std::nullopt;
  return numel(shape) / f.blockElems * f.blockBytes;
}

Tensor dequantize(const QuantFormat& f, const uint8_t* data, const Shape& shape) {
  const int64_t n = numel(shape);
  if (!quantizedBytes(f, shape))
    fail("{} rows of {} values are not whole blocks of {}", f.name, shape.empty() ? 0 : shape.back(), f.blockElems);
  Tensor out(DType::F32, shape);
  float* y = out.mut<float>();
  for (int64_t b = 0; b < n / f.blockElems; ++b) f.dequantizeBlock(data + b * f.blockBytes, y + b * f.blockElems);
  return out;
}

std::vector<uint8_t> randomBlocks(const QuantFormat& f, int64_t count, uint64_t seed, float scale) {
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  // Where each format keeps its f16 fields: d (and m / dmin after it) at
  // the start, Q6_K's d at its end.
  const std::string_view name = f.name;
  const std::vector<int64_t> halves = name == "Q6_K"                                        ? std::vector<int64_t>{208}
                                      : name == "Q8_0" || name == "Q4_0" || name == "Q5_0" ? std::vector<int64_t>{0}
                                                                                            : std::vector<int64_t>{0, 2};
  std::vector<uint8_t> out(size_t(count * f.blockBytes));
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* b = out.data() + i * f.blockBytes;
    const uint64_t key = mix(seed ^ mix(uint64_t(i)));
    for (int64_t j = 0; j < f.blockBytes; j += 8) {
      const uint64_t r = mix(key + uint64_t(j));
      std::memcpy(b + j, &r, size_t(std::min<int64_t>(8, f.blockBytes - j)));
    }
    for (size_t h = 0; h < halves.size(); ++h) {
      const float u = float(mix(key ^ (0xf16ull + h)) >> 40) * (1.0f / 16777216.0f) * 2 - 1;
      const uint16_t v = floatToHalf(u * scale);
      std::memcpy(b + halves[h], &v, 2);
    }
  }
  return out;
}

Tensor quantizeActivations(const Tensor& x, int64_t block, std::vector<int8_t>* q, std::vector<float>* scales,
                           std::vector<float>* sums) {
  if (x.dtype() != DType::F32 || x.rank() != 2 || block <= 0 || x.dim(1) % block)
    fail("quantizeActivations: x must be f32 [rows, K] with K whole blocks of {}, got {} {}", block,
         dtypeName(x.dtype()), shapeStr(x.shape()));
  Tensor out(DType::F32, x.shape());
  const int64_t blocks = x.numel() / block;
  if (q) q->assign(size_t(x.numel()), 0);
  if (scales) scales->assign(size_t(blocks), 0.f);
  if (sums) sums->assign(size_t(blocks), 0.f);
  const float* in = x.data<float>();
  float* o = out.mut<float>();
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = in + b * block;
    float amax = 0.f;
    for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.f, inv = 127.f / std::max(amax, 1e-30f);
    float sum = 0.f;
    for (int64_t i = 0; i < block; ++i) {
      const float r = std::nearbyint(v[i] * inv);  // the default rounding: ties to even
      o[b * block + i] = r * d;
      sum += r;
      if (q) (*q)[size_t(b * block + i)] = int8_t(r);
    }
    if (scales) (*scales)[size_t(b)] = d;
    if (sums) (*sums)[size_t(b)] = d * sum;
  }
  return out;
}

}  // namespace strata::ops
