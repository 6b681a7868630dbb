// Data-movement reference kernels: they move bytes, so they work for every
// dtype by element size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/reference.h"

namespace strata::ops {

namespace {
const uint8_t* bytes(const Tensor& t) { return static_cast<const uint8_t*>(t.raw()); }

// A tensor of shape `out` whose element at index i is x's element at
// offset sum(i[d] * strides[d]): transposes and broadcasts are both this.
Tensor stridedCopy(const Tensor& x, const Shape& out, const std::vector<int64_t>& strides) {
  Tensor y(x.dtype(), out);
  size_t es = dtypeSize(x.dtype());
  int64_t r = (int64_t)out.size(), off = 0, n = y.numel();
  std::vector<int64_t> idx(r, 0);
  auto* o = y.mut<uint8_t>();
  const uint8_t* in = bytes(x);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(o + i * es, in + off * es, es);
    for (int64_t d = r - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < out[d]) break;
      off -= strides[d] * out[d];
      idx[d] = 0;
    }
  }
  return y;
}

std::vector<int64_t> normAxes(std::vector<int64_t> axes, int64_t rank) {
  for (auto& a : axes) a = normAxis(a, rank);
  return axes;
}
}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape, bool allowzero) {
  Shape out(shape.begin(), shape.end());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if ((int64_t)i >= x.rank()) fail("Reshape: 0 at position {} but input rank is {}", i, x.rank());
      out[i] = x.dim(i);
    }
    if (out[i] == -1) {
      if (infer >= 0) fail("Reshape: more than one -1 in {}", shapeStr(shape));
      infer = i;
    } else if (out[i] < 0) {
      fail("Reshape: invalid dimension {} in {}", out[i], shapeStr(shape));
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known) fail("Reshape: cannot infer -1 reshaping {} to {}", shapeStr(x.shape()), shapeStr(shape));
    out[infer] = x.numel() / known;
  }
  return x.reshaped(out);
}

