// Token sampling from one row of logits: an optional repetition penalty on
// the tokens the sequence already holds (HF's rule: a positive logit is
// divided by the penalty, a negative one multiplied), then greedy (argmax,
// lowest id on ties) or temperature -> top-k -> top-p (nucleus) -> draw with
// a seeded generator.
#pragma once
#include <cstdint>
#include <random>
#include <span>

namespace strata::runtime {

struct SamplingParams {
  bool greedy = true;
  float temperature = 1.0f;  // > 0
  int64_t topK = 0;          // 0 = all
  float topP = 1.0f;         // (0, 1]
  uint64_t seed = 0;
  float repetitionPenalty = 1.0f;  // > 0; 1 = off
  // Throws strata::Error on out-of-range values, naming the parameter.
  void validate() const;
  // Greedy on the raw logits (no penalty): the token is greedyToken of the
  // row, which a runner may pick where the logits are (GraphRunner::runGreedy).
  bool plainGreedy() const { return greedy && repetitionPenalty == 1.0f; }
};

// The greedy token of one row of logits: its largest value's id, the lowest
// id on ties.
int64_t greedyToken(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(SamplingParams p);
  // `history`: the sequence so far (prompt + generated), for the penalty.
  int64_t sample(std::span<const float> logits, std::span<const int64_t> history = {});

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
};

}  // namespace strata::runtime
