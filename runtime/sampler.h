// Token sampling from one row of logits: optional penalties first — the
// repetition penalty on the tokens the sequence already holds, prompt
// included (HF's rule: a positive logit is divided by the penalty, a
// negative one multiplied), then presence and frequency penalties on the
// tokens it generated (OpenAI's rule, as vLLM applies it: minus presence
// once per distinct id, minus frequency per occurrence) — then greedy
// (argmax, lowest id on ties) or temperature -> top-k -> min-p -> top-p
// (nucleus) -> draw with a seeded generator.
//
// A draw needs only the head of the row in sampling order (larger logits
// first, the lower id first among equal ones) and the row's softmax mass, so
// a runner whose logits are on a device brings down per-split candidates
// (codegen/TopKKernel.h), merges them into a RowHead (headFromSplits) and
// picks from it; only when the head is too short to settle the draw does
// the whole row come down. The uniform is drawn once per token, before the
// head is looked at, so both ways give the same token.
#pragma once
#include <cstdint>
#include <cstddef>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace strata::runtime {

struct SamplingParams {
  bool greedy = true;
  float temperature = 1.0f;  // > 0
  int64_t topK = 0;          // 0 = all
  float topP = 1.0f;         // (0, 1]
  uint64_t seed = 0;
  float repetitionPenalty = 1.0f;  // > 0; 1 = off
  float presencePenalty = 0.0f;    // [-2, 2]; 0 = off
  float frequencyPenalty = 0.0f;   // [-2, 2]; 0 = off
  float minP = 0.0f;               // [0, 1]: keep ids at least minP times as likely as the top one; 0 = off
  bool penalized() const { return repetitionPenalty != 1.0f || presencePenalty != 0.0f || frequencyPenalty != 0.0f; }
  // Throws strata::Error on out-of-range values, naming the parameter.
  void validate() const;
};

// The repetition penalty on one row, in place: each distinct id of
// `history` inside the row gets l / penalty when l > 0, else l * penalty
// (f32 arithmetic; the GPU's penalty kernel computes the same).
void applyRepetitionPenalty(std::span<float> logits, std::span<const int64_t> history, float penalty);

// Every penalty of `p` on one row, in place: the repetition penalty over
// all of `history`, then l -= presence + frequency * count for each id of
// history[generatedFrom..] (the generated part; count = its occurrences
// there), in f32.
void applyPenalties(std::span<float> logits, std::span<const int64_t> history, size_t generatedFrom,
                    const SamplingParams& p);

// The greedy token of one row of logits: its largest value's id, the lowest
// id on ties.
int64_t greedyToken(std::span<const float> logits);

// The first entries of a row in sampling order.
struct RowHead {
  std::vector<float> logits;  // in sampling order
  std::vector<int64_t> ids;
  size_t exact = 0;   // the first `exact` entries are surely the row's first `exact`
  double mass = 0;    // the row's sum of exp((l - logits[0]) / temperature), all of it
  int64_t vocab = 0;  // the row's length
};

// A host row's head: its first min(count, size) entries (all exact) and
// its mass at `temperature` (selection, then a sort of those entries).
RowHead headOf(std::span<const float> logits, float temperature, size_t count);

// A row's head from the top-k kernel's output for that row (host copies):
// value / index [splits * candidates] (each split's candidates in order,
// -inf once a split runs out), mass [splits] (each split's mass at
// `temperature`, relative to its own max); at most `count` entries, the
// candidates' first in sampling order. Entries after the largest value
// some full split could still be hiding are not exact.
RowHead headFromSplits(const float* value, const float* index, const float* mass, int64_t splits, int64_t candidates,
                       int64_t vocab, float temperature, size_t count = SIZE_MAX);

// How many entries a first head for `p` holds: top-k's k, else 256 (a
// trained model's top-p nucleus and most temperature draws fit); a draw it
// does not settle takes all the candidates, then the whole row.
size_t headSize(const SamplingParams& p);

// The token for the uniform `u` in [0, 1) under `p` (temperature, top-k,
// min-p, top-p; not greedy, no penalty), or nullopt when the head's exact part
// does not settle it. A whole row's head (headOf with count >= vocab)
// always settles it.
std::optional<int64_t> pickFromHead(const RowHead& head, const SamplingParams& p, double u);

// A drawn token's log-probability under the model's own distribution: the
// log-softmax of its raw logits row (before any repetition penalty,
// temperature, top-k or top-p), with the row's most likely tokens.
struct TokenLogprobs {
  int64_t token = -1;
  float logprob = 0;                            // the drawn token's
  std::vector<std::pair<int64_t, float>> top;  // the most likely tokens, in sampling order, with theirs
};
// The most top alternatives a token's log-probabilities carry.
constexpr int64_t kMaxTopLogprobs = 20;

// `token`'s log-probability in one row of logits (computed in double) and
// the row's first `top` tokens in sampling order (larger logit first, the
// lower id among equal ones) with theirs; top in [0, kMaxTopLogprobs].
TokenLogprobs tokenLogprobs(std::span<const float> logits, int64_t token, int64_t top);

class Sampler {
 public:
  explicit Sampler(SamplingParams p);
  const SamplingParams& params() const { return p_; }
  // The next uniform in [0, 1): one per sampled (non-greedy) token.
  double draw();
  // `history`: the sequence so far (prompt + generated), for the
  // penalties; its generated part starts at `generatedFrom`.
  int64_t sample(std::span<const float> logits, std::span<const int64_t> history = {}, size_t generatedFrom = 0);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
};

}  // namespace strata::runtime
