// Region formation end to end: every tiny-llama source and self-built
// Mistral/Qwen2-style models become the same per-layer regions with no
// fallback, and the region graph on the paged cache reproduces the fixtures'
// greedy tokens (several block sizes, blocks smaller than the prompt).
#include <gtest/gtest.h>

#include "fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "graph/Pipeline.h"
#include "graph/RegionReport.h"
#include "models/model_source.h"
#include "models/random_model.h"
#include "runtime/generate.h"
#include "runtime/paged_generate.h"

using namespace strata;
using nlohmann::json;

namespace {

using fixture::fixtureDir;
using fixture::reference;

// Per layer: one paged attention (and its KV write), rmsnorm before attention
// and MLP, rope on q and k, gemms q/k/v, o-proj + residual, gate/up + SwiGLU,
// down + residual; then the final norm and lm_head; nothing left over.
void expectLlamaRegions(const json& r, int64_t layers, bool qkvBias) {
  ASSERT_EQ(r["layers"], layers);
  EXPECT_TRUE(r["fallback"].empty()) << r["fallback"].dump();
  std::map<std::string, std::vector<std::string>> perLayer;  // layer -> "kind:detail" in order
  for (const auto& x : r["regions"]) {
    std::string key = x["layer"].is_null() ? x["stage"].get<std::string>() : std::to_string(x["layer"].get<int64_t>());
    perLayer[key].push_back(x["kind"].get<std::string>() + ":" + x["detail"].get<std::string>());
  }
  std::string qkv = qkvBias ? "gemm:q/k/v + bias" : "gemm:q/k/v";
  for (int64_t l = 0; l < layers; ++l)
    EXPECT_EQ(perLayer[std::to_string(l)],
              (std::vector<std::string>{"rmsnorm:", qkv, "rope:head_dim 16", "rope:head_dim 16", "kv_write:layer " + std::to_string(l),
                                        "paged_attention:4 heads / 2 kv heads x 16", "gemm:projection + residual", "rmsnorm:",
                                        "gemm:gate/up + swiglu", "gemm:projection + residual"}))
        << "layer " << l;
  EXPECT_EQ(perLayer["embed"], std::vector<std::string>{"embedding:gather"});
  EXPECT_EQ(perLayer["head"], (std::vector<std::string>{"rmsnorm:", "gemm:lm_head (last token per sequence)"}));
}

class RegionFixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  ops::GraphDef regions() { return graph::formRegions(models::loadModel(fixtureDir() + "/" + GetParam())); }
};

TEST_P(RegionFixtureTest, OneRegionSetPerLayerNoFallback) { expectLlamaRegions(graph::describeRegions(regions()), 2, false); }

TEST_P(RegionFixtureTest, PagedGreedyMatchesReference) {
  runtime::Executor exec(regions());
  for (int64_t blockSize : {4, 16, 64}) {
    for (int idx : {0, 1}) {
      runtime::GenerateRequest req;
      req.promptIds = reference()["token_ids"][idx].get<std::vector<int64_t>>();
      req.maxNewTokens = 24;
      auto want = reference()[idx ? "greedy_prompt1_24" : "greedy_prompt0_24"].get<std::vector<int64_t>>();
      EXPECT_EQ(runtime::generatePaged(exec, req, {blockSize, 0}), want) << "block size " << blockSize << " prompt " << idx;
    }
  }
}

// onnxruntime-optimized graphs carry RMSNorm as one SimplifiedLayerNormalization
// node. The TorchScript fixture with each decomposed RMSNorm replaced by that
// node (what ORT's fusion writes): the unfused graph runs it with the
// reference kernel, and region formation raises it to the same rmsnorm
// regions, both reproducing the fixture's tokens.
ops::GraphDef withSimplifiedLayerNorm(ops::GraphDef g) {
  auto consumer = [&](const std::string& value, const char* op) -> size_t {
    for (size_t j = 0; j < g.nodes.size(); ++j)
      if (g.nodes[j].op == op && std::count(g.nodes[j].inputs.begin(), g.nodes[j].inputs.end(), value)) return j;
    ADD_FAILURE() << "no " << op << " reads " << value;
    return 0;
  };
  auto constant = [&](const std::string& name) -> std::optional<double> {
    for (const auto& c : g.constants)
      if (c.name == name) return c.value.scalarAsDouble();
    return std::nullopt;
  };
  std::vector<bool> drop(g.nodes.size(), false);
  std::map<size_t, ops::NodeDef> fused;  // at the Pow's position
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op != "Pow") continue;
    std::vector<size_t> chain{i};
    for (const char* op : {"ReduceMean", "Add", "Sqrt", "Div", "Mul", "Mul"})
      chain.push_back(consumer(g.nodes[chain.back()].outputs[0], op));
    const ops::NodeDef &add = g.nodes[chain[2]], &last = g.nodes[chain[6]];
    std::optional<double> eps = constant(add.inputs[0]) ? constant(add.inputs[0]) : constant(add.inputs[1]);
    std::string w = last.inputs[0] == g.nodes[chain[5]].outputs[0] ? last.inputs[1] : last.inputs[0];
    if (!eps) ADD_FAILURE() << "no epsilon constant at " << add.name;
    for (size_t j : chain) drop[j] = true;
    fused[i] = ops::NodeDef{"SimplifiedLayerNormalization", "SLN_" + std::to_string(fused.size()),
                            {g.nodes[i].inputs[0], w}, {last.outputs[0]}, {{"axis", -1}, {"epsilon", eps.value_or(0)}}};
  }
  std::vector<ops::NodeDef> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (fused.count(i)) nodes.push_back(fused[i]);
    if (!drop[i]) nodes.push_back(g.nodes[i]);
  }
  EXPECT_EQ(fused.size(), 5u);  // 2 layers x 2 + the final norm
  g.nodes = nodes;
  return g;
}

