#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/error.h"

namespace strata::runtime {

void SamplingParams::validate() const {
  if (!(repetitionPenalty > 0.f) || !std::isfinite(repetitionPenalty))
    fail("--repetition-penalty must be > 0, got {}", repetitionPenalty);
  if (greedy) return;
  if (!(temperature > 0.f) || !std::isfinite(temperature)) fail("--temperature must be > 0, got {}", temperature);
  if (topK < 0) fail("--top-k must be >= 0, got {}", topK);
  if (!(topP > 0.f && topP <= 1.f)) fail("--top-p must be in (0, 1], got {}", topP);
}

Sampler::Sampler(SamplingParams p) : p_(p), rng_(p.seed) { p_.validate(); }

int64_t greedyToken(std::span<const float> logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

int64_t Sampler::sample(std::span<const float> logitsIn, std::span<const int64_t> history) {
  if (logitsIn.empty()) fail("cannot sample from empty logits");
  std::vector<float> penalized;
  std::span<const float> logits = logitsIn;
  if (p_.repetitionPenalty != 1.0f && !history.empty()) {
    penalized.assign(logitsIn.begin(), logitsIn.end());
    std::vector<bool> seen(penalized.size(), false);
    for (int64_t id : history)
      if (id >= 0 && id < (int64_t)penalized.size() && !seen[id]) {
        seen[id] = true;
        float& l = penalized[id];
        l = l > 0 ? l / p_.repetitionPenalty : l * p_.repetitionPenalty;
      }
    logits = penalized;
  }
  if (p_.greedy) return greedyToken(logits);
  std::vector<int64_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  size_t keep = p_.topK > 0 ? std::min<size_t>(p_.topK, idx.size()) : idx.size();
  std::vector<double> prob(keep);
  double mx = logits[idx[0]] / p_.temperature, sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += (prob[i] = std::exp(logits[idx[i]] / p_.temperature - mx));
  double cum = 0;
  size_t nucleus = keep;
  for (size_t i = 0; i < keep; ++i) {
    cum += prob[i] / sum;
    if (cum >= p_.topP) { nucleus = i + 1; break; }
  }
  std::discrete_distribution<size_t> dist(prob.begin(), prob.begin() + nucleus);
  return idx[dist(rng_)];
}

}  // namespace strata::runtime
