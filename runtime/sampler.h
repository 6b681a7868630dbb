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
};

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