TEST(SimplifiedLayerNormalization, RunsAndBecomesRmsNormRegions) {
  ops::GraphDef g = withSimplifiedLayerNorm(models::loadModel(fixtureDir() + "/decoder_with_past.onnx"));
  runtime::GenerateRequest req;
  req.promptIds = reference()["token_ids"][1].get<std::vector<int64_t>>();
  req.maxNewTokens = 24;
  auto want = reference()["greedy_prompt1_24"].get<std::vector<int64_t>>();
  runtime::Executor unfused(g);
  EXPECT_EQ(runtime::Generator(unfused).generate(req), want);
  ops::GraphDef r = graph::formRegions(g);
  expectLlamaRegions(graph::describeRegions(r), 2, false);
  runtime::Executor exec(r);
  EXPECT_EQ(runtime::generatePaged(exec, req, {4, 0}), want);
}

// The reference executor on region graph r gives the fixture's 24 greedy
// tokens of both prompts (paged, blocks of 4).
void expectFixtureTokens(const ops::GraphDef& r) {
  runtime::Executor exec(r);
  for (int idx : {0, 1}) {
    runtime::GenerateRequest req;
    req.promptIds = reference()["token_ids"][idx].get<std::vector<int64_t>>();
    req.maxNewTokens = 24;
    EXPECT_EQ(runtime::generatePaged(exec, req, {4, 0}),
              reference()[fmt::format("greedy_prompt{}_24", idx)].get<std::vector<int64_t>>())
        << "prompt " << idx;
  }
}

// The CUDA target's region graph (graph-fuse-gemm-norm): every RMSNorm is
// the prologue of the GEMM region that reads it (q / k / v, gate / up,
// lm_head), and the reference executor generates the fixture's tokens from
// it, as from the unfused graph.
TEST(FuseGemmNorm, NormsBecomeGemmProloguesWithTheSameTokens) {
  const ops::GraphDef g = models::loadModel(fixtureDir() + "/decoder_with_past.onnx");
  const ops::GraphDef r = graph::formRegions(g, {.normPrologue = true});
  std::vector<std::string> gemms;
  const json report = graph::describeRegions(r);
  for (const auto& x : report["regions"]) {
    EXPECT_NE(x["kind"], "rmsnorm");
    if (x["kind"] == "gemm") gemms.push_back(x["detail"].get<std::string>());
  }
  EXPECT_EQ(std::count(gemms.begin(), gemms.end(), "rmsnorm + q/k/v"), 2);
  EXPECT_EQ(std::count(gemms.begin(), gemms.end(), "rmsnorm + gate/up + swiglu"), 2);
  EXPECT_EQ(std::count(gemms.begin(), gemms.end(), "rmsnorm + lm_head (last token per sequence)"), 1);
  expectFixtureTokens(r);
}

// graph-fuse-rope-kv-write: each layer's q / k RoPE and KV write become one
// region.rope_kv_write, and the reference runs the fused graph to the
// fixture's greedy tokens (its semantics are the three regions').
TEST(FuseRopeKvWrite, EachLayersRopesAndWriteBecomeOneRegionWithTheSameTokens) {
  const ops::GraphDef g = models::loadModel(fixtureDir() + "/decoder_with_past.onnx");
  const ops::GraphDef r = graph::formRegions(g, {.normPrologue = true, .ropeKvWrite = true});
  std::map<std::string, int64_t> kinds;
  const json report = graph::describeRegions(r);
  for (const auto& x : report["regions"]) ++kinds[x["kind"].get<std::string>()];
  EXPECT_EQ(kinds["rope"], 0);
  EXPECT_EQ(kinds["kv_write"], 0);
  EXPECT_EQ(kinds["rope_kv_write"], 2);  // one a layer
  EXPECT_EQ(kinds["paged_attention"], 2);
  expectFixtureTokens(r);
}

TEST_P(RegionFixtureTest, PresentOutputsAndPastInputsAreGone) {
  ops::GraphDef g = regions();
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].name, "logits");
  for (const auto& in : g.inputs) {
    EXPECT_NE(in.name.rfind("past_key_values.", 0), 0u) << in.name;
    EXPECT_NE(in.name, "attention_mask");
  }
  for (const char* in : {"position_ids", "seq_starts", "context_lens", "block_tables", "slot_mapping", "logits_indices",
                         "kv_cache.0", "kv_cache.1"})
    EXPECT_TRUE(g.findInput(in)) << in;
}

