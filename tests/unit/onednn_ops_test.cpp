// The CPU backend's ops outside the regions (runtime/onednn_ops.h): each op
// oneDNN runs equals its reference kernel on ragged and broadcast shapes;
// the forms oneDNN lacks (a broadcast first operand of Sub, non-f32
// tensors) are left to the reference; and a graph of such nodes runs on
// --backend cpu (planCpuKernels marks them, the executor dispatches) with
// the reference executor's results.
#include <gtest/gtest.h>

#include <random>

#include "codegen/targets/cpu/ModelKernels.h"
#include "ops/kernel_table.h"
#include "runtime/executor.h"
#include "runtime/onednn_ops.h"
#include "tests/unit/conformance.h"
#include "tools/cpu_model.h"

using namespace strata;
using ops::DType;
using ops::Shape;
using ops::Tensor;
namespace st = strata::testing;

namespace {

ops::NodeDef node(const std::string& op, size_t inputs, nlohmann::json attrs = nlohmann::json::object()) {
  ops::NodeDef n{op, op + "_node", {}, {"y"}, std::move(attrs)};
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("x" + std::to_string(i));
  return n;
}

Tensor i64s(std::vector<int64_t> v) {
  Tensor t(DType::I64, {(int64_t)v.size()});
  std::copy(v.begin(), v.end(), t.mut<int64_t>());
  return t;
}

// oneDNN's result for `n` on `in` equals the reference kernel's.
void expectLikeReference(runtime::OneDnnOps& d, const ops::NodeDef& n, const std::vector<Tensor>& in) {
  SCOPED_TRACE(n.op + " " + n.attrs.dump() + " on " + ops::shapeStr(in[0].shape()) +
               (in.size() > 1 ? " and " + ops::shapeStr(in[1].shape()) : ""));
  ASSERT_TRUE(runtime::OneDnnOps::covers(n));
  auto got = d.run(n, in);
  ASSERT_TRUE(got.has_value()) << "oneDNN declined";
  const Tensor want = (*ops::findKernel(n.op))(n, in).at(0);
  ASSERT_EQ(got->at(0).shape(), want.shape());
  EXPECT_LT(st::maxRelError(got->at(0), want), 1e-5);
}

TEST(OneDnnOps, MatchReferenceKernels) {
  runtime::OneDnnOps d;
  std::mt19937 rng(5);
  auto r = [&](Shape s) { return st::randomTensor(s, rng); };
  // MatMul: plain, batched, broadcast batch, 1-D operands.
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{{{7, 13}, {13, 5}},
                                                          {{3, 7, 13}, {3, 13, 9}},
                                                          {{2, 1, 5, 6}, {4, 6, 3}},
                                                          {{13}, {13, 5}},
                                                          {{2, 7, 13}, {13}}})
    expectLikeReference(d, node("MatMul", 2), {r(a), r(b)});
  // Gemm: transposes by strides, C as a row, a column, a full matrix, none.
  expectLikeReference(d, node("Gemm", 3), {r({7, 13}), r({13, 5}), r({5})});
  expectLikeReference(d, node("Gemm", 3, {{"transA", 1}, {"transB", 1}}), {r({13, 7}), r({5, 13}), r({7, 1})});
  expectLikeReference(d, node("Gemm", 3, {{"transB", 1}}), {r({7, 13}), r({5, 13}), r({7, 5})});
  expectLikeReference(d, node("Gemm", 2), {r({7, 13}), r({13, 5})});
  EXPECT_FALSE(runtime::OneDnnOps::covers(node("Gemm", 3, {{"alpha", 0.5}})));
  // Linear (an inner product over the rows), with and without a bias.
  expectLikeReference(d, node("Linear", 3), {r({2, 7, 13}), r({5, 13}), r({5})});
  expectLikeReference(d, node("Linear", 2), {r({7, 13}), r({5, 13})});
  for (int64_t axis : {-1, 0, 1}) {
    expectLikeReference(d, node("Softmax", 1, {{"axis", axis}}), {r({3, 17, 5})});
    expectLikeReference(d, node("LogSoftmax", 1, {{"axis", axis}}), {r({3, 17, 5})});
  }
  for (const char* op : {"Relu", "Tanh", "Sigmoid", "Exp", "Neg", "Abs", "Reciprocal", "Silu"})
    expectLikeReference(d, node(op, 1), {r({5, 33})});
  {
    Tensor pos = r({4, 9});
    for (int64_t i = 0; i < pos.numel(); ++i) pos.mut<float>()[i] = std::abs(pos.data<float>()[i]) + 0.1f;
    expectLikeReference(d, node("Log", 1), {pos});
    expectLikeReference(d, node("Sqrt", 1), {pos});
  }
  // Binary ops with broadcasting of either operand where the op commutes.
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    expectLikeReference(d, node(op, 2), {r({3, 5, 7}), r({3, 5, 7})});
    expectLikeReference(d, node(op, 2), {r({3, 5, 7}), r({7})});
    expectLikeReference(d, node(op, 2), {r({3, 5, 7}), r({3, 1, 1})});
  }
  for (const char* op : {"Add", "Mul", "Max", "Min"}) expectLikeReference(d, node(op, 2), {r({1, 7}), r({4, 7})});
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    expectLikeReference(d, node(op, 1, {{"axes", {-1}}, {"keepdims", 1}}), {r({4, 6, 11})});
    expectLikeReference(d, node(op, 1, {{"axes", {0, 2}}, {"keepdims", 0}}), {r({4, 6, 11})});
    expectLikeReference(d, node(op, 2, {{"keepdims", 1}}), {r({4, 6, 11}), i64s({1})});
  }
  {
    Tensor three(DType::F32, {});
    three.mut<float>()[0] = 3.f;
    expectLikeReference(d, node("Pow", 2), {r({5, 33}), three});
    EXPECT_FALSE(d.run(node("Pow", 2), {r({5, 33}), r({5, 33})})) << "an exponent per element";
  }
  expectLikeReference(d, node("Gelu", 1), {r({5, 33})});
  expectLikeReference(d, node("Gelu", 1, {{"approximate", "tanh"}}), {r({5, 33})});
  expectLikeReference(d, node("LayerNormalization", 3, {{"epsilon", 1e-5}}), {r({3, 7, 64}), r({64}), r({64})});
  expectLikeReference(d, node("LayerNormalization", 2, {{"axis", 1}}), {r({3, 7, 10}), r({7, 10})});
  expectLikeReference(d, node("Transpose", 1, {{"perm", {0, 2, 1, 3}}}), {r({2, 3, 5, 7})});
  expectLikeReference(d, node("Transpose", 1), {r({3, 5, 7})});
  expectLikeReference(d, node("Concat", 3, {{"axis", 1}}), {r({2, 3, 4}), r({2, 5, 4}), r({2, 1, 4})});
  expectLikeReference(d, node("Concat", 2, {{"axis", -1}}), {r({3, 4}), r({3, 9})});
}