Tensor transpose(const Tensor& x, std::vector<int64_t> perm) {
  int64_t r = x.rank();
  if (perm.empty()) {
    perm.resize(r);
    for (int64_t i = 0; i < r; ++i) perm[i] = r - 1 - i;
  }
  if ((int64_t)perm.size() != r) fail("Transpose: perm has {} entries for rank {}", perm.size(), r);
  std::vector<bool> seen(r, false);
  Shape out(r);
  for (int64_t i = 0; i < r; ++i) {
    int64_t p = normAxis(perm[i], r);
    if (seen[p]) fail("Transpose: perm repeats axis {}", p);
    seen[p] = true;
    perm[i] = p;
    out[i] = x.dim(p);
  }
  auto inSt = contiguousStrides(x.shape());
  std::vector<int64_t> st(r);
  for (int64_t i = 0; i < r; ++i) st[i] = inSt[perm[i]];
  return stridedCopy(x, out, st);
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             std::vector<int64_t> axes, std::vector<int64_t> steps) {
  int64_t r = x.rank();
  if (starts.size() != ends.size()) fail("Slice: {} starts but {} ends", starts.size(), ends.size());
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) fail("Slice: starts/ends/axes/steps lengths differ");
  std::vector<int64_t> b(r, 0), st(r, 1);
  Shape out = x.shape();
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = normAxis(axes[i], r), d = x.dim(a), s = steps[i];
    if (s == 0) fail("Slice: step 0 on axis {}", a);
    int64_t lo = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t hi = ends[i] < 0 ? ends[i] + d : ends[i];
    if (s > 0) {
      lo = std::clamp<int64_t>(lo, 0, d);
      hi = std::clamp<int64_t>(hi, 0, d);
      out[a] = hi > lo ? (hi - lo + s - 1) / s : 0;
    } else {
      lo = std::clamp<int64_t>(lo, -1, d - 1);
      hi = std::clamp<int64_t>(hi, -1, d - 1);
      out[a] = lo > hi ? (lo - hi - s - 1) / -s : 0;
    }
    b[a] = lo;
    st[a] = s;
  }
  Tensor y(x.dtype(), out);
  int64_t n = y.numel();
  if (n == 0) return y;
  size_t es = dtypeSize(x.dtype());
  auto inSt = contiguousStrides(x.shape());
  std::vector<int64_t> idx(r, 0);
  auto* o = y.mut<uint8_t>();
  const uint8_t* in = bytes(x);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += (b[d] + idx[d] * st[d]) * inSt[d];
    std::memcpy(o + i * es, in + off * es, es);
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return y;
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail("Concat: no inputs");
  int64_t r = xs[0].rank(), a = normAxis(axis, r);
  Shape out = xs[0].shape();
  out[a] = 0;
  for (const Tensor& t : xs) {
    if (t.rank() != r || t.dtype() != xs[0].dtype()) fail("Concat: inputs differ in rank or dtype");
    for (int64_t d = 0; d < r; ++d)
      if (d != a && t.dim(d) != xs[0].dim(d))
        fail("Concat: shapes {} and {} differ off axis {}", shapeStr(xs[0].shape()), shapeStr(t.shape()), a);
    out[a] += t.dim(a);
  }
  Tensor y(xs[0].dtype(), out);
  size_t es = dtypeSize(y.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= out[d];
  for (int64_t d = a + 1; d < r; ++d) inner *= out[d];
  auto* o = y.mut<uint8_t>();
  int64_t rowBytes = out[a] * inner * es, at = 0;
  for (const Tensor& t : xs) {
    int64_t chunk = t.dim(a) * inner * es;
    for (int64_t i = 0; i < outer; ++i) std::memcpy(o + i * rowBytes + at, bytes(t) + i * chunk, chunk);
    at += chunk;
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, int64_t axis, std::vector<int64_t> sizes, int64_t numOutputs) {
  int64_t a = normAxis(axis, x.rank()), d = x.dim(a);
  if (sizes.empty()) {
    if (numOutputs <= 0) fail("Split: neither split sizes nor output count given");
    int64_t c = (d + numOutputs - 1) / numOutputs;
    for (int64_t i = 0; i < numOutputs; ++i) sizes.push_back(std::min(c, d - i * c));
  }
  std::vector<Tensor> outs;
  int64_t at = 0;
  for (int64_t s : sizes) {
    if (s < 0 || at + s > d) fail("Split: sizes exceed dimension {}", d);
    outs.push_back(slice(x, {at}, {at + s}, {a}, {1}));
    at += s;
  }
  if (at != d) fail("Split: sizes sum to {} but dimension is {}", at, d);
  return outs;
}

Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis) {
  int64_t a = normAxis(axis, data.rank()), d = data.dim(a);
  auto idx = indices.toI64Vector();
  Shape out(data.shape().begin(), data.shape().begin() + a);
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), data.shape().begin() + a + 1, data.shape().end());
  Tensor y(data.dtype(), out);
  size_t es = dtypeSize(data.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= data.dim(i);
  for (int64_t i = a + 1; i < data.rank(); ++i) inner *= data.dim(i);
  auto* o = y.mut<uint8_t>();
  int64_t n = (int64_t)idx.size();
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t k = idx[j] < 0 ? idx[j] + d : idx[j];
      if (k < 0 || k >= d) fail("Gather: index {} out of range for dimension {}", idx[j], d);
      std::memcpy(o + (i * n + j) * inner * es, bytes(data) + (i * d + k) * inner * es, inner * es);
    }
  return y;
}

Tensor gatherND(const Tensor& data, const Tensor& indices, int64_t b) {
  auto idx = indices.toI64Vector();
  int64_t q = indices.rank(), r = data.rank();
  if (q < 1 || b < 0 || b >= std::min(q, r)) fail("GatherND: bad batch_dims {}", b);
  int64_t k = indices.dim(q - 1);
  if (k < 1 || b + k > r) fail("GatherND: index depth {} too large for data rank {}", k, r);
  Shape out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), data.shape().begin() + b + k, data.shape().end());
  Tensor y(data.dtype(), out);
  size_t es = dtypeSize(data.dtype());
  int64_t batch = 1, inner = 1, perBatch = 1;
  for (int64_t i = 0; i < b; ++i) batch *= data.dim(i);
  for (int64_t i = b + k; i < r; ++i) inner *= data.dim(i);
  for (int64_t i = b; i < q - 1; ++i) perBatch *= indices.dim(i);
  auto dSt = contiguousStrides(data.shape());
  int64_t batchStride = b > 0 ? dSt[b - 1] : 0;
  auto* o = y.mut<uint8_t>();
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t j = 0; j < perBatch; ++j) {
      int64_t off = bi * batchStride;
      const int64_t* ix = idx.data() + (bi * perBatch + j) * k;
      for (int64_t t = 0; t < k; ++t) {
        int64_t dd = data.dim(b + t), v = ix[t] < 0 ? ix[t] + dd : ix[t];
        if (v < 0 || v >= dd) fail("GatherND: index {} out of range for dimension {}", ix[t], dd);
        off += v * dSt[b + t];
      }
      std::memcpy(o + (bi * perBatch + j) * inner * es, bytes(data) + off * es, inner * es);
    }
  return y;
}

