#include "runtime/gpu_executor_impl.h"

namespace strata::runtime {

namespace {

// Output `name` of a step, still on the device: rows of logits in the
// executor's storage type.
struct DeviceRows {
  const Tensor* t = nullptr;
  int64_t rows = 0, vocab = 0;
};
DeviceRows deviceRows(const std::map<std::string, Tensor>& outs, const std::string& name, const ops::GraphDef& g,
                      ops::DType dt, const std::string& dtName) {
  auto it = outs.find(name);
  if (it == outs.end()) fail("{}: the graph has no output '{}'", g.source, name);
  const Tensor& d = it->second;
  if (d.dtype() != dt || d.rank() < 1 || d.dim(d.rank() - 1) < 1)
    fail("output '{}' ({} {}) is not rows of {} logits", name, ops::dtypeName(d.dtype()), ops::shapeStr(d.shape()), dtName);
  const int64_t vocab = d.dim(d.rank() - 1);
  if (vocab >= (int64_t(1) << 24)) fail("a vocabulary of {} ids is past the sampling kernels' exact f32 indices", vocab);
  return {&d, d.numel() / vocab, vocab};
}

}  // namespace

// The argmax kernel reduces each row to a few (max, index) pairs, which
// come down; the host picks the row's first largest.
std::vector<int64_t> GpuExecutor::Impl::greedyRows(const Tensor& d, int64_t rows, int64_t vocab) const {
  if (rows == 0) return {};
  const std::string type = ops::dtypeName(d.dtype());
  const auto& kern = findKernel(k.argmaxes(), [&](const auto& a) { return a.dtype == type; }, type + " argmax");
  const auto [chunk, splits] = GpuKernelSet::argmaxSplits(kern, vocab);
  Tensor part = pool.tensor(ops::DType::F32, {2, rows, splits});
  float* mx = static_cast<float*>(mut(part));
  k.launch(kern, d.raw(), mx, mx + rows * splits, rows, vocab, chunk, splits);
  std::vector<float> host(2 * rows * splits);
  download(host.data(), part.raw(), host.size() * sizeof(float));
  return GpuKernelSet::argmaxPick(host.data(), host.data() + rows * splits, rows, splits);
}

std::vector<int64_t> GpuExecutor::runGreedy(const TensorMap& inputs, const std::string& name) const {
  const Impl& m = *impl_;
  Tensor staged;
  std::map<std::string, Tensor> outs = m.execute(inputs, staged);
  const DeviceRows d = deviceRows(outs, name, m.g, m.dt, m.dtName);
  return m.greedyRows(*d.t, d.rows, d.vocab);
}

bool GpuExecutor::Impl::penaltyOnDevice() const {
  auto has = [&](const auto& ks, auto pred) { return std::any_of(ks.begin(), ks.end(), pred); };
  return !k.penalties().empty() &&
         has(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == "f32"; }) &&
         has(k.argmaxes(), [](const auto& x) { return x.dtype == "f32"; }) &&
         has(k.topks(), [](const auto& x) { return x.dtype == "f32"; });
}

Tensor GpuExecutor::Impl::penalizedRows(const Tensor& d, int64_t vocab, std::span<const RowDraw* const> draws) const {
  const int64_t P = (int64_t)draws.size();
  // Host side: the source rows, then each draw's distinct ids inside the
  // vocabulary as (row, column) entries (rows first, then columns), then
  // the penalties.
  std::vector<int64_t> ids(P), rows, cols;
  std::vector<float> penalty(P);
  std::vector<char> seen(vocab);  // cleared after each draw at its own entries only
  for (int64_t q = 0; q < P; ++q) {
    ids[q] = draws[q]->row, penalty[q] = draws[q]->sampler->params().repetitionPenalty;
    const size_t first = cols.size();
    for (int64_t id : draws[q]->history)
      if (id >= 0 && id < vocab && !seen[id]) seen[id] = 1, rows.push_back(q), cols.push_back(id);
    for (size_t e = first; e < cols.size(); ++e) seen[cols[e]] = 0;
  }
  const int64_t E = (int64_t)rows.size();
  ids.insert(ids.end(), rows.begin(), rows.end());
  ids.insert(ids.end(), cols.begin(), cols.end());
  Tensor index = pool.tensor(ops::DType::I64, {P + 2 * E}), scale = pool.tensor(ops::DType::F32, {P});
  dev.upload(mut(index), ids.data(), ids.size() * sizeof(int64_t));
  dev.upload(mut(scale), penalty.data(), penalty.size() * sizeof(float));
  const auto& widen = findKernel(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == "f32"; },
                                 dtName + " row gather into f32");
  Tensor out = pool.tensor(ops::DType::F32, {P, vocab});
  const int64_t sourceRows = d.numel() / vocab;
  k.launch(widen, d.raw(), mut(out), index.raw(), P, sourceRows, vocab);
  if (E > 0) {
    const int64_t* at = static_cast<const int64_t*>(index.raw()) + P;
    k.launch(k.penalties().front(), mut(out), at, scale.raw(), P, vocab, E);
  }
  return out;
}

