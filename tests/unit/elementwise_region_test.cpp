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

#include "codegen/targets/cpu/Backend.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/targets/cpu/ModelKernels.h"
#include "graph/Pipeline.h"
#include "runtime/executor.h"
#include "tests/unit/conformance.h"
#include "tests/unit/elementwise_chains.h"

using namespace strata;
using nlohmann::json;
using ops::DType;
using ops::Tensor;

namespace {

using namespace strata::tests;

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
