// Executor, generator and sampler behaviour that the fixtures do not pin.
#include <gtest/gtest.h>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <tuple>

#include "runtime/executor.h"
#include "runtime/generate.h"
#include "runtime/paged_cache.h"
#include "runtime/parallel.h"
#include "runtime/sampler.h"
#include "runtime/spirv_kernels.h"
#include "runtime/weights.h"
#include "topk_reference.h"

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

// A token's log-probability is its row's log-softmax; the alternatives come
// in sampling order (the lower id first on ties), and a -inf logit has none.
TEST(Sampler, TokenLogprobsAreTheRowsLogSoftmax) {
  const std::vector<float> row = {0.1f, 3.f, 2.9f, -INFINITY, 3.f};
  double z = 0;
  for (float l : row) z += std::exp(double(l));
  const runtime::TokenLogprobs t = runtime::tokenLogprobs(row, 2, 3);
  EXPECT_EQ(t.token, 2);
  EXPECT_NEAR(t.logprob, 2.9 - std::log(z), 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, 1);
  EXPECT_EQ(t.top[1].first, 4);
  EXPECT_EQ(t.top[2].first, 2);
  EXPECT_FLOAT_EQ(t.top[0].second, t.top[1].second);
  EXPECT_FLOAT_EQ(t.top[2].second, t.logprob);
  double mass = 0;
  for (const auto& [id, lp] : runtime::tokenLogprobs(row, 0, 5).top) mass += std::exp(double(lp));
  EXPECT_NEAR(mass, 1.0, 1e-6);
  EXPECT_EQ(runtime::tokenLogprobs(row, 3, 0).logprob, -INFINITY);
  EXPECT_TRUE(runtime::tokenLogprobs(row, 3, 0).top.empty());
  // Large logits: computed relative to the row's max, no overflow.
  const std::vector<float> big = {1000.f, 1000.f};
  EXPECT_NEAR(runtime::tokenLogprobs(big, 1, 1).logprob, -std::log(2.0), 1e-6);
  EXPECT_THROW(runtime::tokenLogprobs(row, 5, 1), Error);
  EXPECT_THROW(runtime::tokenLogprobs(row, 0, runtime::kMaxTopLogprobs + 1), Error);
  EXPECT_THROW(runtime::tokenLogprobs({}, 0, 1), Error);
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

// OpenAI's presence and frequency penalties count the generated tokens
// only (history[generatedFrom..]), after the repetition penalty on all of
// it; exact f32 values.
TEST(Sampler, PresenceAndFrequencyPenalties) {
  runtime::SamplingParams p;
  p.presencePenalty = 0.5f, p.frequencyPenalty = 0.25f;
  const std::vector<int64_t> history = {3, 3, 0, /*generated:*/ 1, 1, 1, 2, 7};
  std::vector<float> logits = {2.0f, 1.9f, -0.5f, 1.0f};
  runtime::applyPenalties(logits, history, 3, p);
  EXPECT_EQ(logits, (std::vector<float>{2.0f, 1.9f - (0.5f + 0.75f), -0.5f - 0.75f, 1.0f}));  // 0 and 3: prompt only
  p.repetitionPenalty = 2.0f;
  logits = {2.0f, 1.9f, -0.5f, 1.0f};
  runtime::applyPenalties(logits, history, 3, p);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 0.95f - 1.25f, -1.0f - 0.75f, 0.5f}));
  // Greedy picks the penalized row's best; a negative penalty favours repeats.
  p.repetitionPenalty = 1.0f, p.presencePenalty = 1.0f, p.frequencyPenalty = 0.f;
  const std::vector<float> row = {2.0f, 1.9f, -0.5f, 1.0f};
  EXPECT_EQ(runtime::Sampler(p).sample(row, std::vector<int64_t>{5, 0}, 1), 1);
  EXPECT_EQ(runtime::Sampler(p).sample(row, std::vector<int64_t>{0, 5}, 1), 0);  // 0 is in the prompt part
  p.presencePenalty = -2.f;
  EXPECT_EQ(runtime::Sampler(p).sample(row, std::vector<int64_t>{0, 3}, 1), 3);
  for (float bad : {2.5f, -2.01f, NAN}) {
    runtime::SamplingParams q;
    q.presencePenalty = bad;
    EXPECT_THROW(q.validate(), Error);
    q.presencePenalty = 0, q.frequencyPenalty = bad;
    EXPECT_THROW(q.validate(), Error);
  }
}

