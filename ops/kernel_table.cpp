#include "ops/kernel_table.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/gemm_region.h"
#include "ops/reference.h"
#include "ops/regions.h"

namespace strata::ops {

using ops::Tensor;
using nlohmann::json;

namespace {

int64_t attrInt(const ops::NodeDef& n, const char* k, int64_t dflt) {
  auto it = n.attrs.find(k);
  return it == n.attrs.end() ? dflt : it->get<int64_t>();
}
float attrFloat(const ops::NodeDef& n, const char* k, float dflt) {
  auto it = n.attrs.find(k);
  return it == n.attrs.end() ? dflt : it->get<float>();
}
std::vector<int64_t> attrInts(const ops::NodeDef& n, const char* k) {
  auto it = n.attrs.find(k);
  return it == n.attrs.end() ? std::vector<int64_t>{} : it->get<std::vector<int64_t>>();
}
// An int list given as optional input `i` (newer opsets) or attribute `k`.
std::vector<int64_t> intsFromInputOrAttr(const ops::NodeDef& n, const std::vector<Tensor>& in, size_t i, const char* k) {
  if (in.size() > i && in[i].defined()) return in[i].toI64Vector();
  return attrInts(n, k);
}
const Tensor& need(const std::vector<Tensor>& in, size_t i, const ops::NodeDef& n) {
  if (in.size() <= i || !in[i].defined()) fail("missing required input #{}", i);
  return in[i];
}

using V = std::vector<Tensor>;

const Tensor* optional(const V& in, size_t i) { return in.size() > i && in[i].defined() ? &in[i] : nullptr; }

// RMSNormalization-23 and onnxruntime's SimplifiedLayerNormalization.
V rmsNormalizationK(const ops::NodeDef& n, const V& in) {
  return V{ops::rmsNormAxes(need(in, 0, n), need(in, 1, n), attrInt(n, "axis", -1), attrFloat(n, "epsilon", 1e-5f))};
}

// region.gemm (ops/gemm_region.h has the operands and attributes).
V gemmRegionK(const ops::NodeDef& n, const V& in) {
  const auto g = ops::GemmRegionOperands::of(n, in.size());
  V w(in.begin() + g.weight(0), in.begin() + g.weight(0) + g.weights), b;
  if (g.bias) b.assign(in.begin() + g.biasOf(0), in.begin() + g.biasOf(0) + g.weights);
  const Tensor* res = g.residual ? &in[g.residualAt()] : nullptr;
  const Tensor* rows = g.rows ? &in[g.rowsAt()] : nullptr;
  ops::GemmSpec spec{g.weightsNK, g.swiglu && g.gelu ? ops::GemmEpilogue::GeGLU
                                  : g.swiglu        ? ops::GemmEpilogue::SwiGLU
                                  : g.gelu          ? ops::GemmEpilogue::GeluTanh
                                                    : ops::GemmEpilogue::None};
  // The norm prologue normalizes every row; rows are independent, so
  // before the row gather is the same as after it.
  const Tensor x = g.norm ? ops::rmsNorm(need(in, 0, n), need(in, g.normAt(), n), g.normEps) : need(in, 0, n);
  return ops::gemmRegion(x, w, b, res, rows, spec);
}

// region.elementwise: runs its body's steps with their own reference kernels.
V elementwiseRegionK(const ops::NodeDef& n, const V& in) {
  V values(in);
  for (const json& step : n.attrs.at("body")) {
    ops::NodeDef s{step.at("op").get<std::string>(), n.name, {}, {""}, step.value("attrs", json::object())};
    const KernelFn* k = findKernel(s.op);
    if (!k || s.op.rfind("region.", 0) == 0) fail("{}: region.elementwise step '{}' has no reference kernel", n.name, s.op);
    V args;
    for (const json& i : step.at("inputs")) {
      size_t at = i.get<size_t>();
      if (at >= values.size()) fail("{}: region.elementwise step '{}' reads value #{} before it exists", n.name, s.op, at);
      args.push_back(values[at]);
    }
    values.push_back((*k)(s, args).at(0));
  }
  V outs;
  for (const json& i : n.attrs.at("outputs")) outs.push_back(values.at(i.get<size_t>()));
  return outs;
}

KernelFn binaryK(ops::BinaryOp op) {
  return [op](const ops::NodeDef& n, const V& in) {
    Tensor acc = need(in, 0, n);
    for (size_t i = 1; i < in.size(); ++i) acc = ops::binary(op, acc, need(in, i, n));  // variadic Max/Min
    if (in.size() < 2 && op != ops::BinaryOp::Max && op != ops::BinaryOp::Min) fail("needs two inputs");
    return V{acc};
  };
}
KernelFn unaryK(ops::UnaryOp op) {
  return [op](const ops::NodeDef& n, const V& in) { return V{ops::unary(op, need(in, 0, n))}; };
}
KernelFn reduceK(ops::ReduceOp op) {
  return [op](const ops::NodeDef& n, const V& in) {
    return V{ops::reduce(op, need(in, 0, n), intsFromInputOrAttr(n, in, 1, "axes"), attrInt(n, "keepdims", 1) != 0,
                         attrInt(n, "noop_with_empty_axes", 0) != 0)};
  };
}

// MakeShape: an int64 shape vector computed from input dims, the folded form
// of exporter shape arithmetic. attrs.dims[i] is either an integer or
// {"c": const, "terms": [[input, dim, coeff], ...]}; attrs.scalar makes the
// single entry a 0-d tensor.
V makeShape(const ops::NodeDef& n, const V& in) {
  std::vector<int64_t> vals;
  for (const json& e : n.attrs.at("dims")) {
    if (e.is_number_integer()) { vals.push_back(e.get<int64_t>()); continue; }
    int64_t v = e.value("c", (int64_t)0);
    for (const json& t : e.at("terms")) {
      const Tensor& src = need(in, t.at(0).get<size_t>(), n);
      v += src.dim(ops::normAxis(t.at(1).get<int64_t>(), src.rank())) * t.at(2).get<int64_t>();
    }
    vals.push_back(v);
  }
  if (n.attrs.value("scalar", false)) {
    if (vals.size() != 1) fail("MakeShape: scalar form needs exactly one entry");
    return V{Tensor::fromI64(vals, {})};
  }
  return V{Tensor::fromI64(vals)};
}

const std::map<std::string, KernelFn>& table() {
  using B = ops::BinaryOp;
  using U = ops::UnaryOp;
  static const std::map<std::string, KernelFn> t = {
      {"Add", binaryK(B::Add)}, {"Sub", binaryK(B::Sub)}, {"Mul", binaryK(B::Mul)}, {"Div", binaryK(B::Div)},
      {"Pow", binaryK(B::Pow)}, {"Max", binaryK(B::Max)}, {"Min", binaryK(B::Min)}, {"Mod", binaryK(B::Mod)},
      {"Equal", binaryK(B::Equal)}, {"Less", binaryK(B::Less)}, {"LessOrEqual", binaryK(B::LessOrEqual)},
      {"Greater", binaryK(B::Greater)}, {"GreaterOrEqual", binaryK(B::GreaterOrEqual)},
      {"And", binaryK(B::And)}, {"Or", binaryK(B::Or)}, {"Xor", binaryK(B::Xor)},
      {"Neg", unaryK(U::Neg)}, {"Abs", unaryK(U::Abs)}, {"Sqrt", unaryK(U::Sqrt)},
      {"Reciprocal", unaryK(U::Reciprocal)}, {"Exp", unaryK(U::Exp)}, {"Log", unaryK(U::Log)},
      {"Sigmoid", unaryK(U::Sigmoid)}, {"Silu", unaryK(U::Silu)}, {"Tanh", unaryK(U::Tanh)}, {"Erf", unaryK(U::Erf)},
      {"Relu", unaryK(U::Relu)}, {"Cos", unaryK(U::Cos)}, {"Sin", unaryK(U::Sin)}, {"Floor", unaryK(U::Floor)},
      {"Ceil", unaryK(U::Ceil)}, {"Not", unaryK(U::Not)}, {"IsNaN", unaryK(U::IsNaN)}, {"IsInf", unaryK(U::IsInf)},
      {"Where", [](const ops::NodeDef& n, const V& in) { return V{ops::where(need(in, 0, n), need(in, 1, n), need(in, 2, n))}; }},
      {"Cast", [](const ops::NodeDef& n, const V& in) {
         return V{need(in, 0, n).cast(ops::parseDType(n.attrs.at("to").get<std::string>()))}; }},
      {"Identity", [](const ops::NodeDef& n, const V& in) { return V{need(in, 0, n)}; }},
      {"Shape", [](const ops::NodeDef& n, const V& in) {
         const Tensor& x = need(in, 0, n);
         int64_t r = x.rank(), s = attrInt(n, "start", 0), e = attrInt(n, "end", r);
         s = std::clamp<int64_t>(s < 0 ? s + r : s, 0, r);
         e = std::clamp<int64_t>(e < 0 ? e + r : e, 0, r);
         std::vector<int64_t> d(x.shape().begin() + s, x.shape().begin() + std::max(s, e));
         return V{Tensor::fromI64(d)}; }},
      {"Reshape", [](const ops::NodeDef& n, const V& in) {
         return V{ops::reshape(need(in, 0, n), need(in, 1, n).toI64Vector(), attrInt(n, "allowzero", 0) != 0)}; }},
      {"Transpose", [](const ops::NodeDef& n, const V& in) { return V{ops::transpose(need(in, 0, n), attrInts(n, "perm"))}; }},
      {"Slice", [](const ops::NodeDef& n, const V& in) {
         return V{ops::slice(need(in, 0, n), need(in, 1, n).toI64Vector(), need(in, 2, n).toI64Vector(),
                             intsFromInputOrAttr(n, in, 3, "axes"), intsFromInputOrAttr(n, in, 4, "steps"))}; }},
      {"Concat", [](const ops::NodeDef& n, const V& in) { return V{ops::concat(in, n.attrs.at("axis").get<int64_t>())}; }},
      {"Split", [](const ops::NodeDef& n, const V& in) {
         return ops::split(need(in, 0, n), attrInt(n, "axis", 0), intsFromInputOrAttr(n, in, 1, "split"),
                           attrInt(n, "num_outputs", (int64_t)n.outputs.size())); }},
      {"Gather", [](const ops::NodeDef& n, const V& in) { return V{ops::gather(need(in, 0, n), need(in, 1, n), attrInt(n, "axis", 0))}; }},
      {"GatherND", [](const ops::NodeDef& n, const V& in) {
         return V{ops::gatherND(need(in, 0, n), need(in, 1, n), attrInt(n, "batch_dims", 0))}; }},
      {"Expand", [](const ops::NodeDef& n, const V& in) { return V{ops::expand(need(in, 0, n), need(in, 1, n).toI64Vector())}; }},
      {"Tile", [](const ops::NodeDef& n, const V& in) { return V{ops::tile(need(in, 0, n), need(in, 1, n).toI64Vector())}; }},
      {"Unsqueeze", [](const ops::NodeDef& n, const V& in) {
         return V{ops::unsqueeze(need(in, 0, n), intsFromInputOrAttr(n, in, 1, "axes"))}; }},
      {"Flatten", [](const ops::NodeDef& n, const V& in) {
         const Tensor& x = need(in, 0, n);
         const int64_t r = x.rank(), a0 = attrInt(n, "axis", 1), a = a0 < 0 ? a0 + r : a0;
         if (a < 0 || a > r) fail("node '{}' (Flatten): axis {} is outside rank {}", n.name, a0, r);
         int64_t rows = 1, cols = 1;
         for (int64_t i = 0; i < r; ++i) (i < a ? rows : cols) *= x.dim(i);
         return V{x.reshaped({rows, cols})}; }},
      {"Squeeze", [](const ops::NodeDef& n, const V& in) {
         return V{ops::squeeze(need(in, 0, n), intsFromInputOrAttr(n, in, 1, "axes"))}; }},
      {"Range", [](const ops::NodeDef& n, const V& in) { return V{ops::range(need(in, 0, n), need(in, 1, n), need(in, 2, n))}; }},
      {"CumSum", [](const ops::NodeDef& n, const V& in) {
         return V{ops::cumsum(need(in, 0, n), need(in, 1, n).toI64Vector().at(0), attrInt(n, "exclusive", 0) != 0,
                              attrInt(n, "reverse", 0) != 0)}; }},
      {"ConstantOfShape", [](const ops::NodeDef& n, const V& in) {
         Tensor v = n.attrs.contains("value") ? ops::tensorFromJson(n.attrs.at("value")) : Tensor::scalarF32(0.f);
         return V{ops::constantOfShape(need(in, 0, n).toI64Vector(), v)}; }},
      {"Trilu", [](const ops::NodeDef& n, const V& in) {
         int64_t k = in.size() > 1 && in[1].defined() ? in[1].toI64Vector().at(0) : 0;
         return V{ops::trilu(need(in, 0, n), k, attrInt(n, "upper", 1) != 0)}; }},
      {"MatMul", [](const ops::NodeDef& n, const V& in) { return V{ops::matmul(need(in, 0, n), need(in, 1, n))}; }},
      {"Gemm", [](const ops::NodeDef& n, const V& in) {
         const Tensor* c = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
         return V{ops::gemm(need(in, 0, n), need(in, 1, n), c, attrFloat(n, "alpha", 1.f), attrFloat(n, "beta", 1.f),
                            attrInt(n, "transA", 0) != 0, attrInt(n, "transB", 0) != 0)}; }},
      {"Softmax", [](const ops::NodeDef& n, const V& in) { return V{ops::softmax(need(in, 0, n), attrInt(n, "axis", -1))}; }},
      {"LogSoftmax", [](const ops::NodeDef& n, const V& in) {
         return V{ops::logSoftmax(need(in, 0, n), attrInt(n, "axis", -1))}; }},
      {"ReduceMean", reduceK(ops::ReduceOp::Mean)}, {"ReduceSum", reduceK(ops::ReduceOp::Sum)},
      {"ReduceMax", reduceK(ops::ReduceOp::Max)}, {"ReduceMin", reduceK(ops::ReduceOp::Min)},
      {"SimplifiedLayerNormalization", rmsNormalizationK},
      {"LayerNormalization", [](const ops::NodeDef& n, const V& in) {
         return V{ops::layerNorm(need(in, 0, n), need(in, 1, n), optional(in, 2), attrInt(n, "axis", -1),
                                 attrFloat(n, "epsilon", 1e-5f))}; }},
      {"Gelu", [](const ops::NodeDef& n, const V& in) {
         const std::string a = n.attrs.value("approximate", std::string("none"));
         if (a != "none" && a != "tanh") fail("node '{}' (Gelu): approximate '{}' (none or tanh)", n.name, a);
         return V{ops::gelu(need(in, 0, n), a == "tanh")}; }},
      {"RMSNormalization", rmsNormalizationK},
      {"RotaryEmbedding", [](const ops::NodeDef& n, const V& in) {
         return V{ops::rotaryEmbedding(need(in, 0, n), need(in, 1, n), need(in, 2, n), optional(in, 3),
                                       attrInt(n, "interleaved", 0) != 0, attrInt(n, "rotary_embedding_dim", 0),
                                       attrInt(n, "num_heads", 0))}; }},
      {"onnx.Attention", [](const ops::NodeDef& n, const V& in) {
         ops::OnnxAttentionSpec s{attrFloat(n, "scale", 0.f), attrFloat(n, "softcap", 0.f), attrInt(n, "is_causal", 0) != 0,
                                  attrInt(n, "q_num_heads", 0), attrInt(n, "kv_num_heads", 0)};
         return ops::onnxAttention(need(in, 0, n), need(in, 1, n), need(in, 2, n), optional(in, 3), optional(in, 4),
                                   optional(in, 5), s); }},
      {"com.microsoft.GroupQueryAttention", [](const ops::NodeDef& n, const V& in) {
         for (size_t i = 9; i < in.size(); ++i)
           if (in[i].defined()) fail("GroupQueryAttention: input #{} (position_ids / attention_bias / head_sink) is not supported", i);
         ops::GqaSpec s{attrInt(n, "num_heads", 0), attrInt(n, "kv_num_heads", 0), attrFloat(n, "scale", 0.f),
                        attrFloat(n, "softcap", 0.f), attrInt(n, "do_rotary", 0) != 0,
                        attrInt(n, "rotary_interleaved", 0) != 0, attrInt(n, "local_window_size", -1)};
         return ops::groupQueryAttention(need(in, 0, n), need(in, 1, n), need(in, 2, n), optional(in, 3), optional(in, 4),
                                         need(in, 5, n), need(in, 6, n), optional(in, 7), optional(in, 8), s); }},
      {"com.microsoft.RotaryEmbedding", [](const ops::NodeDef& n, const V& in) {
         // x [B, S, H * D] (or 4-D), position_ids [B, S] (or one offset: p + s),
         // caches [maxPos, R/2]; num_heads 0 = from the cache width.
         if (attrFloat(n, "scale", 1.f) != 1.f) fail("{}: RotaryEmbedding scale != 1 is not supported", n.name);
         const Tensor& x = need(in, 0, n);
         const Tensor& cosT = need(in, 2, n);
         int64_t R = attrInt(n, "rotary_embedding_dim", 0), heads = attrInt(n, "num_heads", 0);
         if (x.rank() == 3 && heads == 0) heads = x.dim(2) / (R ? R : 2 * cosT.dim(cosT.rank() - 1));
         Tensor pos = need(in, 1, n);
         int64_t B = x.dim(0), S = x.rank() == 3 ? x.dim(1) : x.dim(2);
         if (pos.numel() == 1 && B * S > 1) {
           std::vector<int64_t> p(B * S);
           for (int64_t i = 0; i < B * S; ++i) p[i] = pos.toI64Vector()[0] + i % S;
           pos = Tensor::fromI64(p, {B, S});
         }
         return V{ops::rotaryEmbedding(x, cosT, need(in, 3, n), &pos, attrInt(n, "interleaved", 0) != 0, R, heads)}; }},
      {"com.microsoft.MultiHeadAttention", [](const ops::NodeDef& n, const V& in) {
         // Token-major q/k/v [B, S, H * D] with an additive attention_bias
         // (#5); bias, key_padding_mask, past K/V and packed forms are refused.
         for (size_t i : {3u, 4u, 6u, 7u})
           if (optional(in, i)) fail("{}: MultiHeadAttention input #{} (bias / key_padding_mask / past) is not supported", n.name, i);
         const Tensor& q = need(in, 0, n);
         if (q.rank() != 3 || need(in, 1, n).rank() != 3) fail("{}: MultiHeadAttention takes 3-D query and key", n.name);
         int64_t H = attrInt(n, "num_heads", 0);
         ops::OnnxAttentionSpec s{attrFloat(n, "scale", 0.f), 0.f, attrInt(n, "unidirectional", 0) != 0, H, H};
         return ops::onnxAttention(q, need(in, 1, n), need(in, 2, n), optional(in, 5), nullptr, nullptr, s); }},
      {"com.microsoft.SkipSimplifiedLayerNormalization", [](const ops::NodeDef& n, const V& in) {
         // input + skip (+ bias), then RMS-normalized over the last axis. The
         // mean / inv_std_var outputs (training) are not produced; the loader
         // refuses graphs that read them.
         Tensor sum = ops::binary(ops::BinaryOp::Add, need(in, 0, n), need(in, 1, n));
         if (const Tensor* b = optional(in, 3)) sum = ops::binary(ops::BinaryOp::Add, sum, *b);
         return V{ops::rmsNormAxes(sum, need(in, 2, n), -1, attrFloat(n, "epsilon", 1e-5f)), Tensor(), Tensor(), sum}; }},
      {"com.microsoft.FusedMatMul", [](const ops::NodeDef& n, const V& in) {
         if (attrInt(n, "transBatchA", 0) || attrInt(n, "transBatchB", 0)) fail("FusedMatMul: transBatchA/B are not supported");
         return V{ops::fusedMatMul(need(in, 0, n), need(in, 1, n), attrFloat(n, "alpha", 1.f), attrInt(n, "transA", 0) != 0,
                                   attrInt(n, "transB", 0) != 0)}; }},
      {"RMSNorm", [](const ops::NodeDef& n, const V& in) {
         return V{ops::rmsNorm(need(in, 0, n), need(in, 1, n), n.attrs.at("eps").get<float>())}; }},
      {"Rope", [](const ops::NodeDef& n, const V& in) {
         return V{ops::rope(need(in, 0, n), need(in, 1, n), n.attrs.at("theta").get<float>(),
                            n.attrs.value("rotary_dim", (int64_t)0))}; }},
      {"Attention", [](const ops::NodeDef& n, const V& in) {
         const Tensor* keyMask = in.size() > 3 && in[3].defined() ? &in[3] : nullptr;
         return V{ops::attention(need(in, 0, n), need(in, 1, n), need(in, 2, n), n.attrs.at("scale").get<float>(),
                                 n.attrs.value("causal", 0) != 0, keyMask)}; }},
      {"Linear", [](const ops::NodeDef& n, const V& in) {
         const Tensor* b = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
         return V{ops::linear(need(in, 0, n), need(in, 1, n), b)}; }},
      {"MakeShape", makeShape},
      {"region.embedding", [](const ops::NodeDef& n, const V& in) { return V{ops::gather(need(in, 0, n), need(in, 1, n), 0)}; }},
      {"region.layernorm", [](const ops::NodeDef& n, const V& in) {
         return V{ops::layerNorm(need(in, 0, n), need(in, 1, n), &need(in, 2, n), -1, attrFloat(n, "epsilon", 1e-5f))}; }},
      {"region.rmsnorm", [](const ops::NodeDef& n, const V& in) {
         return V{ops::rmsNorm(need(in, 0, n), need(in, 1, n), n.attrs.at("eps").get<float>())}; }},
      {"region.rope", [](const ops::NodeDef& n, const V& in) {
         return V{ops::ropeTokens(need(in, 0, n), need(in, 1, n), n.attrs.at("head_dim").get<int64_t>(),
                                  n.attrs.at("theta").get<float>(), n.attrs.value("rotary_dim", (int64_t)0))}; }},
      {"region.gemm", gemmRegionK},
      {"region.elementwise", elementwiseRegionK},
      {"region.rope_kv_write", [](const ops::NodeDef& n, const V& in) {
         // q, k, v, positions, cache, slot_mapping: the RoPE of q and k, then
         // the KV write of k' and v (graph-fuse-rope-kv-write).
         const int64_t D = n.attrs.at("head_dim").get<int64_t>(), R = n.attrs.value("rotary_dim", (int64_t)0);
         const float theta = n.attrs.at("theta").get<float>();
         const Tensor& pos = need(in, 3, n);
         Tensor k = ops::ropeTokens(need(in, 1, n), pos, D, theta, R);
         return V{ops::ropeTokens(need(in, 0, n), pos, D, theta, R),
                  ops::kvWrite(need(in, 4, n), k, need(in, 2, n), need(in, 5, n))}; }},
      {"region.kv_write", [](const ops::NodeDef& n, const V& in) {
         return V{ops::kvWrite(need(in, 0, n), need(in, 1, n), need(in, 2, n), need(in, 3, n))}; }},
      {"region.paged_attention", [](const ops::NodeDef& n, const V& in) {
         ops::PagedAttentionSpec s{n.attrs.at("heads").get<int64_t>(), n.attrs.at("kv_heads").get<int64_t>(),
                                   n.attrs.at("head_dim").get<int64_t>(), n.attrs.at("scale").get<float>()};
         return V{ops::pagedAttention(need(in, 0, n), need(in, 1, n), need(in, 2, n), need(in, 3, n), need(in, 4, n), s)}; }},
  };
  return t;
}

}  // namespace

const KernelFn* findKernel(const std::string& op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

bool isStrataOp(const std::string& op) {
  static const std::set<std::string> own = {"RMSNorm", "Rope", "Attention", "Linear", "Silu", "MakeShape"};
  return own.count(op) != 0 || op.rfind("region.", 0) == 0;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> r;
  for (const auto& [k, v] : table()) r.push_back(k);
  return r;
}

}  // namespace strata::ops
