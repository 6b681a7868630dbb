// Elementwise reference kernels with numpy broadcasting.
#include <array>
#include <cmath>
#include <cstring>
#include <functional>

#include "ops/reference.h"

namespace strata::ops {

int64_t normAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) fail("axis {} is out of range for rank {}", axis, rank);
  return a;
}

std::vector<int64_t> contiguousStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = (int64_t)s.size() - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Shape broadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("shapes {} and {} cannot be broadcast together", shapeStr(a), shapeStr(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// Strides of `in` viewed at the rank of `out`, 0 where broadcast.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0), cs = contiguousStrides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[i + off] = in[i] == 1 ? 0 : cs[i];
  return st;
}

// Calls fn(outIndex, offsets...) over every element of `out`, with the element
// offset of each operand under broadcasting.
template <size_t N, typename F>
void forEachBroadcast(const Shape& out, const std::array<const Shape*, N>& ins, F fn) {
  int64_t total = numel(out);
  if (total == 0) return;
  std::array<std::vector<int64_t>, N> st;
  bool allSame = true;
  for (size_t j = 0; j < N; ++j) {
    st[j] = broadcastStrides(*ins[j], out);
    allSame &= *ins[j] == out;
  }
  std::array<int64_t, N> off{};
  if (allSame) {
    for (int64_t i = 0; i < total; ++i) {
      off.fill(i);
      fn(i, off);
    }
    return;
  }
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off);
    for (int64_t d = (int64_t)out.size() - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t j = 0; j < N; ++j) off[j] += st[j][d];
      if (idx[d] < out[d]) break;
      for (size_t j = 0; j < N; ++j) off[j] -= st[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

bool isComparison(BinaryOp op) {
  return op == BinaryOp::Equal || op == BinaryOp::Less || op == BinaryOp::LessOrEqual ||
         op == BinaryOp::Greater || op == BinaryOp::GreaterOrEqual;
}
bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Xor; }

template <typename T>
T arith(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) fail("integer division by zero");
      }
      return a / b;
    case BinaryOp::Pow: return static_cast<T>(std::pow((double)a, (double)b));
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Mod:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) fail("integer modulo by zero");
        T r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;  // ONNX fmod=0: sign of divisor
      } else {
        return std::fmod(a, b);
      }
    default: break;
  }
  fail("not an arithmetic op");
}

template <typename T>
bool compare(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Equal: return a == b;
    case BinaryOp::Less: return a < b;
    case BinaryOp::LessOrEqual: return a <= b;
    case BinaryOp::Greater: return a > b;
    case BinaryOp::GreaterOrEqual: return a >= b;
    default: break;
  }
  fail("not a comparison");
}

template <typename T>
Tensor binaryTyped(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  if (isComparison(op)) {
    Tensor r(DType::Bool, out);
    uint8_t* o = r.mut<uint8_t>();
    forEachBroadcast<2>(out, {&a.shape(), &b.shape()},
                        [&](int64_t i, auto off) { o[i] = compare(op, pa[off[0]], pb[off[1]]); });
    return r;
  }
  Tensor r(a.dtype(), out);
  T* o = r.mut<T>();
  forEachBroadcast<2>(out, {&a.shape(), &b.shape()},
                      [&](int64_t i, auto off) { o[i] = arith(op, pa[off[0]], pb[off[1]]); });
  return r;
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a0, const Tensor& b0) {
  Shape out = broadcastShapes(a0.shape(), b0.shape());
  if (isLogical(op)) {
    if (a0.dtype() != DType::Bool || b0.dtype() != DType::Bool) fail("logical ops need bool operands");
    Tensor r(DType::Bool, out);
    uint8_t* o = r.mut<uint8_t>();
    const uint8_t *pa = a0.data<uint8_t>(), *pb = b0.data<uint8_t>();
    forEachBroadcast<2>(out, {&a0.shape(), &b0.shape()}, [&](int64_t i, auto off) {
      bool x = pa[off[0]], y = pb[off[1]];
      o[i] = op == BinaryOp::And ? (x && y) : op == BinaryOp::Or ? (x || y) : (x != y);
    });
    return r;
  }
  Tensor a = a0, b = b0;
  // Pow allows a different exponent type; everything else must agree.
  if (op == BinaryOp::Pow && a.dtype() != b.dtype()) b = b.cast(a.dtype());
  if (a.dtype() != b.dtype())
    fail("operand dtypes differ: {} vs {}", dtypeName(a.dtype()), dtypeName(b.dtype()));
  switch (a.dtype()) {
    case DType::F32: return binaryTyped<float>(op, a, b, out);
    case DType::I64: return binaryTyped<int64_t>(op, a, b, out);
    case DType::I32: return binaryTyped<int32_t>(op, a, b, out);
    case DType::Bool:
      if (op == BinaryOp::Equal) return binaryTyped<uint8_t>(op, a, b, out);
      break;
    default: break;
  }
  fail("binary op not supported for dtype {}", dtypeName(a.dtype()));
}

