// Tensor: a dense row-major array with a dtype and a shape, sharing its storage.
//
// Storage is reference counted and may alias memory owned elsewhere (an mmapped
// weight file): `owner` keeps that memory alive. Reference kernels compute in
// f32 / i64 / i32 / bool; f16 and bf16 exist as storage types and are widened
// to f32 when loaded (see toF32).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ops/error.h"

namespace strata::ops {

enum class DType : uint8_t { F32, F16, BF16, I64, I32, Bool };

size_t dtypeSize(DType t);
const char* dtypeName(DType t);
inline bool isFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
// Parses the names dtypeName prints ("f32", "i64", ...); throws on others.
DType parseDType(const std::string& s);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
// numel for untrusted shapes: throws on a negative dim or when the element
// count would exceed 2^48 (no real tensor is that large; it guards overflow).
int64_t checkedNumel(const Shape& s, const std::string& what);
std::string shapeStr(const Shape& s);

float halfToFloat(uint16_t h);
float bf16ToFloat(uint16_t h);
// Round to nearest even (as the GPU's cvt.rn does); NaN stays NaN, values
// past the largest finite become infinity.
uint16_t floatToHalf(float f);
uint16_t floatToBf16(float f);

class Tensor {
 public:
  Tensor() = default;
  // Fresh zero-filled storage.
  Tensor(DType t, Shape shape);
  // A view of memory kept alive by `owner` (not copied).
  Tensor(DType t, Shape shape, std::shared_ptr<const void> owner, const void* data);

  static Tensor scalarF32(float v);
  static Tensor fromI64(const std::vector<int64_t>& v, Shape shape);
  static Tensor fromI64(const std::vector<int64_t>& v) { return fromI64(v, {(int64_t)v.size()}); }
  static Tensor fromF32(const std::vector<float>& v, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return (int64_t)shape_.size(); }
  int64_t dim(int64_t i) const { return shape_.at(i); }
  int64_t numel() const { return ops::numel(shape_); }
  size_t nbytes() const { return numel() * dtypeSize(dtype_); }
  bool defined() const { return data_ != nullptr || (owner_ && numel() == 0); }

  template <typename T> const T* data() const { return static_cast<const T*>(data_); }
  // Writable access; only valid for tensors created with fresh storage.
  template <typename T> T* mut() { return static_cast<T*>(const_cast<void*>(data_)); }
  const void* raw() const { return data_; }

  // Same storage, new shape (element count must match).
  Tensor reshaped(Shape s) const;
  // numel(s) elements of the same storage from element `offset` on.
  Tensor view(int64_t offset, Shape s) const;
  // Widened copy in f32 (f16/bf16/i64/i32/bool) or this tensor when already f32.
  Tensor toF32() const;
  // Converted copy (or this tensor when already of dtype t); to f16/bf16
  // rounds to nearest even.
  Tensor cast(DType t) const;
  // Values of an integer tensor as int64 (for shape operands).
  std::vector<int64_t> toI64Vector() const;
  double scalarAsDouble(int64_t i = 0) const;

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<const void> owner_;
  const void* data_ = nullptr;
};

}  // namespace strata::ops
