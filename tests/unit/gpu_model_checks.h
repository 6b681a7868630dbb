// What the GPU model tests (cuda_model_test.cpp on an NVIDIA GPU,
// xe_model_test.cpp on the Xe test device) do to a compiled tiny-llama
// artifact, written once: greedy completions through the scheduler, each
// token's margin to the f32 reference's choice, and sampled draws on the
// device or on the host.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/executor.h"
#include "runtime/gpu_executor.h"
#include "runtime/paged_generate.h"
#include "runtime/sampler.h"
#include "runtime/scheduler.h"

namespace strata::testing {

// Greedy completions of `prompts` (24 tokens each) through the scheduler
// on `exec`, at most `stepTokens` tokens a step (KV blocks of `blockSize`).
inline std::vector<std::vector<int64_t>> greedyCompletions(const runtime::GraphRunner& exec, int64_t blockSize,
                                                           const std::vector<std::vector<int64_t>>& prompts,
                                                           int64_t stepTokens) {
  runtime::SchedulerOptions so;
  so.blockSize = blockSize;
  so.numBlocks = 64;
  so.maxStepTokens = stepTokens;
  std::vector<std::vector<int64_t>> out(prompts.size());
  runtime::Scheduler::Events ev;
  ev.onFinish = [&](int64_t id, const std::vector<int64_t>& ids, runtime::FinishReason) { out[id] = ids; };
  runtime::Scheduler sched(exec, so, ev);
  for (const auto& p : prompts) {
    runtime::GenerateRequest r;
    r.promptIds = p;
    r.maxNewTokens = 24;
    sched.add(r);
  }
  sched.runToCompletion();
  return out;
}

// How far each generated token of `seq` is from the f32 reference's choice:
// the plan's region graph (the artifact in `artifactDir`, weights from
// `fixtureDir`) on the CPU reference ops, fed `seq` (teacher forcing);
// entry i is ref_logit(seq[p + i]) - max ref_logit at that step (0 where
// the reference picks the same token). `fixtureDir` empty: the weights the
// artifact names. With `promptLogits`, the reference's logits of the
// prompt's last token.
inline std::vector<double> referenceMargins(const std::string& artifactDir, const std::string& fixtureDir,
                                            const std::vector<int64_t>& seq, size_t promptLen,
                                            ops::Tensor* promptLogits = nullptr) {
  runtime::Artifact a = runtime::loadArtifact(artifactDir, {fixtureDir});
  // The reference computes in f32, its cache too (a plan from 16-bit GGUF
  // weights records a 16-bit cache, which the CPU kernels keep).
  for (ops::ValueInfo& in : a.graph.inputs)
    if (in.name.rfind("kv_cache.", 0) == 0) in.dtype = ops::DType::F32;
  runtime::Executor cpu(std::move(a.graph));
  runtime::PagedKvCache cache(runtime::kvCacheShapeFor(cpu, a.blockSize, 64));
  runtime::PagedModel pm(cpu, cache);
  std::vector<int64_t> prompt(seq.begin(), seq.begin() + promptLen);
  EXPECT_TRUE(cache.reserve(0, (int64_t)promptLen));
  ops::Tensor logits = pm.step({{0, prompt}});
  if (promptLogits) *promptLogits = logits;
  std::vector<double> margins;
  for (size_t i = promptLen; i < seq.size(); ++i) {
    const float* row = logits.data<float>();
    margins.push_back(row[seq[i]] - *std::max_element(row, row + logits.numel()));
    EXPECT_TRUE(cache.reserve(0, (int64_t)i + 1));
    logits = pm.step({{0, {seq[i]}}});
  }
  return margins;
}

// One prefill step of `ids` (a paged cache of 8 blocks on the executor's
// device): the last token's logits.
inline ops::Tensor prefillLogits(const runtime::GpuExecutor& exec, int64_t blockSize, const std::vector<int64_t>& ids) {
  runtime::PagedKvCache cache(runtime::kvCacheShapeFor(exec, blockSize, 8), exec.cacheDevice());
  runtime::PagedModel pm(exec, cache);
  EXPECT_TRUE(cache.reserve(0, (int64_t)ids.size()));
  return pm.step({{0, ids}});
}

// `got` (a logits row) against `ref` (the f32 reference's): the largest
// absolute difference (infinite where `got` is not finite), printed after
// `what`, at most `bound`, and the same best token.
inline void expectLogitsNear(const ops::Tensor& got, const std::vector<double>& ref, double bound,
                             const std::string& what) {
  ASSERT_EQ(got.numel(), (int64_t)ref.size());
  double worst = 0;
  int64_t best = 0, refBest = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.data<float>()[i], r = ref[i];
    worst = std::isfinite(g) ? std::max(worst, std::abs(g - r)) : INFINITY;
    if (g > got.data<float>()[best]) best = i;
    if (r > ref[refBest]) refBest = i;
  }
  std::printf("%s = %.4f\n", what.c_str(), worst);
  EXPECT_LE(worst, bound);
  EXPECT_EQ(best, refBest);
}

