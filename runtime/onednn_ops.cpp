#include "runtime/onednn_ops.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "ops/error.h"

namespace strata::runtime {

using ops::Shape;
using ops::Tensor;
using V = std::vector<Tensor>;

namespace {

// ONNX op -> oneDNN eltwise algorithm and its alpha / beta.
struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};
const std::map<std::string, Eltwise>& eltwiseOps() {
  using A = dnnl::algorithm;
  static const std::map<std::string, Eltwise> ops = {
      {"Relu", {A::eltwise_relu}},          {"Tanh", {A::eltwise_tanh}},   {"Sigmoid", {A::eltwise_logistic}},
      {"Exp", {A::eltwise_exp}},            {"Log", {A::eltwise_log}},     {"Sqrt", {A::eltwise_sqrt}},
      {"Abs", {A::eltwise_abs}},            {"Neg", {A::eltwise_linear, -1.f, 0.f}},
      {"Reciprocal", {A::eltwise_pow, 1.f, -1.f}}, {"Silu", {A::eltwise_swish, 1.f}},
  };
  return ops;
}
const std::map<std::string, dnnl::algorithm>& binaryOps() {
  using A = dnnl::algorithm;
  static const std::map<std::string, dnnl::algorithm> ops = {{"Add", A::binary_add}, {"Sub", A::binary_sub},
                                                             {"Mul", A::binary_mul}, {"Div", A::binary_div},
                                                             {"Max", A::binary_max}, {"Min", A::binary_min}};
  return ops;
}
const std::map<std::string, dnnl::algorithm>& reductionOps() {
  using A = dnnl::algorithm;
  static const std::map<std::string, dnnl::algorithm> ops = {{"ReduceMean", A::reduction_mean},
                                                             {"ReduceSum", A::reduction_sum},
                                                             {"ReduceMax", A::reduction_max},
                                                             {"ReduceMin", A::reduction_min}};
  return ops;
}
// The eltwise form of `n` on `in`: the table's ops, Gelu by its
// approximation, Pow by one exponent (GELU's x^3: 1 * x^p); nullopt for
// anything else (a Pow with an exponent per element).
std::optional<Eltwise> eltwiseOf(const ops::NodeDef& n, const V& in) {
  if (auto e = eltwiseOps().find(n.op); e != eltwiseOps().end()) return e->second;
  if (n.op == "Gelu") {
    const std::string a = n.attrs.value("approximate", std::string("none"));
    if (a != "none" && a != "tanh") return std::nullopt;
    return Eltwise{a == "tanh" ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf};
  }
  if (n.op == "Pow" && in.size() == 2 && in[1].defined() && in[1].numel() == 1)
    return Eltwise{dnnl::algorithm::eltwise_pow, 1.f, in[1].data<float>()[0]};
  return std::nullopt;
}

bool commutative(const std::string& op) { return op == "Add" || op == "Mul" || op == "Max" || op == "Min"; }

int64_t intAttr(const ops::NodeDef& n, const char* name, int64_t dflt) {
  return n.attrs.contains(name) ? n.attrs.at(name).get<int64_t>() : dflt;
}

dnnl::memory::dims dimsOf(const Shape& s) {
  if (s.empty()) return {1};
  return dnnl::memory::dims(s.begin(), s.end());
}
// Row-major strides of `d`.
dnnl::memory::dims denseStrides(const dnnl::memory::dims& d) {
  dnnl::memory::dims st(d.size(), 1);
  for (int i = (int)d.size() - 2; i >= 0; --i) st[i] = st[i + 1] * d[i + 1];
  return st;
}
dnnl::memory::desc dense(const dnnl::memory::dims& d) {
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, denseStrides(d));
}
// `s` left-padded with 1s to `rank` dims.
dnnl::memory::dims padded(const Shape& s, size_t rank) {
  dnnl::memory::dims d(rank - s.size(), 1);
  d.insert(d.end(), s.begin(), s.end());
  return d;
}
// numpy broadcast of a and b, or nullopt.
std::optional<Shape> broadcastShape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}
// Axes from input #1 (newer opsets) or the `axes` attribute; empty: none given.
std::optional<std::vector<int64_t>> axesOf(const ops::NodeDef& n, const V& in) {
  if (in.size() > 1 && in[1].defined()) {
    if (in[1].dtype() != ops::DType::I64) return std::nullopt;
    return in[1].toI64Vector();
  }
  if (n.attrs.contains("axes")) return n.attrs.at("axes").get<std::vector<int64_t>>();
  return std::vector<int64_t>{};
}

}  // namespace

