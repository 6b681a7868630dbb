#include "runtime/model_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/paged_generate.h"

namespace strata::runtime {

using Clock = std::chrono::steady_clock;

double weightBytesPerStep(const ops::GraphDef& g, int64_t batch, int64_t elementBytes) {
  std::set<std::string> embedding;
  for (const auto& n : g.nodes)
    if (n.op == "region.embedding") embedding.insert(n.inputs.at(0));
  double bytes = 0;
  for (const auto& w : g.weights) {
    // Block-quantized weights count the file's bytes (the GPU forms add
    // at most the K formats' f32 scales).
    const double all = elementBytes && w.quant.empty() ? (double)ops::numel(w.shape) * elementBytes : (double)w.nbytes;
    bytes += embedding.count(w.name) ? all / w.shape.at(0) * batch : all;
  }
  return bytes;
}

ModelTiming timePagedModel(const GraphRunner& exec, int64_t batch, int64_t promptTokens, int64_t decodeSteps,
                           int64_t blockSize, uint64_t seed, const TimingHooks& hooks,
                           const std::optional<SamplingParams>& sampling) {
  if (batch < 1 || promptTokens < 1 || decodeSteps < 0 || blockSize < 1)
    fail("timing needs batch, prompt tokens and block size >= 1 and decode steps >= 0, got {}, {}, {}, {}", batch,
         promptTokens, decodeSteps, blockSize);
  const int64_t vocab = exec.graph().meta.value("vocab_size", (int64_t)1000);
  const int64_t blocksPerSeq = (promptTokens + decodeSteps + blockSize) / blockSize;
  // Room for the timed sequences and, as long, the warm-up's.
  PagedKvCache cache(kvCacheShapeFor(exec, blockSize, blocksPerSeq * batch * 2), exec.cacheDevice());
  PagedModel pm(exec, cache);
  std::mt19937_64 rng(seed);
  std::vector<PagedModel::SeqStep> steps;
  std::vector<std::vector<int64_t>> history;  // each sequence so far (a repetition penalty reads it)
  for (int64_t s = 0; s < batch; ++s) {
    std::vector<int64_t> p(promptTokens);
    for (auto& t : p) t = std::uniform_int_distribution<int64_t>(3, std::max<int64_t>(3, vocab - 1))(rng);
    if (!cache.reserve(s, promptTokens)) fail("timing: the KV cache is too small");
    steps.push_back({s, p});
    history.push_back(p);
  }
  std::vector<Sampler> samplers;
  for (int64_t s = 0; sampling && s < batch; ++s) {
    SamplingParams p = *sampling;
    p.seed = seed + s;
    samplers.emplace_back(p);
  }
  auto stepOnce = [&] {
    if (!sampling) return pm.stepGreedy(steps);
    std::vector<GraphRunner::RowDraw> draws;
    for (int64_t s = 0; s < batch; ++s) draws.push_back({s, &samplers[s], history[s]});
    return pm.stepSampled(steps, draws);
  };
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  ModelTiming t;
  {
    // A warm-up prefill of the same prompts under other sequence ids, then
    // freed: the timed prefill is a steady-state one, without the one-time
    // work a first step does (CPU: packing the weights into panels and
    // faulting in their pages).
    std::vector<PagedModel::SeqStep> warm = steps;
    for (auto& w : warm) {
      w.seq += batch;
      if (!cache.reserve(w.seq, promptTokens)) fail("timing: the KV cache is too small");
    }
    pm.stepGreedy(warm);
    for (const auto& w : warm) cache.free(w.seq);
  }
  if (hooks.beforePrefill) hooks.beforePrefill();
  auto t0 = Clock::now();
  std::vector<int64_t> ids = stepOnce();
  t.prefillMs = ms(Clock::now() - t0);
  auto next = [&] {
    for (int64_t s = 0; s < batch; ++s) {
      steps[s].tokens = {ids[s]};
      history[s].push_back(ids[s]);
      if (!cache.reserve(s, cache.length(s) + 1)) fail("timing: the KV cache is too small");
    }
  };
  next();
  if (hooks.beforeDecode) hooks.beforeDecode();
  auto t1 = Clock::now();
  for (int64_t i = 0; i < decodeSteps; ++i) {
    ids = stepOnce();
    next();
  }
  if (decodeSteps > 0) t.msPerStep = ms(Clock::now() - t1) / decodeSteps;
  return t;
}

nlohmann::json profilePagedModel(const GraphRunner& exec, const std::string& what, int64_t batch, int64_t promptTokens,
                                 int64_t decodeSteps, int64_t blockSize) {
  const bool decode = decodeSteps > 0;
  const int64_t steps = decode ? decodeSteps : 1;
  exec.setProfiling(true);
  auto drop = [&] { exec.takeProfile(); };
  try {
    timePagedModel(exec, batch, promptTokens, decodeSteps, blockSize, 0,
                   decode ? TimingHooks{{}, drop} : TimingHooks{drop, {}});
  } catch (...) {
    exec.setProfiling(false);
    throw;
  }
  exec.setProfiling(false);
  const auto rows = exec.takeProfile();
  double total = 0;
  for (const auto& [label, r] : rows) total += r.ms;
  std::printf("\nprofile: %s (ms per step, each node timed alone)\n", what.c_str());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [label, r] : rows) {
    std::printf("  %-26s %8lld calls %9.3f ms %5.1f %%\n", label.c_str(), (long long)(r.calls / steps), r.ms / steps,
                100 * r.ms / total);
    out.push_back({{"region", label}, {"calls_per_step", r.calls / steps}, {"ms_per_step", r.ms / steps}});
  }
  std::printf("  %-26s %24.3f ms\n", "total", total / steps);
  return {{"what", what}, {"rows", out}, {"ms_per_step", total / steps}};
}

}  // namespace strata::runtime