Tensor expand(const Tensor& x, const std::vector<int64_t>& shape) {
  Shape out = broadcastShapes(x.shape(), Shape(shape.begin(), shape.end()));
  int64_t r = (int64_t)out.size();
  std::vector<int64_t> st(r, 0), cs = contiguousStrides(x.shape());
  for (int64_t i = 0; i < x.rank(); ++i) st[r - x.rank() + i] = x.dim(i) == 1 ? 0 : cs[i];
  return stridedCopy(x, out, st);
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  if ((int64_t)repeats.size() != x.rank()) fail("Tile: {} repeats for rank {}", repeats.size(), x.rank());
  Tensor y = x;
  for (int64_t a = 0; a < x.rank(); ++a) {
    if (repeats[a] < 0) fail("Tile: negative repeat {}", repeats[a]);
    if (repeats[a] != 1) y = concat(std::vector<Tensor>(repeats[a], y), a);
  }
  return y;
}

Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes) {
  int64_t r = x.rank() + (int64_t)axes.size();
  axes = normAxes(axes, r);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail("Unsqueeze: repeated axis");
  Shape out;
  size_t j = 0, k = 0;
  for (int64_t i = 0; i < r; ++i) {
    if (k < axes.size() && axes[k] == i) { out.push_back(1); ++k; }
    else out.push_back(x.dim(j++));
  }
  return x.reshaped(out);
}

Tensor squeeze(const Tensor& x, std::vector<int64_t> axes) {
  axes = normAxes(axes, x.rank());
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed && x.dim(i) != 1) fail("Squeeze: axis {} has size {}, not 1", i, x.dim(i));
    if (!(listed || (axes.empty() && x.dim(i) == 1))) out.push_back(x.dim(i));
  }
  return x.reshaped(out);
}

Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  if (start.dtype() == DType::F32) {
    float s = start.scalarAsDouble(), l = limit.scalarAsDouble(), d = delta.scalarAsDouble();
    if (d == 0) fail("Range: delta is 0");
    int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((l - s) / d));
    Tensor y(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i) y.mut<float>()[i] = s + i * d;
    return y;
  }
  int64_t s = start.toI64Vector().at(0), l = limit.toI64Vector().at(0), d = delta.toI64Vector().at(0);
  if (d == 0) fail("Range: delta is 0");
  int64_t n = std::max<int64_t>(0, (l - s + d + (d > 0 ? -1 : 1)) / d);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = s + i * d;
  return Tensor::fromI64(v).cast(start.dtype());
}

Tensor cumsum(const Tensor& x0, int64_t axis, bool exclusive, bool reverse) {
  bool isFloat = x0.dtype() == DType::F32;
  Tensor x = isFloat ? x0 : x0.cast(DType::I64);
  int64_t a = normAxis(axis, x.rank()), d = x.dim(a), outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= x.dim(i);
  for (int64_t i = a + 1; i < x.rank(); ++i) inner *= x.dim(i);
  Tensor y(x.dtype(), x.shape());
  auto run = [&](auto* o, const auto* in) {
    for (int64_t i = 0; i < outer; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        std::remove_const_t<std::remove_pointer_t<decltype(in)>> acc = 0;
        for (int64_t t = 0; t < d; ++t) {
          int64_t k = reverse ? d - 1 - t : t, off = (i * d + k) * inner + j;
          if (exclusive) { o[off] = acc; acc += in[off]; }
          else { acc += in[off]; o[off] = acc; }
        }
      }
  };
  if (isFloat) run(y.mut<float>(), x.data<float>());
  else run(y.mut<int64_t>(), x.data<int64_t>());
  return isFloat ? y : y.cast(x0.dtype());
}

Tensor constantOfShape(const std::vector<int64_t>& shape, const Tensor& value) {
  Tensor y(value.dtype(), Shape(shape.begin(), shape.end()));
  size_t es = dtypeSize(value.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(y.mut<uint8_t>() + i * es, value.raw(), es);
  return y;
}

Tensor trilu(const Tensor& x, int64_t k, bool upper) {
  if (x.rank() < 2) fail("Trilu: needs rank >= 2, got {}", x.rank());
  Tensor y(x.dtype(), x.shape());
  std::memcpy(y.mut<uint8_t>(), x.raw(), x.nbytes());
  int64_t rows = x.dim(-2 + x.rank()), cols = x.dim(x.rank() - 1), mats = x.numel() / std::max<int64_t>(rows * cols, 1);
  size_t es = dtypeSize(x.dtype());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (upper ? (j - i < k) : (j - i > k)) std::memset(y.mut<uint8_t>() + ((m * rows + i) * cols + j) * es, 0, es);
  return y;
}

}  // namespace strata::ops