// Greedy draws take the argmax kernel's partials, sampling draws the top-k
// kernel's candidates (runtime/sampler.h: headFromSplits); a row comes down
// whole only for a draw its candidates do not settle, a second
// temperature on one row (the row's mass is computed at its first draw's
// temperature), presence and frequency penalties, or a repetition penalty
// where the kernel set has no penalty kernels. With them, a draw with only
// a repetition penalty has its row copied into f32 on the device,
// penalized there, and drawn from like any other.
std::vector<int64_t> GpuExecutor::runSampled(const TensorMap& inputs, const std::string& name,
                                              std::span<const RowDraw> draws) const {
  const Impl& m = *impl_;
  Tensor staged;
  std::map<std::string, Tensor> outs = m.execute(inputs, staged);
  const DeviceRows d = deviceRows(outs, name, m.g, m.dt, m.dtName);
  checkDraws(draws, d.rows);
  std::vector<Impl::Pick> plain, penalized;
  std::vector<const RowDraw*> copies;
  std::vector<size_t> plainAt, penalizedAt;
  const bool onDevice = m.penaltyOnDevice();
  for (size_t i = 0; i < draws.size(); ++i) {
    const RowDraw& r = draws[i];
    // The device kernel applies the repetition penalty alone; presence and
    // frequency penalties take the host's way (the whole row comes down).
    const SamplingParams& p = r.sampler->params();
    if (onDevice && p.repetitionPenalty != 1.0f && p.presencePenalty == 0.0f && p.frequencyPenalty == 0.0f &&
        !r.history.empty()) {
      penalized.push_back({(int64_t)copies.size(), &r, true}), penalizedAt.push_back(i), copies.push_back(&r);
    } else {
      plain.push_back({r.row, &r, false}), plainAt.push_back(i);
    }
  }
  std::vector<int64_t> next(draws.size(), -1);
  const std::vector<int64_t> a = m.pickTokens(*d.t, d.rows, d.vocab, plain);
  for (size_t j = 0; j < a.size(); ++j) next[plainAt[j]] = a[j];
  if (!copies.empty()) {
    const Tensor rows = m.penalizedRows(*d.t, d.vocab, copies);
    const std::vector<int64_t> b = m.pickTokens(rows, (int64_t)copies.size(), d.vocab, penalized);
    for (size_t j = 0; j < b.size(); ++j) next[penalizedAt[j]] = b[j];
  }
  // Log-probabilities come from the raw row (before any penalty), which
  // comes down whole, once however many draws share it (forked samples):
  // a full softmax needs every logit.
  std::map<int64_t, std::vector<float>> raw;
  for (size_t i = 0; i < draws.size(); ++i) {
    if (!draws[i].logprobs) continue;
    auto [it, fresh] = raw.try_emplace(draws[i].row);
    if (fresh) it->second = m.hostRow(*d.t, draws[i].row, d.vocab);
    *draws[i].logprobs = tokenLogprobs(it->second, next[i], draws[i].topLogprobs);
  }
  return next;
}

std::vector<float> GpuExecutor::Impl::hostRow(const Tensor& d, int64_t row, int64_t vocab) const {
  Tensor stored(d.dtype(), {vocab});
  download(stored.mut<uint8_t>(), static_cast<const uint8_t*>(d.raw()) + row * stored.nbytes(), stored.nbytes());
  const Tensor f = stored.toF32();
  return std::vector<float>(f.data<float>(), f.data<float>() + vocab);
}