// Greedy completions (24 tokens) of `prompts` on `exec`, one at a time
// (512 tokens a step) and all at once in steps of 5 tokens: each token the
// f32 reference's best (referenceMargins on the artifact in `artifactDir`,
// weights from `fixtureDir`) up to `bound`; how many tokens equal `want`'s
// before the first difference and the worst margin are printed after
// `what`.
inline void expectGreedyNearReference(const runtime::GpuExecutor& exec, int64_t blockSize,
                                      const std::vector<std::vector<int64_t>>& prompts,
                                      const std::vector<std::vector<int64_t>>& want, const std::string& artifactDir,
                                      const std::string& fixtureDir, double bound, const std::string& what) {
  const auto both = greedyCompletions(exec, blockSize, prompts, 5);
  for (size_t i = 0; i < prompts.size(); ++i)
    for (const auto& [how, got] :
         {std::pair{"alone", greedyCompletions(exec, blockSize, {prompts[i]}, 512)[0]}, std::pair{"batched", both[i]}}) {
      ASSERT_EQ(got.size(), want[i].size()) << how;
      size_t same = 0;
      while (same < got.size() && got[same] == want[i][same]) ++same;
      const std::vector<double> margins = referenceMargins(artifactDir, fixtureDir, got, prompts[i].size());
      std::printf("%s prompt %zu %s: %zu of 24 tokens as the fixture's before the first difference; worst margin to the "
                  "f32 reference's choice %.4f\n",
                  what.c_str(), i, how, same - prompts[i].size(), *std::min_element(margins.begin(), margins.end()));
      for (size_t t = 0; t < margins.size(); ++t)
        EXPECT_GE(margins[t], -bound) << "prompt " << i << " " << how << ", token " << t;
    }
}

// The tokens of sequences drawn with `params` (prompt s % 2 each),
// prefill and 12 decode steps, by PagedModel::stepSampled on the device
// or by the host sampler on the same step's logits (the same seeds); with
// `logprobs`, each token's log-probabilities and 5 alternatives too.
inline std::vector<std::vector<int64_t>> drawSequences(const runtime::GpuExecutor& exec, int64_t blockSize,
                                                       const std::vector<std::vector<int64_t>>& prompts,
                                                       const std::vector<runtime::SamplingParams>& params,
                                                       bool onDevice,
                                                       std::vector<std::vector<runtime::TokenLogprobs>>* logprobs = nullptr) {
  runtime::PagedKvCache cache(runtime::kvCacheShapeFor(exec, blockSize, 8 * (int64_t)params.size()), exec.cacheDevice());
  runtime::PagedModel pm(exec, cache);
  std::vector<runtime::Sampler> samplers;
  std::vector<std::vector<int64_t>> ids;
  std::vector<runtime::PagedModel::SeqStep> steps;
  for (size_t s = 0; s < params.size(); ++s) {
    samplers.emplace_back(params[s]);
    ids.push_back(prompts[s % 2]);
    steps.push_back({(int64_t)s, ids.back()});
  }
  for (int step = 0; step <= 12; ++step) {
    for (const auto& s : steps) EXPECT_TRUE(cache.reserve(s.seq, cache.length(s.seq) + (int64_t)s.tokens.size()));
    std::vector<int64_t> next;
    std::vector<runtime::TokenLogprobs> lps(steps.size());
    if (onDevice) {
      std::vector<runtime::GraphRunner::RowDraw> draws;
      for (size_t r = 0; r < steps.size(); ++r)
        draws.push_back({(int64_t)r, &samplers[r], ids[r], logprobs ? &lps[r] : nullptr, 5});
      next = pm.stepSampled(steps, draws);
    } else {
      ops::Tensor logits = pm.step(steps);
      const int64_t vocab = logits.dim(1);
      for (size_t r = 0; r < steps.size(); ++r) {
        const std::span<const float> row{logits.data<float>() + r * vocab, size_t(vocab)};
        next.push_back(samplers[r].sample(row, ids[r]));
        if (logprobs) lps[r] = runtime::tokenLogprobs(row, next[r], 5);
      }
    }
    if (logprobs) logprobs->resize(steps.size());
    for (size_t r = 0; r < steps.size(); ++r) {
      steps[r].tokens = {next[r]}, ids[r].push_back(next[r]);
      if (logprobs) (*logprobs)[r].push_back(lps[r]);
    }
  }
  return ids;
}

}  // namespace strata::testing