struct OneDnnOps::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  // Built primitives by node (name, op, attributes) and input shapes.
  std::map<std::string, dnnl::primitive> cache;

  template <typename Make>
  dnnl::primitive& primitive(const std::string& key, Make make) {
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, make()).first;
    return it->second;
  }
  dnnl::memory mem(const dnnl::memory::desc& d, const Tensor& t) {
    return dnnl::memory(d, engine, const_cast<void*>(t.raw()));
  }
  void exec(dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
    p.execute(stream, args);
    stream.wait();
  }
};

OneDnnOps::OneDnnOps() : impl_(std::make_unique<Impl>()) {}
OneDnnOps::~OneDnnOps() = default;

bool OneDnnOps::covers(const ops::NodeDef& n) {
  const std::string& op = n.op;
  if (op == "Gelu") return eltwiseOf(n, {}).has_value();
  if (op == "Gemm")  // A' B' (+ C), A' / B' optionally transposed, alpha = beta = 1
    return (!n.attrs.contains("alpha") || n.attrs.at("alpha").get<double>() == 1.0) &&
           (!n.attrs.contains("beta") || n.attrs.at("beta").get<double>() == 1.0);
  return op == "MatMul" || op == "Linear" || op == "Softmax" || op == "LogSoftmax" || op == "Transpose" ||
         op == "Concat" || op == "LayerNormalization" ||
         op == "Pow" || op == "Slice" || op == "Split" ||
         eltwiseOps().count(op) ||
         binaryOps().count(op) || (reductionOps().count(op) && intAttr(n, "noop_with_empty_axes", 0) == 0);
}

