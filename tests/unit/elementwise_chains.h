// Unfused graphs that region formation turns into region.elementwise
// nodes (one chain of ONNX-level ops each, at a given row width), shared by
// the CPU conformance test (tests/unit/elementwise_region_test.cpp) and the
// GPU one (its artifacts from tests/gpu/compile_elementwise_models.cpp,
// run by tests/unit/cuda_elementwise_test.cpp). Rows are the symbol "n".
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ops/graph_def.h"
#include "ops/tensor.h"

namespace strata::tests {

using nlohmann::json;
using ops::DType;
using ops::Tensor;

inline ops::Dim sym(const char* s) { return {-1, s}; }
inline ops::Dim fixed(int64_t v) { return {v, ""}; }

inline Tensor scalar(float v) { return Tensor::scalarF32(v); }
inline Tensor ints(std::vector<int64_t> v) {
  Tensor t(DType::I64, {(int64_t)v.size()});
  for (size_t i = 0; i < v.size(); ++i) t.mut<int64_t>()[i] = v[i];
  return t;
}

// One chain: the graph for a row width, and the shapes of its inputs for a
// row count.
struct Chain {
  const char* name;
  std::function<ops::GraphDef(int64_t cols)> graph;
  std::function<std::map<std::string, ops::Shape>(int64_t rows, int64_t cols)> shapes;
};

inline ops::GraphDef base(const char* name, std::vector<ops::ValueInfo> inputs, std::vector<std::string> outputs) {
  ops::GraphDef g;
  g.source = name;
  g.inputs = std::move(inputs);
  for (auto& o : outputs) g.outputs.push_back({o, DType::F32, {}, false});
  return g;
}

inline std::vector<Chain> chains() {
  std::vector<Chain> c;
  // Softmax of tanh of an affine map: full, row and scalar operands; two outputs.
  c.push_back({"softmax_tanh",
               [](int64_t C) {
                 auto g = base("softmax_tanh", {{"x", DType::F32, {sym("n"), fixed(C)}, true}, {"b", DType::F32, {fixed(C)}, true}},
                               {"p", "s"});
                 g.constants = {{"half", scalar(0.5f)}};
                 g.nodes = {{"Mul", "mul", {"x", "half"}, {"m"}, json::object()},
                            {"Add", "add", {"m", "b"}, {"s"}, json::object()},
                            {"Tanh", "tanh", {"s"}, {"t"}, json::object()},
                            {"Softmax", "softmax", {"t"}, {"p"}, {{"axis", -1}}}};
                 return g;
               },
               [](int64_t R, int64_t C) { return std::map<std::string, ops::Shape>{{"x", {R, C}}, {"b", {C}}}; }});
  // LayerNorm written out op by op: a reduction that depends on another
  // (axes as an attribute), row-vector weight and bias.
  c.push_back({"layernorm_unfused",
               [](int64_t C) {
                 auto g = base("layernorm_unfused",
                               {{"x", DType::F32, {sym("n"), fixed(C)}, true}, {"w", DType::F32, {fixed(C)}, true},
                                {"b", DType::F32, {fixed(C)}, true}},
                               {"y"});
                 // (The variance as a sum over a count: a mean of squares
                 // would be raised to region.rmsnorm of x - mu.)
                 g.constants = {{"eps", scalar(1e-5f)}, {"count", scalar((float)C)}};
                 g.nodes = {{"ReduceMean", "mean", {"x"}, {"mu"}, {{"axes", {-1}}, {"keepdims", 1}}},
                            {"Sub", "center", {"x", "mu"}, {"d"}, json::object()},
                            {"Mul", "square", {"d", "d"}, {"sq"}, json::object()},
                            {"ReduceSum", "sum", {"sq"}, {"ss"}, {{"axes", {-1}}, {"keepdims", 1}}},
                            {"Div", "var", {"ss", "count"}, {"v"}, json::object()},
                            {"Add", "add", {"v", "eps"}, {"ve"}, json::object()},
                            {"Sqrt", "sqrt", {"ve"}, {"rt"}, json::object()},
                            {"Reciprocal", "recip", {"rt"}, {"inv"}, json::object()},
                            {"Mul", "scale", {"d", "inv"}, {"xn"}, json::object()},
                            {"Mul", "weight", {"xn", "w"}, {"xw"}, json::object()},
                            {"Add", "bias", {"xw", "b"}, {"y"}, json::object()}};
                 return g;
               },
               [](int64_t R, int64_t C) {
                 return std::map<std::string, ops::Shape>{{"x", {R, C}}, {"w", {C}}, {"b", {C}}};
               }});
  // GELU (erf) with per-row outputs: a max without keepdims, a min with
  // it, a sum whose axes are an input (opset 18), a cast to f32.
  c.push_back({"gelu_reductions",
               [](int64_t C) {
                 auto g = base("gelu_reductions", {{"x", DType::F32, {sym("n"), fixed(C)}, true}}, {"g", "mx", "mn", "sm"});
                 g.constants = {{"rsqrt2", scalar(0.70710678f)}, {"one", scalar(1.f)}, {"half", scalar(0.5f)},
                                {"last", ints({-1})}};
                 g.nodes = {{"Mul", "scale", {"x", "rsqrt2"}, {"xs"}, json::object()},
                            {"Erf", "erf", {"xs"}, {"e"}, json::object()},
                            {"Add", "add", {"e", "one"}, {"e1"}, json::object()},
                            {"Mul", "mul", {"x", "e1"}, {"xe"}, json::object()},
                            {"Mul", "halve", {"xe", "half"}, {"gc"}, json::object()},
                            {"Cast", "cast", {"gc"}, {"g"}, {{"to", "f32"}}},
                            {"ReduceMax", "max", {"g"}, {"mx"}, {{"axes", {1}}, {"keepdims", 0}}},
                            {"ReduceMin", "min", {"x"}, {"mn"}, {{"axes", {-1}}, {"keepdims", 1}}},
                            {"ReduceSum", "sum", {"g", "last"}, {"sm"}, {{"keepdims", 1}}}};
                 return g;
               },
               [](int64_t R, int64_t C) { return std::map<std::string, ops::Shape>{{"x", {R, C}}}; }});
  // A per-row operand and the remaining unary / binary ops, in a 3-D space.
  c.push_back({"col_operand_3d",
               [](int64_t C) {
                 auto g = base("col_operand_3d",
                               {{"x", DType::F32, {fixed(2), sym("n"), fixed(C)}, true},
                                {"c", DType::F32, {fixed(2), sym("n"), fixed(1)}, true},
                                {"w", DType::F32, {fixed(1), fixed(1), fixed(C)}, true}},
                               {"y", "z"});
                 g.constants = {{"one", scalar(1.f)}};
                 g.nodes = {{"Sub", "sub", {"x", "c"}, {"d"}, json::object()},
                            {"Abs", "abs", {"d"}, {"a"}, json::object()},
                            {"Add", "add1", {"a", "one"}, {"a1"}, json::object()},
                            {"Log", "log", {"a1"}, {"l"}, json::object()},
                            {"Sigmoid", "sig", {"d"}, {"sg"}, json::object()},
                            {"Silu", "silu", {"x"}, {"si"}, json::object()},
                            {"Relu", "relu", {"w"}, {"rw"}, json::object()},
                            {"Neg", "neg", {"c"}, {"nc"}, json::object()},
                            {"Exp", "exp", {"nc"}, {"ec"}, json::object()},
                            {"Max", "max", {"l", "sg"}, {"mx"}, json::object()},
                            {"Min", "min", {"si", "rw"}, {"mn"}, json::object()},
                            {"Div", "div", {"mx", "ec"}, {"q"}, json::object()},
                            {"Add", "add2", {"q", "mn"}, {"y"}, json::object()},
                            {"Mul", "mul", {"c", "ec"}, {"z"}, json::object()}};
                 return g;
               },
               [](int64_t R, int64_t C) {
                 return std::map<std::string, ops::Shape>{{"x", {2, R, C}}, {"c", {2, R, 1}}, {"w", {1, 1, C}}};
               }});
  // Pow with a per-column exponent (NVPTX has no pow: the GPU expands it).
  c.push_back({"pow_row_exponent",
               [](int64_t C) {
                 auto g = base("pow_row_exponent",
                               {{"x", DType::F32, {sym("n"), fixed(C)}, true}, {"e", DType::F32, {fixed(C)}, true}},
                               {"y"});
                 g.constants = {{"quarter", scalar(0.25f)}};
                 g.nodes = {{"Abs", "abs", {"x"}, {"a"}, json::object()},
                            {"Add", "add", {"a", "quarter"}, {"b"}, json::object()},
                            {"Pow", "pow", {"b", "e"}, {"y"}, json::object()}};
                 return g;
               },
               [](int64_t R, int64_t C) { return std::map<std::string, ops::Shape>{{"x", {R, C}}, {"e", {C}}}; }});
  return c;
}

// Every chain at every width in `widths` as one graph: chain c at width C
// has its names (inputs, outputs, constants, nodes, values) prefixed
// "c_C.". Its inputs' shapes at `rows` rows come from caseShapes.
inline ops::GraphDef allChains(const std::vector<int64_t>& widths) {
  ops::GraphDef all;
  all.source = "elementwise chains";
  for (const Chain& ch : chains())
    for (int64_t C : widths) {
      const std::string p = fmt::format("{}_{}.", ch.name, C);
      ops::GraphDef g = ch.graph(C);
      for (auto v : g.inputs) v.name = p + v.name, all.inputs.push_back(v);
      for (auto v : g.outputs) v.name = p + v.name, all.outputs.push_back(v);
      for (auto c : g.constants) c.name = p + c.name, all.constants.push_back(c);
      for (auto n : g.nodes) {
        n.name = p + n.name;
        for (auto& i : n.inputs)
          if (!i.empty()) i = p + i;
        for (auto& o : n.outputs)
          if (!o.empty()) o = p + o;
        all.nodes.push_back(n);
      }
    }
  return all;
}

// The input shapes of allChains(widths) at `rows` rows.
inline std::map<std::string, ops::Shape> allChainShapes(const std::vector<int64_t>& widths, int64_t rows) {
  std::map<std::string, ops::Shape> shapes;
  for (const Chain& ch : chains())
    for (int64_t C : widths)
      for (auto& [name, shape] : ch.shapes(rows, C)) shapes[fmt::format("{}_{}.{}", ch.name, C, name)] = shape;
  return shapes;
}

}  // namespace strata::tests