// min-p keeps the tokens at least min_p times as likely as the top one at
// the draw's temperature: with weights 1, 0.5, 0.2, 0.1 (temperature 1)
// and min_p 0.4 only the first two are drawn, in proportion 2 : 1.
TEST(Sampler, MinPDropsTheUnlikely) {
  const std::vector<float> logits = {std::log(0.2f), 0.f, std::log(0.1f), std::log(0.5f)};
  runtime::SamplingParams p;
  p.greedy = false, p.minP = 0.4f, p.seed = 3;
  runtime::Sampler s(p);
  std::vector<int> count(4, 0);
  const int n = 30000;
  for (int i = 0; i < n; ++i) ++count[s.sample(logits)];
  EXPECT_EQ(count[0] + count[2], 0);
  EXPECT_NEAR(count[1] / double(n), 2.0 / 3.0, 0.01);
  // At temperature 2 the weights are their square roots: 0.447 passes, 0.316 not.
  p.temperature = 2.f;
  runtime::Sampler hot(p);
  std::fill(count.begin(), count.end(), 0);
  for (int i = 0; i < n; ++i) ++count[hot.sample(logits)];
  EXPECT_GT(count[0], 0);
  EXPECT_EQ(count[2], 0);
  p.minP = 1.5f;
  EXPECT_THROW(p.validate(), Error);
}

// Rows with many ties (values on a coarse grid, as bf16 logits are) and a
// few -inf entries, for the head tests below.
std::vector<float> tiedRow(int64_t n, std::mt19937& rng, float spread) {
  std::normal_distribution<float> g(0.f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = std::round(g(rng) * 16.f) / 16.f;
  for (int64_t i = 0; i < n; i += 97) v[i] = -INFINITY;
  return v;
}

std::vector<runtime::SamplingParams> headParams() {
  std::vector<runtime::SamplingParams> ps;
  for (float t : {0.5f, 1.f, 1.7f})
    for (int64_t k : {0, 1, 20, 64, 200})
      for (float p : {1.f, 0.9f, 0.3f})
        for (float m : {0.f, 0.02f}) {
          runtime::SamplingParams sp;
          sp.greedy = false, sp.temperature = t, sp.topK = k, sp.topP = p, sp.minP = m;
          ps.push_back(sp);
        }
  return ps;
}

// A head that settles a draw gives the whole row's token: host heads of
// 64 entries, on peaked and flat rows; on the peaked one every draw whose
// top-k fits the head settles.
TEST(Sampler, HeadPicksAreTheWholeRowsPicks) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  for (float spread : {4.f, 0.3f}) {
    std::vector<float> row = tiedRow(5000, rng, spread);
    int settled = 0, draws = 0;
    for (const runtime::SamplingParams& p : headParams()) {
      runtime::RowHead whole = runtime::headOf(row, p.temperature, row.size()),
                       head = runtime::headOf(row, p.temperature, 64);
      ASSERT_EQ(whole.exact, row.size());
      for (size_t i = 1; i < row.size(); ++i)  // sampling order (the radix sort)
        ASSERT_TRUE(whole.logits[i - 1] > whole.logits[i] ||
                    (whole.logits[i - 1] == whole.logits[i] && whole.ids[i - 1] < whole.ids[i]))
            << "entry " << i;
      for (int i = 0; i < 20; ++i, ++draws) {
        const double u = uni(rng);
        std::optional<int64_t> want = runtime::pickFromHead(whole, p, u), got = runtime::pickFromHead(head, p, u);
        ASSERT_TRUE(want.has_value());
        EXPECT_TRUE(std::isfinite(row[*want]));
        if (p.topK > 0 && p.topK <= 64) EXPECT_TRUE(got.has_value()) << "top-k " << p.topK << " fits the head";
        if (got) EXPECT_EQ(*got, *want) << "T " << p.temperature << " k " << p.topK << " p " << p.topP << " u " << u;
        settled += got.has_value();
      }
    }
    // A third of the draws use top-k 200, more than the head holds.
    if (spread > 1.f) EXPECT_GT(settled, draws * 2 / 3);
  }
}