INSTANTIATE_TEST_SUITE_P(Sources, RegionFixtureTest,
                         ::testing::Values("model_dynamo.onnx", "decoder_with_past.onnx", "decoder_with_past_dynamo.onnx",
                                           "external/decoder_with_past.onnx", ".",
                                           // opset 23 (Attention, RMSNormalization, RotaryEmbedding)
                                           "model_opset23.onnx", "decoder_with_past_opset23.onnx",
                                           // onnxruntime fusions (GroupQueryAttention, SkipSimplifiedLayerNormalization,
                                           // FusedMatMul)
                                           "model_ort_fused.onnx", "decoder_with_past_ort_fused.onnx"),
                         [](const auto& info) {
                           std::string s = info.param == "." ? "hf" : info.param;
                           for (char& c : s)
                             if (!isalnum((unsigned char)c)) c = '_';
                           return s;
                         });

// Several sequences of different lengths in one step each (prefill together,
// then decode together) give the tokens each gets alone.
TEST(PagedModel, BatchedStepsMatchSingleSequences) {
  runtime::Executor exec(graph::formRegions(models::loadModel(fixtureDir() + "/decoder_with_past.onnx")));
  std::vector<std::vector<int64_t>> prompts;
  for (int idx : {0, 1, 2}) prompts.push_back(reference()["token_ids"][idx].get<std::vector<int64_t>>());
  std::vector<std::vector<int64_t>> alone;
  for (const auto& p : prompts) {
    runtime::GenerateRequest req;
    req.promptIds = p;
    req.maxNewTokens = 8;
    alone.push_back(runtime::generatePaged(exec, req, {4, 0}));
  }
  std::vector<std::vector<int64_t>> ids = fixture::greedyLockstep(exec, prompts, 4, 64, 8);
  for (size_t s = 0; s < prompts.size(); ++s) EXPECT_EQ(ids[s], alone[s]) << "sequence " << s;
}

// Self-built Mistral-style (GQA, no bias, untied) and Qwen2-style (q/k/v
// bias, tied embeddings) models: same regions, and the paged region graph
// generates what the unfused graph does with a full recompute each step.
struct ModelCase {
  const char* name;
  json config;
  bool qkvBias;
};

class SelfBuiltModelTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  std::string dir() { return fixture::selfBuiltModel(GetParam().name, GetParam().config); }
};

TEST_P(SelfBuiltModelTest, RegionsAndTokensMatchUnfusedGraph) {
  std::string d = dir();
  ops::GraphDef raw = models::loadModel(d);
  expectLlamaRegions(graph::describeRegions(graph::formRegions(raw)), 2, GetParam().qkvBias);
  runtime::Executor unfused(raw), regions(graph::formRegions(raw));
  runtime::Generator gen(unfused);
  runtime::GenerateRequest req;
  req.promptIds = {1, 17, 99, 250, 3, 42, 7, 180, 64, 5, 11, 230, 77, 18, 2, 9, 140};
  req.maxNewTokens = 12;
  EXPECT_EQ(runtime::generatePaged(regions, req, {8, 0}), gen.generate(req));
}

INSTANTIATE_TEST_SUITE_P(Families, SelfBuiltModelTest,
                         ::testing::Values(ModelCase{"mistral", fixture::smallConfig("mistral"), false},
                                           ModelCase{"qwen2", [] {
                                                       json c = fixture::smallConfig("qwen2");
                                                       c["tie_word_embeddings"] = true;
                                                       return c;
                                                     }(), true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace

// An MHA (kv heads == heads) tiny Llama through onnxscript's ORT fusions
// (models/testdata/tiny-llama-mha): com.microsoft MultiHeadAttention with
// RotaryEmbedding on q and k. Its reference kernels reproduce the plain
// dynamo export of the same weights, and its region graph (rope on q and k,
// paged attention, no fallback) generates the same tokens.
TEST(OrtFusedMha, RegionsAndTokensMatchPlainExport) {
  std::string dir = fixtureDir() + "/../tiny-llama-mha/";
  ops::GraphDef plain = models::loadModel(dir + "mha_dynamo.onnx"), fused = models::loadModel(dir + "mha_ort_fused.onnx");
  ops::GraphDef regions = graph::formRegions(fused);
  json r = graph::describeRegions(regions);
  EXPECT_TRUE(r["fallback"].empty()) << r["fallback"].dump();
  EXPECT_EQ(r["counts"]["paged_attention"], 2);
  EXPECT_EQ(r["counts"]["rope"], 4);
  runtime::GenerateRequest req;
  req.promptIds = {0, 17, 99, 250, 3, 42, 7, 180, 64, 5, 11, 230, 77, 18, 2, 9, 140};
  req.maxNewTokens = 12;
  runtime::Executor plainExec(plain), fusedExec(fused), regionExec(regions);
  auto want = runtime::Generator(plainExec).generate(req);
  EXPECT_EQ(runtime::Generator(fusedExec).generate(req), want);
  EXPECT_EQ(runtime::generatePaged(regionExec, req, {4, 0}), want);
}
