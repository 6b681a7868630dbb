// End-to-end timing of a paged model, shared by `strata bench decode` (CPU)
// and `strata-gpu bench-model` (GPU): prefill of a batch of random prompts,
// then greedy or sampled decode steps, on wall-clock time (every step ends
// when its next tokens are on the host: GraphRunner::runGreedy and
// runSampled pick them where the logits are).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/graph_runner.h"

namespace strata::runtime {

// Bytes of weights one decode step of `batch` sequences reads: every weight
// in full, except the embedding table, of which each token reads one row;
// each element `elementBytes` wide (0: as stored in the weight files).
double weightBytesPerStep(const ops::GraphDef& g, int64_t batch, int64_t elementBytes = 0);

struct ModelTiming {
  double prefillMs = 0;  // the one step that prefills every prompt (batch 1: time to first token), after a warm-up prefill
  double msPerStep = 0;  // mean of the decode steps (0 when none ran)
};

// Callbacks between the phases of timePagedModel (untimed).
struct TimingHooks {
  std::function<void()> beforePrefill;  // after the warm-up prefill
  std::function<void()> beforeDecode;   // after the timed prefill
};

// `batch` sequences of `promptTokens` random ids (seeded) prefilled in one
// step, then `decodeSteps` steps of one token each, in a fresh KV cache on
// the runner's device with blocks of `blockSize`. Tokens are greedy, or
// drawn with `sampling` (each sequence seeded apart; GraphRunner::runSampled)
// when given.
ModelTiming timePagedModel(const GraphRunner& exec, int64_t batch, int64_t promptTokens, int64_t decodeSteps,
                           int64_t blockSize, uint64_t seed, const TimingHooks& hooks = {},
                           const std::optional<SamplingParams>& sampling = std::nullopt);

// The profile (GraphRunner::setProfiling) of a timed prefill of `batch`
// prompts of `promptTokens` (per step: one), or of `decodeSteps` decode
// steps after it (per step: their mean) when decodeSteps > 0: a table on
// stdout headed `what`, and its rows as JSON.
nlohmann::json profilePagedModel(const GraphRunner& exec, const std::string& what, int64_t batch, int64_t promptTokens,
                                 int64_t decodeSteps, int64_t blockSize);

}  // namespace strata::runtime