std::vector<int64_t> GpuExecutor::Impl::pickTokens(const Tensor& d, int64_t rows, int64_t vocab,
                                                    std::span<const Pick> picks) const {
  if (picks.empty()) return {};
  const std::string type = ops::dtypeName(d.dtype());
  enum Way { Greedy, Head, Whole };
  std::vector<Way> way(picks.size(), Whole);
  std::vector<float> temperature(rows, 0.f);
  bool anyGreedy = false, anyHead = false;
  for (size_t i = 0; i < picks.size(); ++i) {
    const Pick& r = picks[i];
    const SamplingParams& p = r.draw->sampler->params();
    const bool unpenalized = r.penalized || !p.penalized();
    if (p.greedy && unpenalized) {
      way[i] = Greedy, anyGreedy = true;
    } else if (!p.greedy && unpenalized && (temperature[r.row] == 0.f || temperature[r.row] == p.temperature)) {
      temperature[r.row] = p.temperature;
      way[i] = Head, anyHead = true;
    }
  }
  std::vector<int64_t> greedy = anyGreedy ? greedyRows(d, rows, vocab) : std::vector<int64_t>{};
  // Candidates: value, index [rows, splits * C], mass [rows, splits].
  std::vector<float> cand;
  int64_t splits = 0, C = 0;
  if (anyHead) {
    const auto& kern = findKernel(k.topks(), [&](const auto& t) { return t.dtype == type; }, type + " top-k");
    splits = kern.splits(vocab), C = kern.candidates;
    std::vector<float> scale(rows, 1.f);
    for (int64_t r = 0; r < rows; ++r)
      if (temperature[r] > 0.f) scale[r] = float(1.4426950408889634 / temperature[r]);
    Tensor part = pool.tensor(ops::DType::F32, {rows * (2 * splits * C + splits + 1)});
    float* p = static_cast<float*>(mut(part));
    float *value = p, *index = value + rows * splits * C, *mass = index + rows * splits * C, *sc = mass + rows * splits;
    dev.upload(sc, scale.data(), rows * sizeof(float));
    k.launch(kern, d.raw(), value, index, mass, sc, rows, vocab);
    cand.resize(rows * (2 * splits * C + splits));
    download(cand.data(), part.raw(), cand.size() * sizeof(float));
  }
  // Heads first: top-k's k entries (or 256), then all the candidates; a
  // draw neither settles takes the whole row below (same uniform).
  // Serial: merging a row's 8k candidates is tens of microseconds, less
  // than starting threads (H100, 2026-11-22: batch 32 top-k 50 took 10.96
  // ms/step serial, 11.53 on 16 threads).
  std::vector<int64_t> next(picks.size(), -1);
  std::vector<double> uniform(picks.size(), 0.0);
  for (size_t i = 0; i < picks.size(); ++i) {
    const Pick& r = picks[i];
    if (way[i] == Greedy) next[i] = greedy[r.row];
    if (way[i] != Head) continue;
    const SamplingParams& p = r.draw->sampler->params();
    const double u = uniform[i] = r.draw->sampler->draw();
    const int64_t at = r.row * splits * C;
    auto head = [&](size_t count) {
      return headFromSplits(cand.data() + at, cand.data() + rows * splits * C + at,
                            cand.data() + 2 * rows * splits * C + r.row * splits, splits, C, vocab,
                            p.temperature, count);
    };
    std::optional<int64_t> t = pickFromHead(head(headSize(p)), p, u);
    if (!t && headSize(p) < size_t(splits * C)) t = pickFromHead(head(SIZE_MAX), p, u);
    if (t) next[i] = *t;
  }
  // Whole rows: each comes down once (widened to f32), then the draws on
  // them run in parallel (a 128k row's sort is milliseconds).
  std::map<int64_t, std::vector<float>> whole;
  std::vector<size_t> rest;
  for (size_t i = 0; i < picks.size(); ++i) {
    if (next[i] >= 0) continue;
    rest.push_back(i);
    auto [it, fresh] = whole.try_emplace(picks[i].row);
    if (fresh) it->second = hostRow(d, picks[i].row, vocab);
  }
  rowsDownloaded += (int64_t)whole.size();
  parallelRanges((int64_t)rest.size(), [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const size_t i = rest[j];
      const Pick& r = picks[i];
      const std::vector<float>& row = whole.at(r.row);
      if (way[i] == Head) {
        const SamplingParams& p = r.draw->sampler->params();
        next[i] = *pickFromHead(headOf(row, p.temperature, row.size()), p, uniform[i]);
      } else {
        // A penalized copy carries its penalty already.
        next[i] = r.draw->sampler->sample(row, r.penalized ? std::span<const int64_t>{} : r.draw->history,
                                          r.draw->generatedFrom);
      }
    }
  });
  return next;
}

}  // namespace strata::runtime
