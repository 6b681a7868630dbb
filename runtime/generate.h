// Autoregressive generation over an Executor, following the graph's own
// signature:
//  - `input_ids` [batch, seq] (required), `attention_mask` and `position_ids`
//    when the graph declares them;
//  - graphs with `past_key_values.N.key/value` inputs feed each step's
//    `present.N.key/value` outputs back as past and pass only the new tokens;
//  - graphs without past recompute the whole sequence every step.
// Batch is 1 here; batching belongs to the scheduler.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "runtime/executor.h"
#include "runtime/sampler.h"

namespace strata::runtime {

struct GenerateRequest {
  std::vector<int64_t> promptIds;
  int64_t maxNewTokens = 16;
  SamplingParams sampling;
  std::vector<int64_t> eosIds;  // stop after emitting any of them (the model's eos, a chat's end of turn)
  // With a value N: each generated token's log-probability and its step's N
  // most likely tokens' (the scheduler's onToken; runtime/sampler.h).
  std::optional<int64_t> logprobs;
};

class Generator {
 public:
  explicit Generator(const Executor& exec);
  // Returns prompt + generated ids; onToken sees each new id as it is chosen.
  std::vector<int64_t> generate(const GenerateRequest& req, const std::function<void(int64_t)>& onToken = {});
  // Logits [seq, vocab] of one forward pass over `ids` (no cache).
  ops::Tensor forward(const std::vector<int64_t>& ids);

 private:
  TensorMap stepInputs(const std::vector<int64_t>& newIds, int64_t past, const TensorMap& cache) const;
  const Executor& exec_;
  std::vector<std::string> pastInputs_;  // in graph order
  bool hasPast_ = false;
  int64_t vocab_ = 0;
};

}  // namespace strata::runtime
