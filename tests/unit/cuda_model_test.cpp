// The tiny-llama fixture end to end on the GPU: the artifacts `strata
// compile --target cuda:sm_90 --dtype bf16|f16` build from it with the
// project (build/cuda-models/tiny-llama-<dtype>, or under
// $STRATA_CUDA_MODELS), its weights from the fixture folder (or
// $STRATA_FIXTURES), run through the paged model and the scheduler, against
// the fixture's f32 reference outputs. Runtime only; skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>

#include <nlohmann/json.hpp>

#include "runtime/devices/registry.h"
#include "runtime/gpu_executor.h"
#include "runtime/executor.h"
#include "runtime/paged_generate.h"
#include "runtime/sampler.h"
#include "runtime/scheduler.h"
#include "tests/unit/gpu_model_checks.h"

using namespace strata;

namespace {

std::string fromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
std::string artifactDir(const std::string& dtype) {
  return fromEnv("STRATA_CUDA_MODELS", STRATA_CUDA_MODELS_DIR) + "/tiny-llama-" + dtype;
}
std::string fixtureDir() { return fromEnv("STRATA_FIXTURES", STRATA_FIXTURE_DIR); }

const nlohmann::json& reference() {
  static nlohmann::json j = nlohmann::json::parse(std::ifstream(fixtureDir() + "/reference.json"));
  return j;
}

// Parameter: the storage type the artifact was compiled for.
class CudaModel : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string why = runtime::gpuDeviceUnavailable("cuda");
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    runtime::Artifact a = runtime::loadArtifact(artifactDir(GetParam()), {fixtureDir()});
    ASSERT_EQ(a.dtype, GetParam());
    blockSize = a.blockSize;
    m = runtime::loadGpuModel(std::move(a));
  }
  // The artifact loaded again, with or without CUDA graphs.
  runtime::GpuModel load(bool graphs) {
    return runtime::loadGpuModel(runtime::loadArtifact(artifactDir(GetParam()), {fixtureDir()}), {.graphs = graphs});
  }
  // Greedy completions of `prompts` (24 tokens each) through the scheduler
  // with at most `stepTokens` tokens per step (on `exec`, else the
  // fixture's model).
  std::vector<std::vector<int64_t>> greedy(const std::vector<std::vector<int64_t>>& prompts, int64_t stepTokens,
                                           const runtime::GpuExecutor* exec = nullptr) {
    return strata::testing::greedyCompletions(exec ? *exec : *m.exec, blockSize, prompts, stepTokens);
  }
  runtime::GpuModel m;
  int64_t blockSize = 0;
};

// One prefill step of prompt 0: its last logits row against the f32
// reference. bf16 storage rounds every weight and activation to 8 bits of
// mantissa, so the logits (std 0.65 here) move by a few hundredths (f16's
// 11 bits: less); a wrong kernel moves them by the logits' own size.
TEST_P(CudaModel, PrefillLogitsMatchTheReference) {
  const std::vector<int64_t> ids = reference()["token_ids"][0].get<std::vector<int64_t>>();
  strata::testing::expectLogitsNear(strata::testing::prefillLogits(*m.exec, blockSize, ids),
                                    reference()["logits_prompt0_fp32"].back().get<std::vector<double>>(), 0.1,
                                    std::string("prompt 0 last logits: max |") + GetParam() + " GPU - f32 reference|");
}

// Greedy completions (24 tokens) of the fixture's two prompts on the bf16 or f16
// GPU model: one prompt at a time with the prompt in one step (paged
// prefill, then paged decode), and both at once in steps of 5 tokens
// (chunked prefill over cached context next to the other prompt's decode
// rows). Every token must be the f32 reference's best up to the logit
// error bound of PrefillLogitsMatchTheReference, twice over (a token can
// overtake the best by 0.1 on each side): bf16 legitimately flips near
// ties, after which the sequence leaves the fixture's (the fixture's
// matches are counted and printed).
TEST_P(CudaModel, GreedyTokensAreTheReferencesChoices) {
  const auto& ref = reference();
  strata::testing::expectGreedyNearReference(
      *m.exec, blockSize, {ref["token_ids"][0].get<std::vector<int64_t>>(), ref["token_ids"][1].get<std::vector<int64_t>>()},
      {ref["greedy_prompt0_24"].get<std::vector<int64_t>>(), ref["greedy_prompt1_24"].get<std::vector<int64_t>>()},
      artifactDir(GetParam()), fixtureDir(), 0.2, GetParam());
}