// The top-k kernel's split candidates (as the host reference computes
// them) merge into a head whose exact part is the row's order, and whose
// picks (also from the shorter first head) are the whole row's; a row whose
// candidates hide nothing (all splits shorter than their candidates) is
// exact throughout.
TEST(Sampler, SplitCandidatesMergeIntoTheRowsHead) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  for (auto [n, blockN, C] : {std::tuple<int64_t, int64_t, int64_t>{5000, 1024, 64}, {3000, 256, 16}, {50, 1024, 64}}) {
    std::vector<float> row = tiedRow(n, rng, 3.f);
    for (const runtime::SamplingParams& p : headParams()) {
      tests::TopKSplits sp = tests::topKSplitsReference(row.data(), n, blockN, C, p.temperature);
      runtime::RowHead head =
          runtime::headFromSplits(sp.value.data(), sp.index.data(), sp.mass.data(), sp.splits, C, n, p.temperature);
      runtime::RowHead whole = runtime::headOf(row, p.temperature, row.size());
      ASSERT_GT(head.exact, 0u);
      if (n <= C) EXPECT_EQ(head.exact, head.ids.size());
      for (size_t i = 0; i < head.exact; ++i) ASSERT_EQ(head.ids[i], whole.ids[i]) << "entry " << i;
      EXPECT_NEAR(head.mass, whole.mass, 1e-5 * whole.mass);
      // The runner's first, shorter head (top-k's k or 256 entries) too.
      runtime::RowHead first = runtime::headFromSplits(sp.value.data(), sp.index.data(), sp.mass.data(), sp.splits, C,
                                                       n, p.temperature, runtime::headSize(p));
      EXPECT_LE(first.ids.size(), runtime::headSize(p));
      for (int i = 0; i < 10; ++i) {
        const double u = uni(rng);
        const int64_t want = *runtime::pickFromHead(whole, p, u);
        if (auto got = runtime::pickFromHead(head, p, u)) EXPECT_EQ(*got, want);
        if (auto got = runtime::pickFromHead(first, p, u)) EXPECT_EQ(*got, want);
      }
    }
  }
}

// Draws follow the distribution they claim: temperature 0.7, top-k 3 and
// top-p 0.8 over five logits, 40000 draws, each token's frequency within
// 0.01 of its probability (about 5 standard deviations).
TEST(Sampler, DrawsFollowTheTruncatedSoftmax) {
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, 1.8f, -1.f};
  runtime::SamplingParams p;
  p.greedy = false, p.temperature = 0.7f, p.topK = 3, p.topP = 0.8f, p.seed = 11;
  // Sorted: 1 (2.0), 3 (1.8), 0 (1.0); weights exp((l - 2) / 0.7).
  std::vector<double> w = {1.0, std::exp(-0.2 / 0.7), std::exp(-1.0 / 0.7)};
  double kept = w[0] + w[1] + w[2];
  ASSERT_LT(w[0] / kept, 0.8);  // the nucleus is tokens 1 and 3
  ASSERT_GE((w[0] + w[1]) / kept, 0.8);
  runtime::Sampler s(p);
  std::vector<int> count(5, 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++count[s.sample(logits)];
  EXPECT_EQ(count[0] + count[2] + count[4], 0);
  EXPECT_NEAR(count[1] / double(n), w[0] / (w[0] + w[1]), 0.01);
  EXPECT_NEAR(count[3] / double(n), w[1] / (w[0] + w[1]), 0.01);
}

