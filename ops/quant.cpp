#include "ops/quant.h"

#include <cstring>

#include "ops/error.h"

namespace strata::ops {

namespace {

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfToFloat(h);
}

// Q8_0: d (f16), 32 int8 quants: x = d q.
void q8_0Ints(const uint8_t* b, int8_t* q, float* d) {
  *d = half(b);
  for (int i = 0; i < 32; ++i) q[i] = int8_t(b[2 + i]);
}

// Q4_0: d, 16 bytes of nibbles (low nibbles values 0-15, high 16-31): x = d (q - 8).
void q4_0Ints(const uint8_t* b, int8_t* q, float* d) {
  *d = half(b);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t(int(b[2 + i] & 0xF) - 8);
    q[i + 16] = int8_t(int(b[2 + i] >> 4) - 8);
  }
}

// Q5_0: d, 32 fifth bits (u32), nibbles: x = d (q - 16).
void q5_0Ints(const uint8_t* b, int8_t* q, float* d) {
  *d = half(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t(((b[6 + i] & 0xF) | int(((qh >> i) & 1) << 4)) - 16);
    q[i + 16] = int8_t(((b[6 + i] >> 4) | int(((qh >> (i + 16)) & 1) << 4)) - 16);
  }
}

// The three above as values: d times each integer.
template <void (*Ints)(const uint8_t*, int8_t*, float*)>
void scaledInts(const uint8_t* b, float* y) {
  int8_t q[32];
  float d;
  Ints(b, q, &d);
  for (int i = 0; i < 32; ++i) y[i] = d * float(q[i]);
}

// Q4_1: d, m, nibbles: x = d q + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  for (int i = 0; i < 16; ++i) {
    y[i] = d * float(b[4 + i] & 0xF) + m;
    y[i + 16] = d * float(b[4 + i] >> 4) + m;
  }
}

// Q5_1: d, m, fifth bits, nibbles: x = d q + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int i = 0; i < 16; ++i) {
    const int lo = (b[8 + i] & 0xF) | int(((qh >> i) & 1) << 4);
    const int hi = (b[8 + i] >> 4) | int(((qh >> (i + 16)) & 1) << 4);
    y[i] = d * float(lo) + m;
    y[i + 16] = d * float(hi) + m;
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

// Q4_K: a super-block of 256 in 8 sub-blocks of 32: d, dmin (f16), 12 bytes
// of 6-bit scales and mins, 128 bytes of nibbles (each 32-byte run holds
// two sub-blocks: low nibbles, then high): x = d sc q - dmin m.
void q4_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0; j < 8; j += 2, q += 32, y += 64) {
    float sc1, m1, sc2, m2;
    scaleMin(j, scales, sc1, m1);
    scaleMin(j + 1, scales, sc2, m2);
    const float d1 = d * sc1, mm1 = dmin * m1, d2 = d * sc2, mm2 = dmin * m2;
    for (int l = 0; l < 32; ++l) y[l] = d1 * float(q[l] & 0xF) - mm1;
    for (int l = 0; l < 32; ++l) y[32 + l] = d2 * float(q[l] >> 4) - mm2;
  }
}

// Q5_K: as Q4_K with a fifth bit per value (32 bytes, bit pair 2j / 2j + 1
// for sub-blocks j, j + 1).
void q5_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 8; j += 2, q += 32, y += 64, u1 <<= 2, u2 <<= 2) {
    float sc1, m1, sc2, m2;
    scaleMin(j, scales, sc1, m1);
    scaleMin(j + 1, scales, sc2, m2);
    const float d1 = d * sc1, mm1 = dmin * m1, d2 = d * sc2, mm2 = dmin * m2;
    for (int l = 0; l < 32; ++l) y[l] = d1 * float((q[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - mm1;
    for (int l = 0; l < 32; ++l) y[32 + l] = d2 * float((q[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - mm2;
  }
}

// Q6_K: 256 values of 6 bits (low 4 in 128 bytes, high 2 in 64), 16 int8
// scales of 16 values each, d (f16): x = d sc (q - 32).
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8, y += 128)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(sc[is]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
}

const QuantFormat kFormats[] = {
    {"Q4_0", 32, 18, scaledInts<q4_0Ints>, q4_0Ints},
    {"Q4_1", 32, 20, q4_1, nullptr},
    {"Q5_0", 32, 22, scaledInts<q5_0Ints>, q5_0Ints},
    {"Q5_1", 32, 24, q5_1, nullptr},
    {"Q8_0", 32, 34, scaledInts<q8_0Ints>, q8_0Ints},
    {"Q4_K", 256, 144, q4_k, nullptr},
    {"Q5_K", 256, 176, q5_k, nullptr},
    {"Q6_K", 256, 210, q6_k, nullptr},
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

}  // namespace strata::ops