std::optional<V> OneDnnOps::run(const ops::NodeDef& n, const V& in) {
  if (!covers(n) || in.empty() || !in[0].defined()) return std::nullopt;
  // f32 data (a reduction's axes, a slice's bounds and a split's sizes are
  // i64, and part of the key); oneDNN has no empty tensors.
  const bool indexOperands = reductionOps().count(n.op) || n.op == "Slice" || n.op == "Split";
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined() || (indexOperands && i > 0)) continue;
    if (in[i].dtype() != ops::DType::F32 || in[i].numel() == 0) return std::nullopt;
  }
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mutex);
  std::string key = n.name + "|" + n.op + "|" + n.attrs.dump();
  for (size_t i = 0; i < in.size(); ++i) {
    key += "|" + (in[i].defined() ? ops::shapeStr(in[i].shape()) : std::string("-"));
    if (indexOperands && i > 0 && in[i].defined() && in[i].dtype() == ops::DType::I64)
      key += fmt::format("={}", fmt::join(in[i].toI64Vector(), ","));
  }
  using dnnl::prop_kind;
  const Tensor& x = in[0];

  if (auto e = eltwiseOf(n, in)) {
    Tensor y(ops::DType::F32, x.shape());
    auto md = dense(dimsOf(x.shape()));
    auto& p = d.primitive(key + fmt::format("|{:a}|{:a}", e->alpha, e->beta), [&] {
      return dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(
          dnnl::eltwise_forward::desc(prop_kind::forward_inference, e->alg, md, e->alpha, e->beta), d.engine));
    });
    d.exec(p, {{DNNL_ARG_SRC, d.mem(md, x)}, {DNNL_ARG_DST, d.mem(md, y)}});
    return V{y};
  }
  if (n.op == "LayerNormalization") {
    // Over the axes from `axis` on: oneDNN normalizes the last dim, so the
    // tensor is viewed as [rows, normalized elements].
    if (in.size() < 2 || !in[1].defined() || x.rank() < 1) return std::nullopt;
    int64_t axis = intAttr(n, "axis", -1);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis >= x.rank()) return std::nullopt;
    int64_t inner = 1;
    for (int64_t i = axis; i < x.rank(); ++i) inner *= x.dim(i);
    const bool bias = in.size() > 2 && in[2].defined();
    if (in[1].numel() != inner || (bias && in[2].numel() != inner)) return std::nullopt;
    const float eps = n.attrs.contains("epsilon") ? n.attrs.at("epsilon").get<float>() : 1e-5f;
    auto md = dense({x.numel() / inner, inner}), mc = dense({inner});
    Tensor y(ops::DType::F32, x.shape());
    auto flags = dnnl::normalization_flags::use_scale | (bias ? dnnl::normalization_flags::use_shift
                                                              : dnnl::normalization_flags::none);
    auto& p = d.primitive(key, [&] {
      return dnnl::layer_normalization_forward(dnnl::layer_normalization_forward::primitive_desc(
          dnnl::layer_normalization_forward::desc(prop_kind::forward_inference, md, eps, flags), d.engine));
    });
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, d.mem(md, x)}, {DNNL_ARG_DST, d.mem(md, y)}, {DNNL_ARG_SCALE, d.mem(mc, in[1])}};
    if (bias) args.emplace(DNNL_ARG_SHIFT, d.mem(mc, in[2]));
    d.exec(p, args);
    return V{y};
  }
  if (auto b = binaryOps().find(n.op); b != binaryOps().end()) {
    if (in.size() != 2 || !in[1].defined()) return std::nullopt;
    auto out = broadcastShape(x.shape(), in[1].shape());
    if (!out) return std::nullopt;
    // oneDNN broadcasts the second operand only: a broadcast first operand
    // is swapped where the op commutes, else left to the reference kernel.
    int first = 0;
    if (x.shape() != *out) {
      if (!commutative(n.op) || in[1].shape() != *out) return std::nullopt;
      first = 1;
    }
    const Tensor &a = in[first], &c = in[1 - first];
    Tensor y(ops::DType::F32, *out);
    const size_t rank = std::max<size_t>(out->size(), 1);
    auto ma = dense(padded(a.shape(), rank)), mc = dense(padded(c.shape(), rank)), my = dense(padded(*out, rank));
    auto& p = d.primitive(key, [&] {
      return dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(b->second, ma, mc, my), d.engine));
    });
    d.exec(p, {{DNNL_ARG_SRC_0, d.mem(ma, a)}, {DNNL_ARG_SRC_1, d.mem(mc, c)}, {DNNL_ARG_DST, d.mem(my, y)}});
    return V{y};
  }
  if (n.op == "MatMul") {
    if (in.size() != 2 || !in[1].defined() || x.rank() < 1 || in[1].rank() < 1) return std::nullopt;
    // numpy matmul: 1-D operands become a row / a column, dropped after.
    Shape as = x.shape(), bs = in[1].shape();
    const bool aVec = as.size() == 1, bVec = bs.size() == 1;
    if (aVec) as.insert(as.begin(), 1);
    if (bVec) bs.push_back(1);
    if (as.back() != bs[bs.size() - 2]) return std::nullopt;
    auto batch = broadcastShape(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
    if (!batch) return std::nullopt;
    Shape ys = *batch;
    ys.push_back(as[as.size() - 2]);
    ys.push_back(bs.back());
    const size_t rank = ys.size();
    auto ma = dense(padded(as, rank)), mb = dense(padded(bs, rank)), my = dense(padded(ys, rank));
    Tensor y(ops::DType::F32, ys);
    auto& p = d.primitive(key, [&] {
      return dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ma, mb, my), d.engine));
    });
    d.exec(p, {{DNNL_ARG_SRC, d.mem(ma, x)}, {DNNL_ARG_WEIGHTS, d.mem(mb, in[1])}, {DNNL_ARG_DST, d.mem(my, y)}});
    Shape final = ys;
    if (bVec) final.pop_back();
    if (aVec) final.erase(final.end() - (bVec ? 1 : 2));
    return V{y.reshaped(final)};
  }
  if (n.op == "Gemm") {
    // Y = A' B' + C with A' = A or A^T, B' = B or B^T (strides, no copy)
    // and C broadcast to [M, N]: a matmul with bias.
    if (in.size() < 2 || !in[1].defined() || x.rank() != 2 || in[1].rank() != 2) return std::nullopt;
    const bool ta = intAttr(n, "transA", 0) != 0, tb = intAttr(n, "transB", 0) != 0;
    const int64_t M = ta ? x.dim(1) : x.dim(0), K = ta ? x.dim(0) : x.dim(1);
    const int64_t N = tb ? in[1].dim(0) : in[1].dim(1), Kb = tb ? in[1].dim(1) : in[1].dim(0);
    if (K != Kb) return std::nullopt;
    const bool bias = in.size() > 2 && in[2].defined();
    dnnl::memory::dims cd;
    if (bias) {
      const Shape& c = in[2].shape();
      if (c.size() > 2) return std::nullopt;
      cd = padded(c, 2);
      if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N)) return std::nullopt;
    }
    using dnnl::memory;
    auto ma = memory::desc({M, K}, memory::data_type::f32, ta ? memory::dims{1, M} : memory::dims{K, 1});
    auto mb = memory::desc({K, N}, memory::data_type::f32, tb ? memory::dims{1, K} : memory::dims{N, 1});
    auto my = dense({M, N});
    auto mc = bias ? dense(cd) : memory::desc();
    Tensor y(ops::DType::F32, {M, N});
    auto& p = d.primitive(key, [&] {
      return dnnl::matmul(dnnl::matmul::primitive_desc(
          bias ? dnnl::matmul::desc(ma, mb, mc, my) : dnnl::matmul::desc(ma, mb, my), d.engine));
    });
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, d.mem(ma, x)}, {DNNL_ARG_WEIGHTS, d.mem(mb, in[1])}, {DNNL_ARG_DST, d.mem(my, y)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, d.mem(mc, in[2]));
    d.exec(p, args);
    return V{y};
  }
  if (n.op == "Linear") {
    // strata's Linear, x [..., K] W^T [N, K] (+ b [N]): an inner product
    // over x's rows.
    if (in.size() < 2 || !in[1].defined() || x.rank() < 1 || in[1].rank() != 2) return std::nullopt;
    const int64_t K = x.dim(x.rank() - 1), N = in[1].dim(0), M = x.numel() / K;
    const bool bias = in.size() > 2 && in[2].defined();
    if (in[1].dim(1) != K || (bias && in[2].numel() != N)) return std::nullopt;
    auto ms = dense({M, K}), mw = dense({N, K}), my = dense({M, N});
    auto mb = bias ? dense({N}) : dnnl::memory::desc();
    Shape ys = x.shape();
    ys.back() = N;
    Tensor y(ops::DType::F32, ys);
    auto& p = d.primitive(key, [&] {
      using IP = dnnl::inner_product_forward;
      return IP(IP::primitive_desc(bias ? IP::desc(prop_kind::forward_inference, ms, mw, mb, my)
                                        : IP::desc(prop_kind::forward_inference, ms, mw, my),
                                   d.engine));
    });
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, d.mem(ms, x)}, {DNNL_ARG_WEIGHTS, d.mem(mw, in[1])}, {DNNL_ARG_DST, d.mem(my, y)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, d.mem(mb, in[2]));
    d.exec(p, args);
    return V{y};
  }
  if (n.op == "Softmax" || n.op == "LogSoftmax") {
    if (x.rank() < 1) return std::nullopt;
    int64_t axis = intAttr(n, "axis", -1);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis >= x.rank()) return std::nullopt;
    auto md = dense(dimsOf(x.shape()));
    Tensor y(ops::DType::F32, x.shape());
    auto& p = d.primitive(key, [&]() -> dnnl::primitive {
      if (n.op == "LogSoftmax")
        return dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(
            dnnl::logsoftmax_forward::desc(prop_kind::forward_inference, md, (int)axis), d.engine));
      return dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
          dnnl::softmax_forward::desc(prop_kind::forward_inference, md, (int)axis), d.engine));
    });
    d.exec(p, {{DNNL_ARG_SRC, d.mem(md, x)}, {DNNL_ARG_DST, d.mem(md, y)}});
    return V{y};
  }
  if (auto r = reductionOps().find(n.op); r != reductionOps().end()) {
    auto axes = axesOf(n, in);
    if (!axes || x.rank() < 1) return std::nullopt;
    std::vector<bool> reduced(x.rank(), axes->empty());
    for (int64_t a : *axes) {
      if (a < 0) a += x.rank();
      if (a < 0 || a >= x.rank()) return std::nullopt;
      reduced[a] = true;
    }
    Shape kept = x.shape(), out;
    for (int64_t i = 0; i < x.rank(); ++i)
      if (reduced[i]) kept[i] = 1;
      else out.push_back(x.dim(i));
    if (kept == x.shape()) return std::nullopt;  // oneDNN refuses a reduction that reduces nothing
    auto ms = dense(dimsOf(x.shape())), md = dense(dimsOf(kept));
    Tensor y(ops::DType::F32, kept);
    auto& p = d.primitive(key, [&] {
      return dnnl::reduction(
          dnnl::reduction::primitive_desc(dnnl::reduction::desc(r->second, ms, md, 0.f, 0.f), d.engine));
    });
    d.exec(p, {{DNNL_ARG_SRC, d.mem(ms, x)}, {DNNL_ARG_DST, d.mem(md, y)}});
    return V{intAttr(n, "keepdims", 1) ? y : y.reshaped(out)};
  }
  if (n.op == "Transpose") {
    std::vector<int64_t> perm(x.rank());
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (n.attrs.contains("perm")) perm = n.attrs.at("perm").get<std::vector<int64_t>>();
    if ((int64_t)perm.size() != x.rank() || x.rank() < 1) return std::nullopt;
    Shape ys(x.rank());
    const auto xs = denseStrides(dimsOf(x.shape()));
    dnnl::memory::dims view(x.rank());  // x's strides in y's dim order
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (perm[i] < 0 || perm[i] >= x.rank()) return std::nullopt;
      ys[i] = x.dim(perm[i]);
      view[i] = xs[perm[i]];
    }
    Tensor y(ops::DType::F32, ys);
    auto msrc = dnnl::memory::desc(dimsOf(ys), dnnl::memory::data_type::f32, view), mdst = dense(dimsOf(ys));
    dnnl::memory src = d.mem(msrc, x), dst = d.mem(mdst, y);
    auto& p = d.primitive(key, [&] { return dnnl::reorder(src, dst); });
    d.exec(p, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
    return V{y};
  }
  if (n.op == "Slice" || n.op == "Split") {
    // Windows along axes of x (Slice: steps of 1 only; Split: consecutive
    // pieces along one axis), each a reorder from a submemory view of x.
    const auto xd = dimsOf(x.shape());
    std::vector<std::pair<dnnl::memory::dims, dnnl::memory::dims>> windows;  // (dims, offsets)
    if (n.op == "Slice") {
      auto vec = [&](size_t i) { return in.size() > i && in[i].defined() ? in[i].toI64Vector() : std::vector<int64_t>{}; };
      const auto starts = vec(1), ends = vec(2), steps = vec(4);
      auto axes = vec(3);
      if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size())) return std::nullopt;
      if (axes.empty()) {
        axes.resize(starts.size());
        std::iota(axes.begin(), axes.end(), 0);
      }
      dnnl::memory::dims dims = xd, offs(xd.size(), 0);
      for (size_t i = 0; i < starts.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + x.rank() : axes[i];
        if (a < 0 || a >= x.rank() || (!steps.empty() && steps[i] != 1)) return std::nullopt;
        auto clampIndex = [&](int64_t v) { return std::clamp(v < 0 ? v + x.dim(a) : v, (int64_t)0, x.dim(a)); };
        const int64_t b = clampIndex(starts[i]), e = clampIndex(ends[i]);
        if (e <= b) return std::nullopt;  // empty: no oneDNN tensor
        offs[a] = b, dims[a] = e - b;
      }
      windows.push_back({dims, offs});
    } else {
      int64_t axis = intAttr(n, "axis", 0);
      if (axis < 0) axis += x.rank();
      if (axis < 0 || axis >= x.rank()) return std::nullopt;
      std::vector<int64_t> sizes = in.size() > 1 && in[1].defined() ? in[1].toI64Vector() : std::vector<int64_t>{};
      if (sizes.empty()) {
        const int64_t parts = intAttr(n, "num_outputs", (int64_t)n.outputs.size());
        if (parts <= 0 || x.dim(axis) % parts) return std::nullopt;
        sizes.assign(parts, x.dim(axis) / parts);
      }
      int64_t at = 0;
      for (int64_t sz : sizes) {
        if (sz <= 0) return std::nullopt;
        dnnl::memory::dims dims = xd, offs(xd.size(), 0);
        dims[axis] = sz, offs[axis] = at;
        at += sz;
        windows.push_back({dims, offs});
      }
      if (at != x.dim(axis)) return std::nullopt;
    }
    V outs;
    for (size_t w = 0; w < windows.size(); ++w) {
      const auto& [dims, offs] = windows[w];
      Tensor y(ops::DType::F32, Shape(dims.begin(), dims.end()));
      dnnl::memory src = d.mem(dense(xd).submemory_desc(dims, offs), x), dst = d.mem(dense(dims), y);
      auto& p = d.primitive(key + fmt::format("|{}", w), [&] { return dnnl::reorder(src, dst); });
      d.exec(p, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
      outs.push_back(std::move(y));
    }
    return outs;
  }
  if (n.op == "Concat") {
    int64_t axis = intAttr(n, "axis", 0);
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis >= x.rank()) return std::nullopt;
    Shape ys = x.shape();
    ys[axis] = 0;
    std::vector<dnnl::memory::desc> mds;
    for (const Tensor& t : in) {
      if (!t.defined() || t.rank() != x.rank()) return std::nullopt;
      for (int64_t i = 0; i < x.rank(); ++i)
        if (i != axis && t.dim(i) != x.dim(i)) return std::nullopt;
      ys[axis] += t.dim(axis);
      mds.push_back(dense(dimsOf(t.shape())));
    }
    Tensor y(ops::DType::F32, ys);
    auto my = dense(dimsOf(ys));
    auto& p = d.primitive(key, [&] { return dnnl::concat(dnnl::concat::primitive_desc(my, (int)axis, mds, d.engine)); });
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, d.mem(my, y)}};
    for (size_t i = 0; i < in.size(); ++i) args.emplace(DNNL_ARG_MULTIPLE_SRC + (int)i, d.mem(mds[i], in[i]));
    d.exec(p, args);
    return V{y};
  }
  return std::nullopt;
}

}  // namespace strata::runtime
