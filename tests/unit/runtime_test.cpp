// Executor, generator and sampler behaviour that the fixtures do not pin.
#include <gtest/gtest.h>

#include "runtime/executor.h"
#include "runtime/generate.h"
#include "runtime/paged_cache.h"
#include "runtime/sampler.h"

using namespace strata;

namespace {
ops::GraphDef addGraph() {
  ops::GraphDef g;
  g.source = "add";
  g.inputs = {{"a", ops::DType::F32, {{2, ""}}}};
  g.outputs = {{"y", ops::DType::F32, {{2, ""}}}};
  g.constants = {{"one", ops::Tensor::fromF32({1, 1}, {2})}};
  g.nodes = {{"Add", "plus", {"a", "one"}, {"t"}, {}}, {"Mul", "times", {"t", "t"}, {"y"}, {}}};
  return g;
}
}  // namespace

TEST(Executor, RunsAndFreesIntermediates) {
  runtime::Executor ex(addGraph());
  auto out = ex.run({{"a", ops::Tensor::fromF32({1, 2}, {2})}});
  EXPECT_EQ(out.at("y").data<float>()[0], 4.f);
  EXPECT_EQ(out.at("y").data<float>()[1], 9.f);
  EXPECT_EQ(out.size(), 1u);
}

TEST(Executor, RejectsUnknownOpsAndBadOrder) {
  auto g = addGraph();
  g.nodes[0].op = "Frobnicate";
  EXPECT_THROW(runtime::Executor{g}, Error);
  g = addGraph();
  std::swap(g.nodes[0], g.nodes[1]);
  EXPECT_THROW(runtime::Executor{g}, Error);
}

TEST(Executor, KernelErrorsNameTheNode) {
  runtime::Executor ex(addGraph());
  try {
    ex.run({{"a", ops::Tensor::fromF32({1, 2, 3}, {3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'plus' (Add)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ex.run({}), Error);
}

TEST(Sampler, GreedyAndSeededSampling) {
  std::vector<float> logits = {0.1f, 3.f, 2.9f, -1.f};
  runtime::Sampler greedy({});
  EXPECT_EQ(greedy.sample(logits), 1);
  runtime::SamplingParams p;
  p.greedy = false;
  p.topK = 2;
  p.seed = 7;
  runtime::Sampler a(p), b(p);
  for (int i = 0; i < 50; ++i) {
    int64_t x = a.sample(logits);
    EXPECT_EQ(x, b.sample(logits));
    EXPECT_TRUE(x == 1 || x == 2);
  }
  p.topK = 0;
  p.topP = 0.01f;  // nucleus of one: the argmax
  runtime::Sampler nucleus(p);
  EXPECT_EQ(nucleus.sample(logits), 1);
}

// HF's rule: seen tokens with positive logits are divided, negative ones
// multiplied; greedy then picks the best unseen token.
TEST(Sampler, RepetitionPenalty) {
  std::vector<float> logits = {2.0f, 1.9f, -0.5f, 1.0f};
  runtime::SamplingParams p;
  p.repetitionPenalty = 2.0f;
  runtime::Sampler s(p);
  std::vector<int64_t> history = {0, 0, 2};
  EXPECT_EQ(s.sample(logits, history), 1);  // 2.0 -> 1.0 < 1.9
  EXPECT_EQ(s.sample(logits), 0);           // no history, no penalty
  p.repetitionPenalty = 1.0f;
  EXPECT_EQ(runtime::Sampler(p).sample(logits, history), 0);
  p.repetitionPenalty = 0.f;
  EXPECT_THROW(p.validate(), Error);
}

TEST(Sampler, InvalidParametersAreNamed) {
  runtime::SamplingParams p;
  p.greedy = false;
  p.temperature = 0;
  EXPECT_THROW(p.validate(), Error);
  p.temperature = 1;
  p.topP = 1.5f;
  EXPECT_THROW(p.validate(), Error);
  p.topP = 1;
  p.topK = -1;
  EXPECT_THROW(p.validate(), Error);
}

TEST(Generator, NeedsInputIdsAndLogits) {
  EXPECT_THROW(runtime::Executor ex(addGraph()); runtime::Generator{ex}, Error);
}

namespace {

TEST(PagedKvCache, AllocatesBlocksAndReportsExhaustion) {
  strata::runtime::BlockAllocator alloc(2);
  auto a = alloc.allocate(), b = alloc.allocate();
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(alloc.allocate().has_value());
  alloc.retain(*a);
  alloc.release(*a);
  EXPECT_EQ(alloc.freeBlocks(), 0);
  alloc.release(*a);
  EXPECT_EQ(alloc.freeBlocks(), 1);
  EXPECT_THROW(alloc.release(*a), strata::Error);

  strata::runtime::PagedKvCache cache({/*layers*/ 2, /*kvHeads*/ 2, /*headDim*/ 8, /*blockSize*/ 4, /*numBlocks*/ 3});
  EXPECT_EQ(cache.layer(1).shape(), (strata::ops::Shape{3, 2, 2, 4, 8}));
  ASSERT_TRUE(cache.reserve(7, 5));  // two blocks
  EXPECT_EQ(cache.blockTable(7).size(), 2u);
  EXPECT_EQ(cache.slot(7, 4), cache.blockTable(7)[1] * 4);
  EXPECT_FALSE(cache.reserve(9, 5));  // needs two, one is free: nothing changes
  EXPECT_FALSE(cache.has(9));
  EXPECT_EQ(cache.freeBlocks(), 1);
  cache.free(7);
  EXPECT_EQ(cache.freeBlocks(), 3);
  EXPECT_TRUE(cache.reserve(9, 12));
}

}  // namespace