// With GpuExecutorOptions::graphs, a step that repeats the last step's
// launches becomes a CUDA graph, which later steps of the same shapes run
// without running the nodes (their guards hold: same split counts, RoPE
// table, valid indices): prompt 0's prefill and 20 greedy decode steps
// give bit-identical logits with graphs and with every kernel launched by
// itself, and most decode steps ran as the graph.
TEST_P(CudaModel, GraphReplayGivesTheSameLogits) {
  runtime::GpuModel graphed = load(true), plain = load(false);
  auto run = [&](const runtime::GpuExecutor& exec) {
    std::vector<int64_t> ids = reference()["token_ids"][0].get<std::vector<int64_t>>();
    runtime::PagedKvCache cache(runtime::kvCacheShapeFor(exec, blockSize, 8), exec.cacheDevice());
    runtime::PagedModel pm(exec, cache);
    std::vector<std::vector<float>> all;
    std::vector<int64_t> next = ids;
    for (int step = 0; step <= 20; ++step) {
      EXPECT_TRUE(cache.reserve(0, (int64_t)(ids.size() + step)));
      ops::Tensor logits = pm.step({{0, next}});
      const float* l = logits.data<float>() + (logits.numel() - logits.dim(logits.rank() - 1));
      all.emplace_back(l, l + logits.dim(logits.rank() - 1));
      next = {int64_t(std::max_element(all.back().begin(), all.back().end()) - all.back().begin())};
    }
    return all;
  };
  std::vector<std::vector<float>> graphs = run(*graphed.exec), launches = run(*plain.exec);
  std::printf("%s: %lld of 21 steps ran as a graph (blocks of %lld)\n", GetParam(),
              (long long)graphed.exec->graphSteps(), (long long)blockSize);
  EXPECT_GE(graphed.exec->graphSteps(), 10);
  EXPECT_EQ(plain.exec->graphSteps(), 0);
  ASSERT_EQ(graphs.size(), launches.size());
  for (size_t s = 0; s < graphs.size(); ++s) EXPECT_EQ(graphs[s], launches[s]) << "step " << s;
}

// A step that would run as the graph still has its inputs checked: a
// token id past the vocabulary is the same error as without graphs, and
// the next valid step runs as the graph again with the same logits as a
// model without graphs.
TEST_P(CudaModel, GraphStepsStillCheckTheirInputs) {
  runtime::GpuModel graphed = load(true), plain = load(false);
  auto run = [&](const runtime::GpuExecutor& exec, bool bad) {
    std::vector<int64_t> ids = reference()["token_ids"][0].get<std::vector<int64_t>>();
    runtime::PagedKvCache cache(runtime::kvCacheShapeFor(exec, blockSize, 8), exec.cacheDevice());
    runtime::PagedModel pm(exec, cache);
    ops::Tensor logits;
    for (int step = 0; step <= 6; ++step) {
      EXPECT_TRUE(cache.reserve(0, (int64_t)(ids.size() + step)));
      if (step == 5 && bad) {
        try {
          pm.step({{0, {int64_t(1) << 40}}});
          ADD_FAILURE() << "a token id past the vocabulary ran";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("row index"), std::string::npos) << e.what();
        }
      }
      logits = pm.step({{0, step ? std::vector<int64_t>{int64_t(step + 2)} : ids}});
    }
    return std::vector<float>(logits.data<float>(), logits.data<float>() + logits.numel());
  };
  const std::vector<float> want = run(*plain.exec, false);
  EXPECT_EQ(run(*graphed.exec, true), want);
  const int64_t before = graphed.exec->graphSteps();
  EXPECT_GT(before, 0);
  EXPECT_EQ(run(*graphed.exec, false), want);
  EXPECT_GT(graphed.exec->graphSteps(), before);
}

