#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "ops/error.h"

namespace strata::runtime {

void SamplingParams::validate() const {
  if (!(repetitionPenalty > 0.f) || !std::isfinite(repetitionPenalty))
    fail("--repetition-penalty must be > 0, got {}", repetitionPenalty);
  if (!(presencePenalty >= -2.f && presencePenalty <= 2.f))
    fail("--presence-penalty must be in [-2, 2], got {}", presencePenalty);
  if (!(frequencyPenalty >= -2.f && frequencyPenalty <= 2.f))
    fail("--frequency-penalty must be in [-2, 2], got {}", frequencyPenalty);
  if (!(minP >= 0.f && minP <= 1.f)) fail("--min-p must be in [0, 1], got {}", minP);
  if (greedy) return;
  if (!(temperature > 0.f) || !std::isfinite(temperature)) fail("--temperature must be > 0, got {}", temperature);
  if (topK < 0) fail("--top-k must be >= 0, got {}", topK);
  if (!(topP > 0.f && topP <= 1.f)) fail("--top-p must be in (0, 1], got {}", topP);
}

int64_t greedyToken(std::span<const float> logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

namespace {

// Sampling order: the larger logit first, the lower id among equal ones.
bool before(float a, int64_t ia, float b, int64_t ib) { return a > b || (a == b && ia < ib); }

// The first min(count, size) ids of `ids` in sampling order, sorted:
// selection first (linear), then a sort of those.
size_t sortHead(std::vector<int64_t>& ids, std::span<const float> logits, size_t count) {
  auto less = [&](int64_t a, int64_t b) { return before(logits[a], a, logits[b], b); };
  const size_t n = std::min(count, ids.size());
  if (n < ids.size()) std::nth_element(ids.begin(), ids.begin() + n, ids.end(), less);
  std::sort(ids.begin(), ids.begin() + n, less);
  return n;
}

// The ids of a whole row in sampling order: a stable LSD radix sort (three
// 11-bit digits) on keys that order floats descending, over ids ascending,
// so equal values keep the lower id first. A 128k vocabulary takes about a
// millisecond, a comparison sort ten.
std::vector<int64_t> sortedIds(std::span<const float> logits) {
  const size_t n = logits.size();
  std::vector<uint32_t> key(n), keyTmp(n);
  std::vector<int64_t> ids(n), tmp(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    const float v = logits[i] == 0.f ? 0.f : logits[i];  // -0 equals +0: one key
    std::memcpy(&b, &v, 4);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);  // ascending with the float
    key[i] = ~b;                                      // descending
    ids[i] = (int64_t)i;
  }
  for (int shift = 0; shift < 33; shift += 11) {
    std::vector<size_t> start(2049, 0);
    for (uint32_t k : key) ++start[((k >> shift) & 2047) + 1];
    for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (size_t i = 0; i < n; ++i) {
      const size_t at = start[(key[i] >> shift) & 2047]++;
      tmp[at] = ids[i], keyTmp[at] = key[i];
    }
    ids.swap(tmp), key.swap(keyTmp);
  }
  return ids;
}

}  // namespace

RowHead headOf(std::span<const float> logits, float temperature, size_t count) {
  if (logits.empty()) fail("cannot sample from empty logits");
  std::vector<int64_t> idx;
  size_t n = std::min(count, logits.size());
  if (n > logits.size() / 8) {
    idx = sortedIds(logits);
  } else {
    idx.resize(logits.size());
    std::iota(idx.begin(), idx.end(), 0);
    n = sortHead(idx, logits, count);
  }
  RowHead h;
  h.vocab = (int64_t)logits.size();
  h.exact = n;
  for (size_t i = 0; i < n; ++i) h.ids.push_back(idx[i]), h.logits.push_back(logits[idx[i]]);
  const double top = h.logits[0], invT = 1.0 / temperature;
  for (float l : logits) h.mass += std::exp((double(l) - top) * invT);
  return h;
}

RowHead headFromSplits(const float* value, const float* index, const float* mass, int64_t splits, int64_t candidates,
                       int64_t vocab, float temperature, size_t count) {
  const float ninf = -std::numeric_limits<float>::infinity();
  // A split that filled all its candidates may hide more values up to its
  // last one: only entries above the largest such value are surely in
  // order (everything larger is among the candidates).
  float hidden = ninf;
  // Each split's candidates are in sampling order already: merge them
  // (a heap of split cursors, the best on top), taking only `count`.
  struct Cursor {
    float l;
    int64_t id, split, j;
  };
  auto worse = [](const Cursor& a, const Cursor& b) { return before(b.l, b.id, a.l, a.id); };
  std::vector<Cursor> heap;
  for (int64_t s = 0; s < splits; ++s) {
    const float* v = value + s * candidates;
    if (v[0] > ninf) heap.push_back({v[0], int64_t(index[s * candidates]), s, 0});
    if (v[candidates - 1] > ninf) hidden = std::max(hidden, v[candidates - 1]);
  }
  if (heap.empty()) fail("cannot sample: every logit of the row is -inf or NaN");
  std::make_heap(heap.begin(), heap.end(), worse);
  RowHead h;
  h.vocab = vocab;
  while (!heap.empty() && h.ids.size() < count) {
    std::pop_heap(heap.begin(), heap.end(), worse);
    Cursor c = heap.back();
    heap.pop_back();
    h.logits.push_back(c.l), h.ids.push_back(c.id);
    if (c.l > hidden) ++h.exact;
    const int64_t at = c.split * candidates + c.j + 1;
    if (c.j + 1 < candidates && value[at] > ninf) {
      heap.push_back({value[at], int64_t(index[at]), c.split, c.j + 1});
      std::push_heap(heap.begin(), heap.end(), worse);
    }
  }
  // Each split's mass is relative to its own max (its first candidate).
  const double top = h.logits[0], invT = 1.0 / temperature;
  for (int64_t s = 0; s < splits; ++s)
    if (float m = value[s * candidates]; m > ninf && std::isfinite(mass[s])) h.mass += mass[s] * std::exp((m - top) * invT);
  return h;
}

std::optional<int64_t> pickFromHead(const RowHead& h, const SamplingParams& p, double u) {
  if (h.ids.empty() || h.vocab <= 0) fail("cannot sample from an empty row");
  const size_t n = std::min(h.exact, h.ids.size());
  size_t keep = p.topK > 0 ? (size_t)std::min<int64_t>(p.topK, h.vocab) : (size_t)h.vocab;
  // Every loop below reads at most the first min(keep, n) weights.
  const double top = h.logits[0], invT = 1.0 / p.temperature;
  std::vector<double> w(std::min(keep, n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::exp((double(h.logits[i]) - top) * invT);
  auto weight = [&](size_t i) { return w[i]; };
  // min-p keeps the prefix whose weights (probabilities relative to the
  // top one's, which is 1) are >= minP; unsettled when that prefix may run
  // past the exact part.
  if (p.minP > 0.f) {
    size_t i = 0;
    while (i < w.size() && w[i] >= double(p.minP)) ++i;
    if (i < w.size()) keep = i;
    else if (keep > n) return std::nullopt;
  }
  // The kept set's weight, which top-p's fraction is of.
  double kept = 0;
  if (keep <= n)
    for (size_t i = 0; i < keep; ++i) kept += weight(i);
  else if (keep == (size_t)h.vocab) kept = h.mass;
  else return std::nullopt;
  // The nucleus: the shortest prefix of the kept set holding top-p of its
  // weight (all of it at top-p 1).
  size_t nucleus = keep;
  double inNucleus = kept;
  if (p.topP < 1.f) {
    double cum = 0;
    bool found = false;
    for (size_t i = 0; i < std::min(keep, n) && !found; ++i) {
      cum += weight(i);
      if (cum >= p.topP * kept) nucleus = i + 1, inNucleus = cum, found = true;
    }
    if (!found && keep > n) return std::nullopt;
  }
  // The draw: the first entry whose running weight passes u x the nucleus'.
  const double target = u * inNucleus;
  double run = 0;
  for (size_t i = 0; i < std::min(nucleus, n); ++i)
    if ((run += weight(i)) > target) return h.ids[i];
  if (nucleus <= n) return h.ids[nucleus - 1];  // rounding at the very end
  return std::nullopt;
}

TokenLogprobs tokenLogprobs(std::span<const float> logits, int64_t token, int64_t top) {
  if (logits.empty()) fail("log-probabilities of an empty row");
  if (token < 0 || token >= (int64_t)logits.size())
    fail("log-probability of token {} in a row of {} logits", token, logits.size());
  if (top < 0 || top > kMaxTopLogprobs) fail("top log-probabilities: {} asked, 0..{} allowed", top, kMaxTopLogprobs);
  double max = -std::numeric_limits<double>::infinity();
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max);
  const double logZ = max + std::log(sum);
  TokenLogprobs r;
  r.token = token;
  r.logprob = float(double(logits[token]) - logZ);
  std::vector<int64_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t n = sortHead(ids, logits, (size_t)top);
  for (size_t i = 0; i < n; ++i) r.top.push_back({ids[i], float(double(logits[ids[i]]) - logZ)});
  return r;
}

size_t headSize(const SamplingParams& p) { return p.topK > 0 ? (size_t)p.topK : 256; }

void applyRepetitionPenalty(std::span<float> logits, std::span<const int64_t> history, float penalty) {
  std::vector<bool> seen(logits.size(), false);
  for (int64_t id : history)
    if (id >= 0 && id < (int64_t)logits.size() && !seen[id]) {
      seen[id] = true;
      float& l = logits[id];
      l = l > 0 ? l / penalty : l * penalty;
    }
}

void applyPenalties(std::span<float> logits, std::span<const int64_t> history, size_t generatedFrom,
                    const SamplingParams& p) {
  if (p.repetitionPenalty != 1.0f) applyRepetitionPenalty(logits, history, p.repetitionPenalty);
  if ((p.presencePenalty == 0.0f && p.frequencyPenalty == 0.0f) || generatedFrom >= history.size()) return;
  std::vector<int32_t> count(logits.size(), 0);
  for (size_t i = generatedFrom; i < history.size(); ++i)
    if (int64_t id = history[i]; id >= 0 && id < (int64_t)logits.size()) ++count[id];
  for (size_t id = 0; id < logits.size(); ++id)
    if (count[id] > 0) logits[id] -= p.presencePenalty + p.frequencyPenalty * float(count[id]);
}

Sampler::Sampler(SamplingParams p) : p_(p), rng_(p.seed) { p_.validate(); }

double Sampler::draw() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

int64_t Sampler::sample(std::span<const float> logitsIn, std::span<const int64_t> history, size_t generatedFrom) {
  if (logitsIn.empty()) fail("cannot sample from empty logits");
  std::vector<float> penalized;
  std::span<const float> logits = logitsIn;
  if (p_.penalized() && !history.empty()) {
    penalized.assign(logitsIn.begin(), logitsIn.end());
    applyPenalties(penalized, history, generatedFrom, p_);
    logits = penalized;
  }
  if (p_.greedy) return greedyToken(logits);
  const double u = draw();
  // Most draws settle in the first few hundred entries; sorting the whole
  // row (a 128k vocabulary) only when they do not.
  if (auto t = pickFromHead(headOf(logits, p_.temperature, headSize(p_)), p_, u)) return *t;
  return *pickFromHead(headOf(logits, p_.temperature, logits.size()), p_, u);
}

}  // namespace strata::runtime