// Slice (steps of 1: negative and clamped bounds, axes given or not) and
// Split (equal parts, given sizes): every output equals the reference's.
TEST(OneDnnOps, SlicesAndSplitsMatchReference) {
  runtime::OneDnnOps d;
  std::mt19937 rng(9);
  Tensor x = st::randomTensor({2, 5, 12}, rng);
  auto expectAll = [&](const ops::NodeDef& n, const std::vector<Tensor>& in) {
    SCOPED_TRACE(n.op + " " + n.attrs.dump());
    ASSERT_TRUE(runtime::OneDnnOps::covers(n));
    auto got = d.run(n, in);
    ASSERT_TRUE(got.has_value()) << "oneDNN declined";
    const auto want = (*ops::findKernel(n.op))(n, in);
    ASSERT_EQ(got->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got->at(i).shape(), want[i].shape()) << "output " << i;
      EXPECT_EQ(st::maxRelError(got->at(i), want[i]), 0.0) << "output " << i;
    }
  };
  expectAll(node("Slice", 5), {x, i64s({0}), i64s({4}), i64s({-1}), i64s({1})});
  expectAll(node("Slice", 5), {x, i64s({8}), i64s({INT64_MAX}), i64s({2}), i64s({1})});
  expectAll(node("Slice", 4), {x, i64s({1, -7}), i64s({-1, 11}), i64s({1, 2})});
  expectAll(node("Slice", 3), {x, i64s({1, 2}), i64s({2, 4})});
  EXPECT_FALSE(d.run(node("Slice", 5), {x, i64s({0}), i64s({12}), i64s({2}), i64s({2})})) << "steps of 2";
  ops::NodeDef split3 = node("Split", 1, {{"axis", 2}, {"num_outputs", 3}});
  split3.outputs = {"a", "b", "c"};
  expectAll(split3, {x});
  ops::NodeDef sized = node("Split", 2, {{"axis", -1}});
  sized.outputs = {"a", "b"};
  expectAll(sized, {x, i64s({8, 4})});
  ops::NodeDef rows = node("Split", 2, {{"axis", 1}});
  rows.outputs = {"a", "b", "c"};
  expectAll(rows, {x, i64s({1, 3, 1})});
}