// Through the scheduler (both prompts at once in steps of 5 tokens:
// chunked prefill beside decode rows, then decode of two sequences, then
// of one), graphs give the same greedy tokens as launching every kernel.
TEST_P(CudaModel, GraphsGiveTheSameTokensThroughTheScheduler) {
  runtime::GpuModel graphed = load(true), plain = load(false);
  const auto& ref = reference();
  std::vector<std::vector<int64_t>> prompts = {ref["token_ids"][0].get<std::vector<int64_t>>(),
                                               ref["token_ids"][1].get<std::vector<int64_t>>()};
  EXPECT_EQ(greedy(prompts, 5, graphed.exec.get()), greedy(prompts, 5, plain.exec.get()));
  EXPECT_GT(graphed.exec->graphSteps(), 0);
}

// Greedy tokens picked on the device (PagedModel::stepGreedy: the argmax
// kernel, only partials come down) are the host's greedyToken of the same
// step's logits: both prompts at once, prefill and 12 decode steps.
TEST_P(CudaModel, DeviceGreedyIsTheHostsArgmax) {
  const auto& ref = reference();
  std::vector<std::vector<int64_t>> prompts = {ref["token_ids"][0].get<std::vector<int64_t>>(),
                                               ref["token_ids"][1].get<std::vector<int64_t>>()};
  auto run = [&](bool onDevice) {
    runtime::PagedKvCache cache(runtime::kvCacheShapeFor(*m.exec, blockSize, 16), m.exec->cacheDevice());
    runtime::PagedModel pm(*m.exec, cache);
    std::vector<runtime::PagedModel::SeqStep> steps;
    for (size_t s = 0; s < prompts.size(); ++s) steps.push_back({(int64_t)s, prompts[s]});
    std::vector<std::vector<int64_t>> picked;
    for (int step = 0; step <= 12; ++step) {
      for (const auto& s : steps) EXPECT_TRUE(cache.reserve(s.seq, cache.length(s.seq) + (int64_t)s.tokens.size()));
      std::vector<int64_t> next;
      if (onDevice) {
        next = pm.stepGreedy(steps);
      } else {
        ops::Tensor logits = pm.step(steps);
        const int64_t vocab = logits.dim(1);
        for (size_t r = 0; r < steps.size(); ++r)
          next.push_back(runtime::greedyToken({logits.data<float>() + r * vocab, size_t(vocab)}));
      }
      for (size_t r = 0; r < steps.size(); ++r) steps[r].tokens = {next[r]};
      picked.push_back(next);
    }
    return picked;
  };
  EXPECT_EQ(run(true), run(false));
}

// Tokens drawn on the device (PagedModel::stepSampled: argmax or top-k
// candidates come down, the row only when they do not settle a draw) are
// the host sampler's on the same step's logits, with the same seeds: seven
// sequences (greedy, temperature alone, top-k, top-p, and repetition
// penalties with temperature, with greedy and below 1 with top-k).
TEST_P(CudaModel, DeviceSamplingIsTheHostsSampling) {
  const auto& ref = reference();
  std::vector<std::vector<int64_t>> prompts = {ref["token_ids"][0].get<std::vector<int64_t>>(),
                                               ref["token_ids"][1].get<std::vector<int64_t>>()};
  std::vector<runtime::SamplingParams> params(7);
  for (size_t i = 1; i < params.size(); ++i) params[i].greedy = false, params[i].seed = 40 + i;
  params[1].temperature = 1.3f;
  params[2].temperature = 0.8f, params[2].topK = 20;
  params[3].temperature = 0.9f, params[3].topP = 0.7f;
  params[4].temperature = 0.8f, params[4].repetitionPenalty = 1.3f;
  params[5].greedy = true, params[5].repetitionPenalty = 1.5f;
  params[6].temperature = 0.8f, params[6].topK = 20, params[6].repetitionPenalty = 0.7f;
  std::vector<std::vector<int64_t>> device = strata::testing::drawSequences(*m.exec, blockSize, prompts, params, true),
                                    host = strata::testing::drawSequences(*m.exec, blockSize, prompts, params, false);
  EXPECT_EQ(device, host);
  EXPECT_NE(device[1], device[0]) << "temperature 1.3 drew the greedy tokens throughout";
}