// A range's exception comes back to the caller (after every range ends)
// instead of ending the process from a worker thread.
TEST(ParallelRanges, RethrowsARangesError) {
  std::atomic<int64_t> done{0};
  EXPECT_THROW(runtime::parallelRanges(
                   64,
                   [&](int64_t lo, int64_t hi) {
                     done += hi - lo;
                     if (lo > 0) fail("range {}", lo);
                   },
                   4),
               Error);
  EXPECT_EQ(done.load(), 64);
}

// castStored (a GPU model's weights in another storage type, on several
// threads) rounds exactly as Tensor::cast does, past the size where it
// splits the work: values across f16's range and past it, subnormals,
// infinities, NaN.
TEST(CastStored, RoundsAsTensorCast) {
  const int64_t n = (int64_t(1) << 22) + 37;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(-2.f, 2.f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  ops::Tensor f32(ops::DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) f32.mut<float>()[i] = std::ldexp(mantissa(rng), exponent(rng));
  f32.mut<float>()[0] = INFINITY, f32.mut<float>()[1] = -INFINITY, f32.mut<float>()[2] = NAN;
  f32.mut<float>()[3] = 1e-40f, f32.mut<float>()[4] = 70000.f, f32.mut<float>()[5] = -0.f;
  using ops::DType;
  for (auto [from, to] : {std::pair{DType::F32, DType::F16}, std::pair{DType::F32, DType::BF16},
                          std::pair{DType::BF16, DType::F16}, std::pair{DType::F16, DType::BF16},
                          std::pair{DType::BF16, DType::F32}, std::pair{DType::F16, DType::F16}}) {
    ops::Tensor x = f32.cast(from);
    ops::Tensor got = runtime::castStored(x, to), want = x.cast(to);
    ASSERT_EQ(got.dtype(), to);
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0)
        << ops::dtypeName(from) << " -> " << ops::dtypeName(to);
  }
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

// Forks share blocks; the first write into a shared block copies it, so the
// parent's K/V never change under it; running out of blocks for the copy is
// an answer, not a crash.
TEST(PagedKvCache, ForkSharesBlocksAndCopiesOnWrite) {
  using strata::runtime::PagedKvCache;
  PagedKvCache cache({/*layers*/ 2, /*kvHeads*/ 1, /*headDim*/ 2, /*blockSize*/ 4, /*numBlocks*/ 4});
  ASSERT_TRUE(cache.reserve(1, 6));  // blocks 0, 1; token 5 is in block 1
  cache.setLength(1, 6);
  auto* k0 = const_cast<float*>(cache.layer(0).data<float>()), *k1 = const_cast<float*>(cache.layer(1).data<float>());
  const int64_t blockFloats = 2 * 1 * 4 * 2;
  for (int64_t i = 0; i < 2 * blockFloats; ++i) k0[i] = (float)i, k1[i] = (float)-i;
  cache.fork(1, 2);
  EXPECT_EQ(cache.blockTable(2), cache.blockTable(1));
  EXPECT_EQ(cache.length(2), 6);
  EXPECT_EQ(cache.refCount(cache.blockTable(1)[1]), 2);
  EXPECT_THROW(cache.fork(1, 2), strata::Error);

  // The child writes token 6: block 1 (shared) is copied, block 0 stays shared.
  ASSERT_TRUE(cache.reserve(2, 7));
  int64_t copy = cache.blockTable(2)[1];
  EXPECT_NE(copy, cache.blockTable(1)[1]);
  EXPECT_EQ(cache.blockTable(2)[0], cache.blockTable(1)[0]);
  EXPECT_EQ(cache.copiedBlocks(), 1);
  for (int64_t i = 0; i < blockFloats; ++i) {
    EXPECT_EQ(k0[copy * blockFloats + i], (float)(blockFloats + i));
    EXPECT_EQ(k1[copy * blockFloats + i], (float)-(blockFloats + i));
  }
  k0[copy * blockFloats] = 1000;  // the child's write
  EXPECT_EQ(k0[blockFloats], (float)blockFloats);
  // The parent's block 1 is its own again: writing needs no copy.
  EXPECT_EQ(cache.refCount(cache.blockTable(1)[1]), 1);
  ASSERT_TRUE(cache.reserve(1, 8));
  EXPECT_EQ(cache.copiedBlocks(), 1);

  // One block left; a second child that writes into the shared block 1 and
  // past it needs two: refused, nothing changed.
  cache.fork(1, 3);
  EXPECT_EQ(cache.freeBlocks(), 1);
  std::vector<int64_t> before = cache.blockTable(3);
  EXPECT_FALSE(cache.reserve(3, 9));
  EXPECT_EQ(cache.blockTable(3), before);
  EXPECT_EQ(cache.freeBlocks(), 1);
  // Freeing the parent keeps the children's blocks.
  cache.free(1);
  EXPECT_EQ(cache.refCount(before[0]), 2);
  cache.free(2);
  cache.free(3);
  EXPECT_EQ(cache.freeBlocks(), 4);
}

// Prefix caching: full blocks are found again by their tokens and every
// token before them; at least the last token is left to compute; a
// sequence's end keeps them (evictable, least recently released first);
// eviction forgets them.
TEST(PagedKvCache, PrefixCacheReusesFullBlocksAndEvictsLeastRecent) {
  using strata::runtime::PagedKvCache;
  PagedKvCache cache({/*layers*/ 1, /*kvHeads*/ 1, /*headDim*/ 2, /*blockSize*/ 4, /*numBlocks*/ 6});
  cache.enablePrefixCache();
  std::vector<int64_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(cache.reusePrefix(1, a), 0);
  ASSERT_TRUE(cache.reserve(1, 10));
  cache.setLength(1, 10);
  cache.commitPrefix(1, a);  // blocks 0 and 1 are full
  const std::vector<int64_t> blocksA = cache.blockTable(1);
  cache.free(1);
  EXPECT_EQ(cache.cachedBlocks(), 2);
  EXPECT_EQ(cache.usedBlocks(), 0);
  EXPECT_EQ(cache.freeBlocks(), 6);  // evictable blocks count as free

  // Same first 8 tokens: both blocks; same first 4 only: one; an 8-token
  // prompt leaves its last token to compute: one.
  std::vector<int64_t> b = {1, 2, 3, 4, 5, 6, 7, 8, 50};
  EXPECT_EQ(cache.reusePrefix(2, b), 8);
  EXPECT_EQ(cache.blockTable(2), std::vector<int64_t>(blocksA.begin(), blocksA.begin() + 2));
  EXPECT_EQ(cache.length(2), 8);
  EXPECT_EQ(cache.cachedBlocks(), 0);
  std::vector<int64_t> c = {1, 2, 3, 4, 60, 61, 62, 63, 64};
  EXPECT_EQ(cache.reusePrefix(3, c), 4);
  EXPECT_EQ(cache.refCount(blocksA[0]), 2);
  EXPECT_EQ(cache.reusePrefix(4, std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}), 4);
  EXPECT_EQ(cache.reusePrefix(5, std::vector<int64_t>{9, 2, 3, 4, 5}), 0);  // the first token differs
  EXPECT_FALSE(cache.has(5));
  EXPECT_EQ(cache.prefixHitTokens(), 16);
  cache.free(2);
  cache.free(3);
  cache.free(4);
  EXPECT_EQ(cache.cachedBlocks(), 2);

  // Six new blocks take the four free ones, then evict the cached ones,
  // block 0's chain first (released first): the prefix is gone.
  ASSERT_TRUE(cache.reserve(6, 24));
  EXPECT_EQ(cache.cachedBlocks(), 0);
  cache.free(6);
  EXPECT_EQ(cache.reusePrefix(7, b), 0);
  EXPECT_EQ(cache.freeBlocks(), 6);
}