Tensor unary(UnaryOp op, const Tensor& x) {
  if (op == UnaryOp::Not) {
    if (x.dtype() != DType::Bool) fail("Not needs a bool operand, got {}", dtypeName(x.dtype()));
    Tensor r(DType::Bool, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) r.mut<uint8_t>()[i] = !x.data<uint8_t>()[i];
    return r;
  }
  if (x.dtype() == DType::I64 || x.dtype() == DType::I32) {
    if (op != UnaryOp::Neg && op != UnaryOp::Abs) fail("unary op not supported on integer tensors");
    Tensor v = x.cast(DType::I64), r(DType::I64, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t a = v.data<int64_t>()[i];
      r.mut<int64_t>()[i] = op == UnaryOp::Neg ? -a : std::abs(a);
    }
    return r.cast(x.dtype());
  }
  if (x.dtype() != DType::F32) fail("unary op needs f32, got {}", dtypeName(x.dtype()));
  bool predicate = op == UnaryOp::IsNaN || op == UnaryOp::IsInf;
  Tensor r(predicate ? DType::Bool : DType::F32, x.shape());
  const float* p = x.data<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    float a = p[i], v = 0;
    switch (op) {
      case UnaryOp::Neg: v = -a; break;
      case UnaryOp::Abs: v = std::fabs(a); break;
      case UnaryOp::Sqrt: v = std::sqrt(a); break;
      case UnaryOp::Reciprocal: v = 1.f / a; break;
      case UnaryOp::Exp: v = std::exp(a); break;
      case UnaryOp::Log: v = std::log(a); break;
      case UnaryOp::Sigmoid: v = 1.f / (1.f + std::exp(-a)); break;
      case UnaryOp::Silu: v = a / (1.f + std::exp(-a)); break;
      case UnaryOp::Tanh: v = std::tanh(a); break;
      case UnaryOp::Erf: v = std::erf(a); break;
      case UnaryOp::Relu: v = a > 0 ? a : 0; break;
      case UnaryOp::Cos: v = std::cos(a); break;
      case UnaryOp::Sin: v = std::sin(a); break;
      case UnaryOp::Floor: v = std::floor(a); break;
      case UnaryOp::Ceil: v = std::ceil(a); break;
      case UnaryOp::IsNaN: r.mut<uint8_t>()[i] = std::isnan(a); continue;
      case UnaryOp::IsInf: r.mut<uint8_t>()[i] = std::isinf(a); continue;
      case UnaryOp::Not: break;
    }
    r.mut<float>()[i] = v;
  }
  return r;
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  if (cond.dtype() != DType::Bool) fail("Where condition must be bool, got {}", dtypeName(cond.dtype()));
  if (x.dtype() != y.dtype()) fail("Where branches differ: {} vs {}", dtypeName(x.dtype()), dtypeName(y.dtype()));
  Shape out = broadcastShapes(broadcastShapes(cond.shape(), x.shape()), y.shape());
  Tensor r(x.dtype(), out);
  size_t es = dtypeSize(x.dtype());
  auto* o = r.mut<uint8_t>();
  auto *px = static_cast<const uint8_t*>(x.raw()), *py = static_cast<const uint8_t*>(y.raw());
  const uint8_t* pc = cond.data<uint8_t>();
  forEachBroadcast<3>(out, {&cond.shape(), &x.shape(), &y.shape()}, [&](int64_t i, auto off) {
    std::memcpy(o + i * es, pc[off[0]] ? px + off[1] * es : py + off[2] * es, es);
  });
  return r;
}

}  // namespace strata::ops
