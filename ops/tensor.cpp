#include "ops/tensor.h"

#include <algorithm>
#include <cstring>

namespace strata::ops {

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::Bool: return "bool";
  }
  return "?";
}

DType parseDType(const std::string& s) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool})
    if (s == dtypeName(t)) return t;
  fail("unknown dtype '{}'", s);
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t checkedNumel(const Shape& s, const std::string& what) {
  constexpr int64_t kMax = int64_t(1) << 48;
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) fail("{}: negative dimension in shape {}", what, shapeStr(s));
    if (d != 0 && n > kMax / d) fail("{}: shape {} is impossibly large", what, shapeStr(s));
    n *= d;
  }
  return n;
}

std::string shapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1);  // round half to even on the dropped 16 bits
  return uint16_t(bits >> 16);
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000u, abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);         // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);        // rounds past 65504: infinity
  if (abs < 0x38800000u) {                                        // f16 subnormal or zero
    if (abs < 0x33000000u) return uint16_t(sign);                 // below half the smallest subnormal
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(abs >> 23);                             // 14 + (113 - exponent)
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t h = ((abs >> 13) - (112u << 10));                      // rebias 127 -> 15
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;          // may carry into the exponent: still right
  return uint16_t(sign | h);
}

Tensor::Tensor(DType t, Shape shape) : dtype_(t), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) fail("negative dimension in shape {}", shapeStr(shape_));
  size_t n = std::max<size_t>(nbytes(), 1);
  std::shared_ptr<uint8_t[]> buf(new uint8_t[n]());
  data_ = buf.get();
  owner_ = std::shared_ptr<const void>(buf, buf.get());
}

Tensor::Tensor(DType t, Shape shape, std::shared_ptr<const void> owner, const void* data)
    : dtype_(t), shape_(std::move(shape)), owner_(std::move(owner)), data_(data) {}

Tensor Tensor::scalarF32(float v) {
  Tensor t(DType::F32, {});
  *t.mut<float>() = v;
  return t;
}

Tensor Tensor::fromI64(const std::vector<int64_t>& v, Shape shape) {
  Tensor t(DType::I64, std::move(shape));
  if ((size_t)t.numel() != v.size()) fail("fromI64: {} values for shape {}", v.size(), shapeStr(t.shape()));
  std::copy(v.begin(), v.end(), t.mut<int64_t>());
  return t;
}

Tensor Tensor::fromF32(const std::vector<float>& v, Shape shape) {
  Tensor t(DType::F32, std::move(shape));
  if ((size_t)t.numel() != v.size()) fail("fromF32: {} values for shape {}", v.size(), shapeStr(t.shape()));
  std::copy(v.begin(), v.end(), t.mut<float>());
  return t;
}

Tensor Tensor::view(int64_t offset, Shape s) const {
  if (offset < 0 || offset + ops::numel(s) > numel())
    fail("a view of {} elements from #{} does not fit in {} elements of shape {}", ops::numel(s), offset, numel(),
         shapeStr(shape_));
  Tensor r = *this;
  r.shape_ = std::move(s);
  r.data_ = static_cast<const uint8_t*>(data_) + offset * dtypeSize(dtype_);
  return r;
}

Tensor Tensor::reshaped(Shape s) const {
  if (ops::numel(s) != numel())
    fail("cannot reshape {} elements of shape {} to {}", numel(), shapeStr(shape_), shapeStr(s));
  Tensor r = *this;
  r.shape_ = std::move(s);
  return r;
}

namespace {
template <typename Dst, typename F>
Tensor convert(const Tensor& src, DType dt, F get) {
  Tensor out(dt, src.shape());
  Dst* o = out.mut<Dst>();
  for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = static_cast<Dst>(get(i));
  return out;
}

template <typename Dst>
Tensor convertFrom(const Tensor& s, DType dt) {
  switch (s.dtype()) {
    case DType::F32: return convert<Dst>(s, dt, [&](int64_t i) { return s.data<float>()[i]; });
    case DType::F16: return convert<Dst>(s, dt, [&](int64_t i) { return halfToFloat(s.data<uint16_t>()[i]); });
    case DType::BF16: return convert<Dst>(s, dt, [&](int64_t i) { return bf16ToFloat(s.data<uint16_t>()[i]); });
    case DType::I64: return convert<Dst>(s, dt, [&](int64_t i) { return s.data<int64_t>()[i]; });
    case DType::I32: return convert<Dst>(s, dt, [&](int64_t i) { return s.data<int32_t>()[i]; });
    case DType::Bool: return convert<Dst>(s, dt, [&](int64_t i) { return s.data<uint8_t>()[i] != 0; });
  }
  fail("bad dtype");
}
}  // namespace

Tensor Tensor::cast(DType t) const {
  if (t == dtype_) return *this;
  switch (t) {
    case DType::F32: return convertFrom<float>(*this, t);
    case DType::I64: return convertFrom<int64_t>(*this, t);
    case DType::I32: return convertFrom<int32_t>(*this, t);
    case DType::Bool: {
      Tensor f = convertFrom<float>(*this, DType::F32);
      return convert<uint8_t>(f, t, [&](int64_t i) { return f.data<float>()[i] != 0.f; });
    }
    case DType::F16: case DType::BF16: {
      Tensor f = convertFrom<float>(*this, DType::F32);
      auto round = t == DType::F16 ? floatToHalf : floatToBf16;
      return convert<uint16_t>(f, t, [&](int64_t i) { return round(f.data<float>()[i]); });
    }
  }
  fail("cast to {} is not supported by the reference kernels (they compute in f32)", dtypeName(t));
}

Tensor Tensor::toF32() const { return cast(DType::F32); }

std::vector<int64_t> Tensor::toI64Vector() const {
  if (dtype_ != DType::I64 && dtype_ != DType::I32 && dtype_ != DType::Bool)
    fail("expected an integer tensor, got {}", dtypeName(dtype_));
  Tensor t = cast(DType::I64);
  return {t.data<int64_t>(), t.data<int64_t>() + t.numel()};
}

double Tensor::scalarAsDouble(int64_t i) const {
  if (i >= numel()) fail("scalar index {} out of range for shape {}", i, shapeStr(shape_));
  switch (dtype_) {
    case DType::F32: return data<float>()[i];
    case DType::F16: return halfToFloat(data<uint16_t>()[i]);
    case DType::BF16: return bf16ToFloat(data<uint16_t>()[i]);
    case DType::I64: return (double)data<int64_t>()[i];
    case DType::I32: return data<int32_t>()[i];
    case DType::Bool: return data<uint8_t>()[i];
  }
  return 0;
}

}  // namespace strata::ops