// The null device holds no data, so a Llama-3-8B-sized cache can be sized
// and exercised here: blocks from a memory budget, allocations accounted and
// released, one copy per layer for each block copied on write.
TEST(PagedKvCache, SizedFromABudgetOnTheNullDevice) {
  using namespace strata::runtime;
  auto device = makeNullDevice(60ull << 30);
  KvCacheShape shape{/*layers*/ 32, /*kvHeads*/ 8, /*headDim*/ 128, /*blockSize*/ 16, 0, strata::ops::DType::BF16};
  EXPECT_EQ(shape.blockBytes(), 32 * 2 * 8 * 16 * 128 * 2);  // 2 MiB
  shape.numBlocks = blocksForBudget(shape, 40ull << 30);
  EXPECT_EQ(shape.numBlocks, 20480);
  EXPECT_THROW(blocksForBudget(shape, 1 << 20), strata::Error);  // not one block
  {
    PagedKvCache cache(shape, *device);
    EXPECT_EQ(device->allocated(), 40ull << 30);
    EXPECT_FALSE(device->hostAddressable());
    ASSERT_TRUE(cache.reserve(0, 100));
    cache.setLength(0, 100);
    cache.fork(0, 1);
    ASSERT_TRUE(cache.reserve(1, 101));
    EXPECT_EQ(device->copies(), 32u);  // block 6 of every layer
    EXPECT_THROW(PagedKvCache(shape, *device), strata::Error);  // 60 GiB device, 40 GiB in use
    EXPECT_EQ(device->allocated(), 40ull << 30);                 // the failed one gave back its layers
  }
  EXPECT_EQ(device->allocated(), 0u);
}