// Log-probabilities from the GPU runner (the raw row brought down) are the
// host's on the same step's logits, for greedy, sampled and penalized draws.
TEST_P(CudaModel, LogprobsAreTheHostsOnTheSameLogits) {
  const auto& ref = reference();
  std::vector<std::vector<int64_t>> prompts = {ref["token_ids"][0].get<std::vector<int64_t>>(),
                                               ref["token_ids"][1].get<std::vector<int64_t>>()};
  std::vector<runtime::SamplingParams> params(3);
  params[1].greedy = false, params[1].seed = 5, params[1].temperature = 1.2f, params[1].topK = 20;
  params[2].repetitionPenalty = 1.5f;
  std::vector<std::vector<runtime::TokenLogprobs>> device, host;
  EXPECT_EQ(strata::testing::drawSequences(*m.exec, blockSize, prompts, params, true, &device),
            strata::testing::drawSequences(*m.exec, blockSize, prompts, params, false, &host));
  ASSERT_EQ(device.size(), host.size());
  for (size_t s = 0; s < device.size(); ++s) {
    ASSERT_EQ(device[s].size(), 13u);
    for (size_t t = 0; t < device[s].size(); ++t) {
      EXPECT_EQ(device[s][t].token, host[s][t].token);
      EXPECT_EQ(device[s][t].logprob, host[s][t].logprob) << "sequence " << s << ", token " << t;
      EXPECT_EQ(device[s][t].top, host[s][t].top) << "sequence " << s << ", token " << t;
      EXPECT_LE(device[s][t].logprob, 0.f);
    }
  }
}

// GpuExecutorOptions::dumpDir (strata-gpu run --dump-values): each step's
// matching node outputs land in step-<n>/ as f32 with their shapes in
// index.json; the logits dumped are the logits the step returned, bit for
// bit, and values the pattern does not match are not written.
TEST_P(CudaModel, DumpedValuesAreTheStepsOwn) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / (std::string("strata-dump-") + GetParam());
  std::filesystem::remove_all(dir);
  runtime::GpuModel dumping = runtime::loadGpuModel(runtime::loadArtifact(artifactDir(GetParam()), {fixtureDir()}),
                                                      {.dumpDir = dir.string(), .dumpMatch = "^logits$"});
  std::vector<int64_t> ids = reference()["token_ids"][0].get<std::vector<int64_t>>();
  runtime::PagedKvCache cache(runtime::kvCacheShapeFor(*dumping.exec, blockSize, 8), dumping.exec->cacheDevice());
  runtime::PagedModel pm(*dumping.exec, cache);
  std::vector<int64_t> next = ids;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(cache.reserve(0, (int64_t)ids.size() + step));
    ops::Tensor logits = pm.step({{0, next}});
    const std::filesystem::path folder = dir / ("step-" + std::to_string(step));
    nlohmann::json index = nlohmann::json::parse(std::ifstream(folder / "index.json"));
    ASSERT_EQ(index.size(), 1u) << index.dump();
    ASSERT_TRUE(index.contains("logits"));
    EXPECT_EQ(index["logits"]["shape"].get<std::vector<int64_t>>().back(), logits.dim(logits.rank() - 1));
    std::ifstream f(folder / index["logits"]["file"].get<std::string>(), std::ios::binary);
    std::vector<float> got(logits.numel());
    f.read(reinterpret_cast<char*>(got.data()), std::streamsize(got.size() * sizeof(float)));
    ASSERT_EQ(f.gcount(), std::streamsize(got.size() * sizeof(float)));
    EXPECT_EQ(got, std::vector<float>(logits.data<float>(), logits.data<float>() + logits.numel())) << "step " << step;
    next = {int64_t(std::max_element(got.begin(), got.end()) - got.begin())};
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "step-2"));
  std::filesystem::remove_all(dir);
}

