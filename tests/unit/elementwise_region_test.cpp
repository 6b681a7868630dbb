// Conformance of the generated fused elementwise / reduction kernel
// (codegen/ElementwiseKernel) through the whole CPU path: an unfused graph is
// formed into region.elementwise nodes, planned for the CPU, JIT-compiled and
// run by the executor; its outputs must equal the reference executor's on the
// unfused graph (ops/ reference kernels), on ragged rows and widths (1, 7,
// a block, and widths with a block part and a tail). f32; the bound is on the
// error relative to each output's largest magnitude.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "codegen/CpuBackend.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/RegionKernels.h"
#include "graph/Pipeline.h"
#include "runtime/executor.h"
#include "tests/unit/conformance.h"

using namespace strata;
using nlohmann::json;
using ops::DType;
using ops::Tensor;

namespace {

ops::Dim sym(const char* s) { return {-1, s}; }
ops::Dim fixed(int64_t v) { return {v, ""}; }

Tensor scalar(float v) { return Tensor::scalarF32(v); }
Tensor ints(std::vector<int64_t> v) {
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

ops::GraphDef base(const char* name, std::vector<ops::ValueInfo> inputs, std::vector<std::string> outputs) {
  ops::GraphDef g;
  g.source = name;
  g.inputs = std::move(inputs);
  for (auto& o : outputs) g.outputs.push_back({o, DType::F32, {}, false});
  return g;
}

std::vector<Chain> chains() {
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
  return c;
}

struct Compiled {
  std::shared_ptr<tile::CpuKernels> module;
  ops::GraphDef graph;
};

Compiled compile(const ops::GraphDef& g) {
  tile::KernelPlan plan = tile::planCpuKernels(graph::formRegions(g), {});
  if (getenv("DUMP")) std::ofstream(getenv("DUMP")) << plan.tileIr;
  Compiled c{std::shared_ptr<tile::CpuKernels>(tile::CpuKernels::compile(plan.tileIr)), std::move(plan.graph)};
  return c;
}

TEST(ElementwiseRegionKernel, MatchesReferenceOnRaggedShapes) {
  const int64_t block = tile::cpuRowBlockN(tile::hostCpuTarget());
  std::mt19937 rng(11);
  for (const Chain& ch : chains()) {
    for (int64_t C : {int64_t(1), int64_t(7), block, 2 * block + 5, int64_t(300)}) {
      ops::GraphDef g = ch.graph(C);
      Compiled k = compile(g);
      for (const auto& n : k.graph.nodes) ASSERT_EQ(n.op, "region.elementwise") << ch.name;
      std::shared_ptr<tile::CpuKernels> module = k.module;
      runtime::Executor gen(k.graph, [module](const std::string& n) { return module->lookup(n); });
      runtime::Executor ref(g);
      for (int64_t R : {1, 3, 37}) {
        runtime::TensorMap in;
        for (auto& [name, shape] : ch.shapes(R, C)) in[name] = strata::testing::randomTensor(shape, rng, -2.f, 2.f);
        auto want = ref.run(in);
        auto got = gen.run(in);
        for (const auto& o : g.outputs) {
          SCOPED_TRACE(fmt::format("{}: output {}, rows {}, width {}", ch.name, o.name, R, C));
          ASSERT_EQ(got.at(o.name).shape(), want.at(o.name).shape());
          EXPECT_LT(strata::testing::maxRelError(got.at(o.name), want.at(o.name)), 2e-6);
        }
      }
      if (std::string(ch.name) == "softmax_tanh" && C > 1) {
        // A launch whose operands do not have the planned forms is refused.
        runtime::TensorMap in{{"x", strata::testing::randomTensor({3, C}, rng)},
                              {"b", strata::testing::randomTensor({3, C}, rng)}};
        try {
          gen.run(in);
          ADD_FAILURE() << "a full operand where a row was planned ran";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("built for a row operand"), std::string::npos) << e.what();
        }
      }
    }
  }
}

// What the row-wise form does not cover is refused at planning, naming the
// node and the step.
TEST(ElementwiseRegionKernel, RefusesWhatTheRowFormDoesNotCover) {
  auto expectError = [](ops::GraphDef g, const char* needle) {
    try {
      tile::planCpuKernels(graph::formRegions(g), {});
      ADD_FAILURE() << g.source << ": planned";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << g.source << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("region.elementwise"), std::string::npos) << e.what();
    }
  };
  auto axis0 = base("axis0", {{"x", DType::F32, {sym("n"), fixed(8)}, true}}, {"y"});
  axis0.nodes = {{"Exp", "e", {"x"}, {"t"}, json::object()},
                 {"ReduceSum", "s", {"t"}, {"y"}, {{"axes", {0}}, {"keepdims", 1}}}};
  expectError(axis0, "along the last axis only");

  auto partial = base("partial", {{"x", DType::F32, {fixed(2), sym("n"), fixed(8)}, true},
                                  {"b", DType::F32, {fixed(2), fixed(1), fixed(8)}, true}}, {"y"});
  partial.nodes = {{"Add", "a", {"x", "b"}, {"t"}, json::object()}, {"Exp", "e", {"t"}, {"y"}, json::object()}};
  expectError(partial, "broadcast along some leading dims");

  auto width = base("width", {{"x", DType::F32, {sym("n"), sym("w")}, true}}, {"y"});
  width.nodes = {{"Exp", "e", {"x"}, {"y"}, json::object()}};
  expectError(width, "row width");

  auto cast = base("cast16", {{"x", DType::F32, {sym("n"), fixed(8)}, true}}, {"y"});
  cast.nodes = {{"Exp", "e", {"x"}, {"t"}, json::object()}, {"Cast", "c", {"t"}, {"y"}, {{"to", "f16"}}}};
  expectError(cast, "casts to f16");
}

}  // namespace