TEST(OneDnnOps, LeavesWhatItLacksToTheReference) {
  runtime::OneDnnOps d;
  std::mt19937 rng(6);
  // Sub with its first operand broadcast: oneDNN broadcasts the second only.
  EXPECT_FALSE(d.run(node("Sub", 2), {st::randomTensor({7}, rng), st::randomTensor({3, 7}, rng)}));
  // Integer tensors (shape arithmetic) and ops it does not have.
  EXPECT_FALSE(d.run(node("Add", 2), {i64s({1, 2}), i64s({3, 4})}));
  EXPECT_FALSE(runtime::OneDnnOps::covers(node("Cos", 1)));
  EXPECT_FALSE(d.run(node("Cos", 1), {st::randomTensor({3}, rng)}));
}

// A graph of nodes outside any region (attention-style math, a Cos oneDNN
// lacks) on the CPU backend: every node planned as fallback, the results
// those of the reference executor.
TEST(OneDnnOps, FallbackNodesRunOnTheCpuBackend) {
  ops::GraphDef g;
  g.source = "fallback-graph";
  g.inputs = {{"q", DType::F32, {ops::Dim{4, ""}, ops::Dim{6, ""}}}, {"k", DType::F32, {ops::Dim{5, ""}, ops::Dim{6, ""}}}};
  auto add = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                 nlohmann::json attrs = nlohmann::json::object()) {
    g.nodes.push_back({op, out + "_node", std::move(in), {out}, std::move(attrs)});
  };
  add("Transpose", {"k"}, "kt", {{"perm", {1, 0}}});
  add("MatMul", {"q", "kt"}, "s");
  add("Softmax", {"s"}, "p", {{"axis", -1}});
  add("MatMul", {"p", "k"}, "o");
  add("Cos", {"o"}, "c");
  add("Sub", {"c", "o"}, "d");
  add("ReduceMean", {"d"}, "m", {{"axes", {-1}}, {"keepdims", 1}});
  add("Concat", {"d", "m"}, "y", {{"axis", 1}});
  g.outputs = {{"y", DType::F32, {ops::Dim{4, ""}, ops::Dim{7, ""}}}};
  tools::CompiledCpuModel m = tools::compileCpuModel(g, 16, /*verbose=*/false);
  for (const auto& n : m.graph.nodes) EXPECT_EQ(n.attrs.at("kernel").value("engine", ""), "fallback") << n.name;
  runtime::Executor cpu(std::move(m.graph), std::move(m.kernels)), ref(g);
  std::mt19937 rng(7);
  runtime::TensorMap in = {{"q", st::randomTensor({4, 6}, rng)}, {"k", st::randomTensor({5, 6}, rng)}};
  const Tensor got = cpu.run(in).at("y"), want = ref.run(in).at("y");
  ASSERT_EQ(got.shape(), (Shape{4, 7}));
  EXPECT_LT(st::maxRelError(got, want), 1e-5);
}

}  // namespace