// Repetition penalties are applied on the device: draws the candidates
// settle (greedy, top-k) bring no row down, and give the host's tokens;
// the penalty changes greedy tokens.
TEST_P(CudaModel, RepetitionPenaltiesStayOnTheDevice) {
  const auto& ref = reference();
  std::vector<std::vector<int64_t>> prompts = {ref["token_ids"][0].get<std::vector<int64_t>>(),
                                               ref["token_ids"][1].get<std::vector<int64_t>>()};
  std::vector<runtime::SamplingParams> params(4);  // prompts 0, 1, 0, 1
  params[0].repetitionPenalty = 1.5f;
  params[1].greedy = false, params[1].seed = 7, params[1].temperature = 0.8f, params[1].topK = 20;
  params[1].repetitionPenalty = 1.2f;
  params[3].repetitionPenalty = 0.8f;
  const int64_t before = m.exec->rowsDownloaded();
  std::vector<std::vector<int64_t>> device = strata::testing::drawSequences(*m.exec, blockSize, prompts, params, true);
  EXPECT_EQ(m.exec->rowsDownloaded(), before);
  EXPECT_EQ(device, strata::testing::drawSequences(*m.exec, blockSize, prompts, params, false));
  EXPECT_NE(device[0], device[2]) << "a penalty of 1.5 changed no greedy token";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaModel, ::testing::Values("bf16", "f16"),
                         [](const auto& info) { return std::string(info.param); });

// A GGUF file's block-quantized weights end to end on the GPU
// (cuda-models/tiny-<type>-bf16 from tests/data/gguf/tiny-<type>.gguf): the
// quantized GEMVs on the packed blocks against the reference backend on
// the same file, whose weights are the dequantized values exactly (ggml's
// own); decode steps (one row) round A to 8 bits a block (the integer-form
// GEMV), as llama.cpp does. A prompt's last logits within bf16's bound of the fixture test
// (0.1), and 16 greedy tokens, each the reference's best up to twice that
// (teacher forcing: bf16 activations flip near ties).
class CudaQuantizedModel : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaQuantizedModel, GreedyTokensAreTheDequantizedReferences) {
  std::string why = runtime::gpuDeviceUnavailable("cuda");
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  const std::string dir = fromEnv("STRATA_CUDA_MODELS", STRATA_CUDA_MODELS_DIR) + "/tiny-" + GetParam() + "-bf16";
  const std::string gguf = fromEnv("STRATA_GGUF_DATA", STRATA_GGUF_DIR);
  runtime::Artifact a = runtime::loadArtifact(dir, {gguf});
  const int64_t bs = a.blockSize;
  runtime::GpuModel m = runtime::loadGpuModel(std::move(a));
  runtime::Artifact r = runtime::loadArtifact(dir, {gguf});
  runtime::Executor cpu(std::move(r.graph));
  runtime::PagedKvCache gpuCache(runtime::kvCacheShapeFor(*m.exec, bs, 16), m.exec->cacheDevice()),
      cpuCache(runtime::kvCacheShapeFor(cpu, bs, 16));
  runtime::PagedModel gpu(*m.exec, gpuCache), ref(cpu, cpuCache);
  std::vector<int64_t> seq = {1, 45, 196, 310, 12, 7, 99, 250, 31, 400, 5};
  const size_t promptLen = seq.size();
  std::vector<int64_t> next(seq);
  double worstLogit = 0, worstMargin = 0;
  for (int t = 0; t < 16; ++t) {
    ASSERT_TRUE(gpuCache.reserve(0, int64_t(seq.size())));
    ASSERT_TRUE(cpuCache.reserve(0, int64_t(seq.size())));
    ops::Tensor g = gpu.step({{0, next}}), c = ref.step({{0, next}});
    ASSERT_EQ(g.numel(), c.numel());
    const float *gr = g.data<float>(), *cr = c.data<float>();
    if (t == 0)
      for (int64_t i = 0; i < g.numel(); ++i)
        worstLogit = std::isfinite(gr[i]) ? std::max(worstLogit, double(std::abs(gr[i] - cr[i]))) : INFINITY;
    const int64_t pick = std::max_element(gr, gr + g.numel()) - gr;
    worstMargin = std::min(worstMargin, double(cr[pick] - *std::max_element(cr, cr + c.numel())));
    seq.push_back(pick);
    next = {pick};
  }
  std::printf("%s: prompt's last logits max |GPU bf16 - dequantized reference| = %.4f; 16 greedy tokens, worst margin "
              "to the reference's choice %.4f\n",
              GetParam(), worstLogit, worstMargin);
  EXPECT_LE(worstLogit, 0.1);
  EXPECT_GE(worstMargin, -0.2);
  EXPECT_EQ(seq.size(), promptLen + 16);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaQuantizedModel, ::testing::Values("q8_0", "q4_k_m"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