// With no size given, a cache holds every request at once when that fits
// the device's free memory less the activations' reserve (a tenth, at
// least 1 GiB), else what fits; a device with nothing to spare is an error.
TEST(PagedKvCache, DefaultSizeFitsTheFreeMemory) {
  using namespace strata::runtime;
  KvCacheShape shape{/*layers*/ 32, /*kvHeads*/ 8, /*headDim*/ 128, /*blockSize*/ 16, 0, strata::ops::DType::BF16};
  auto device = makeNullDevice(80ull << 30);
  EXPECT_EQ(device->available(), 80ull << 30);
  EXPECT_EQ(defaultCacheBlocks(shape, 1000, device->available()), 1000);  // 2000 MiB fit
  EXPECT_EQ(defaultCacheBlocks(shape, 100000, device->available()), 36864);  // 72 GiB of 2 MiB blocks
  void* weights = device->allocate(64ull << 30);
  EXPECT_EQ(device->available(), 16ull << 30);
  EXPECT_EQ(defaultCacheBlocks(shape, 100000, device->available()), 7372);  // 16 GiB less 1.6 GiB
  EXPECT_EQ(defaultCacheBlocks(shape, 1, 2ull << 30), 1);
  EXPECT_EQ(defaultCacheBlocks(shape, 1000, 2ull << 30), 512);  // the 1 GiB floor of the reserve
  EXPECT_THROW(defaultCacheBlocks(shape, 1, 1ull << 30), strata::Error);
  EXPECT_GT(cpuDevice().available(), 0u);
  EXPECT_LE(cpuDevice().available(), cpuDevice().capacity());
  device->release(weights, 64ull << 30);
}

}  // namespace

// ---- SPIR-V kernel signatures (runtime/spirv_kernels.h) ------------------

namespace {

// `f` throws strata::Error whose message contains `part`.
template <typename F>
void expectError(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// A SPIR-V module of words: the header, then instructions (opcode, operands).
struct SpirvWords {
  std::vector<uint32_t> w{0x07230203, 0x00010400, 0, 100, 0};
  SpirvWords& op(uint32_t code, std::vector<uint32_t> operands) {
    w.push_back(uint32_t(operands.size() + 1) << 16 | code);
    w.insert(w.end(), operands.begin(), operands.end());
    return *this;
  }
  // A string operand: its bytes, nul-terminated, in whole words.
  static std::vector<uint32_t> str(const std::string& s) {
    std::vector<uint32_t> out((s.size() + 4) / 4, 0);
    std::memcpy(out.data(), s.data(), s.size());
    return out;
  }
  std::string bytes() const { return std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4); }
};

// kernel "k"(global i16*, i64, f32), a Fragment entry point that is skipped
// and a helper function taking a float4.
SpirvWords kernelModule() {
  SpirvWords m;
  std::vector<uint32_t> entry{6, 10};
  for (uint32_t x : SpirvWords::str("k")) entry.push_back(x);
  m.op(15, entry);
  std::vector<uint32_t> frag{4, 11};
  for (uint32_t x : SpirvWords::str("f")) frag.push_back(x);
  m.op(15, frag);
  m.op(21, {1, 16, 0}).op(32, {2, 5, 1}).op(21, {3, 64, 0}).op(22, {4, 32}).op(19, {5}).op(33, {6, 5, 2, 3, 4});
  m.op(54, {5, 10, 0, 6}).op(55, {2, 20}).op(55, {3, 21}).op(55, {4, 22}).op(56, {});
  m.op(54, {5, 11, 0, 6}).op(56, {});
  // A helper taking a vector (not a kernel: its parameters are not read).
  m.op(23, {7, 4, 4}).op(54, {5, 12, 0, 6}).op(55, {7, 23}).op(56, {});
  return m;
}

}  // namespace

