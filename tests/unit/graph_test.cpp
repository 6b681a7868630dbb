// Normalization on the real exports: shape arithmetic folds away, symbolic
// dims survive, and import/export round-trips.
#include <gtest/gtest.h>

#include <map>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "runtime/executor.h"

using namespace strata;

namespace {
std::map<std::string, int> histogram(const ops::GraphDef& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes) ++h[n.op];
  return h;
}
const std::string kFixture = STRATA_FIXTURE_DIR;
}  // namespace

TEST(Normalize, FoldsExporterShapeArithmetic) {
  for (const char* f : {"model_dynamo.onnx", "decoder_with_past.onnx", "decoder_with_past_dynamo.onnx"}) {
    ops::GraphDef raw = models::loadModel(kFixture + "/" + f);
    ops::GraphDef norm = graph::normalize(raw);
    auto before = histogram(raw), after = histogram(norm);
    EXPECT_GT(before["Shape"], 0) << f;
    EXPECT_EQ(after["Shape"], 0) << f << ": Shape chains should fold into MakeShape/constants";
    EXPECT_LT(norm.nodes.size(), raw.nodes.size()) << f;
  }
}

TEST(Normalize, LogitsShapeIsSymbolic) {
  ops::GraphDef norm = graph::normalize(models::loadModel(kFixture + "/decoder_with_past.onnx"));
  ASSERT_EQ(norm.outputs[0].name, "logits");
  ASSERT_TRUE(norm.outputs[0].shapeKnown);
  ASSERT_EQ(norm.outputs[0].shape.size(), 3u);
  EXPECT_EQ(norm.outputs[0].shape[0].symbol, "batch");
  EXPECT_EQ(norm.outputs[0].shape[1].symbol, "sequence");
  EXPECT_EQ(norm.outputs[0].shape[2].value, 512);
}

TEST(Normalize, HfGraphKeepsHighLevelOps) {
  ops::GraphDef norm = graph::normalize(models::loadModel(kFixture));
  auto h = histogram(norm);
  EXPECT_EQ(h["Attention"], 2);
  EXPECT_EQ(h["RMSNorm"], 5);
  EXPECT_EQ(h["Rope"], 4);
  EXPECT_EQ(h["Linear"], 15);
}

TEST(Normalize, JsonPlanRoundTrips) {
  ops::GraphDef norm = graph::normalize(models::loadModel(kFixture + "/model_dynamo.onnx"));
  ops::GraphDef back = ops::graphFromJson(ops::toJson(norm));
  EXPECT_EQ(ops::toJson(back), ops::toJson(norm));
}

TEST(Normalize, UnknownOpInGraphDefIsNamed) {
  ops::GraphDef g;
  g.source = "handmade";
  g.inputs = {{"x", ops::DType::F32, {{2, ""}}}};
  g.outputs = {{"y", ops::DType::F32, {{2, ""}}}};
  g.nodes = {{"Frobnicate", "n1", {"x"}, {"y"}, {}}};
  try {
    graph::normalize(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'n1'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Frobnicate"), std::string::npos);
  }
}

// A leftover elementwise chain becomes one region.elementwise whose reference
// execution (its steps, in order) equals the unfused graph's, through the
// GraphDef plan form (JSON) too.
TEST(Regions, ElementwiseChainRunsAsOneRegion) {
  ops::GraphDef g;
  g.source = "chain";
  g.inputs = {{"x", ops::DType::F32, {{-1, "n"}, {8, ""}}, true}, {"bias", ops::DType::F32, {{8, ""}}, true}};
  g.outputs = {{"p", ops::DType::F32, {}, false}, {"s", ops::DType::F32, {}, false}};
  g.constants = {{"half", ops::Tensor::scalarF32(0.5f)}};
  g.nodes = {{"Mul", "mul", {"x", "half"}, {"m"}, nlohmann::json::object()},
             {"Add", "add", {"m", "bias"}, {"s"}, nlohmann::json::object()},
             {"Tanh", "tanh", {"s"}, {"t"}, nlohmann::json::object()},
             {"Softmax", "softmax", {"t"}, {"p"}, {{"axis", -1}}}};
  ops::GraphDef r = ops::graphFromJson(ops::toJson(graph::formRegions(g)));
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].op, "region.elementwise");
  EXPECT_EQ(r.nodes[0].attrs["body"].size(), 4u);
  ops::Tensor x(ops::DType::F32, {3, 8}), bias(ops::DType::F32, {8});
  for (int i = 0; i < 24; ++i) x.mut<float>()[i] = 0.37f * (float)(i % 7) - 1.f;
  for (int i = 0; i < 8; ++i) bias.mut<float>()[i] = 0.1f * (float)i;
  auto want = runtime::Executor(g).run({{"x", x}, {"bias", bias}});
  auto got = runtime::Executor(r).run({{"x", x}, {"bias", bias}});
  for (const char* o : {"p", "s"})
    for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(got.at(o).data<float>()[i], want.at(o).data<float>()[i]) << o << " " << i;
}