TEST(SpirvKernels, ReadsEachKernelsParameters) {
  const auto ks = runtime::spirvKernels(kernelModule().bytes(), "m.spv");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "k");
  using P = runtime::SpirvParam;
  EXPECT_EQ(ks[0].params, (std::vector<P>{{P::Pointer, 8}, {P::Int, 8}, {P::Float, 4}}));
  // A launch's ABI slots: the buffer's five (its aligned pointer is set),
  // the index, the f32.
  int64_t buf[5] = {1, 2, 0, 10, 1}, index = 7;
  float scale = 0.5f;
  std::vector<void*> slots{&buf[0], &buf[1], &buf[2], &buf[3], &buf[4], &index, &scale};
  const auto args = runtime::kernelArguments(ks[0], slots);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_TRUE(args[0].pointer);
  EXPECT_EQ(args[0].value, &buf[1]);
  EXPECT_EQ(args[1].value, &index);
  EXPECT_EQ(args[1].bytes, 8u);
  EXPECT_EQ(args[2].bytes, 4u);
  slots.pop_back();
  expectError([&] { runtime::kernelArguments(ks[0], slots); }, "kernel k: its 3 parameters need more");
  slots.push_back(&scale), slots.push_back(&scale);
  expectError([&] { runtime::kernelArguments(ks[0], slots); }, "take 7 argument slots, the launch passed 8");
}

TEST(SpirvKernels, MalformedModulesAreNamed) {
  const std::string good = kernelModule().bytes();
  expectError([&] { runtime::spirvKernels(good.substr(0, 18), "m.spv"); }, "m.spv: not a SPIR-V module (18 bytes");
  std::string bad = good;
  bad[0] = 0;
  expectError([&] { runtime::spirvKernels(bad, "m.spv"); }, "not a little-endian SPIR-V module");
  // An instruction that claims more words than remain.
  // (The last two words: the helper's OpFunctionEnd and its parameter's id.)
  expectError([&] { runtime::spirvKernels(good.substr(0, good.size() - 8), "m.spv"); }, "claims 3 words, 2 remain");
  // A parameter of an unknown type, and an entry point without its function.
  SpirvWords m;
  std::vector<uint32_t> entry{6, 10};
  for (uint32_t x : SpirvWords::str("k")) entry.push_back(x);
  m.op(15, entry);
  expectError([&] { runtime::spirvKernels(m.bytes(), "m.spv"); }, "kernel 'k' names function %10");
  m.op(54, {5, 10, 0, 6}).op(55, {9, 20});
  expectError([&] { runtime::spirvKernels(m.bytes(), "m.spv"); }, "of type %9, not a pointer or a scalar of 8 to 64 bits");
  // A scalar wider than a launch slot's 8 bytes.
  SpirvWords wide;
  wide.op(15, entry).op(21, {9, 128, 0}).op(54, {5, 10, 0, 6}).op(55, {9, 20}).op(56, {});
  expectError([&] { runtime::spirvKernels(wide.bytes(), "m.spv"); }, "of type %9, not a pointer or a scalar");
  SpirvWords z;
  z.w.push_back(0);
  expectError([&] { runtime::spirvKernels(z.bytes(), "m.spv"); }, "instruction at word 5 (opcode 0) claims 0 words");
}
