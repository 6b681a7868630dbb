#include "runtime/scheduler.h"

#include <algorithm>

#include <climits>

namespace strata::runtime {

const char* finishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::Eos: return "eos";
    case FinishReason::Length: return "length";
    case FinishReason::Stop: return "stop";
    case FinishReason::Context: return "context";
  }
  return "?";
}

void SchedulerOptions::validate() const {
  if (blockSize <= 0) fail("--block-size must be >= 1, got {}", blockSize);
  if (numBlocks <= 0) fail("the KV cache needs at least one block, got {}", numBlocks);
  if (maxStepTokens <= 0) fail("--max-step-tokens must be >= 1, got {}", maxStepTokens);
  if (maxSeqs <= 0) fail("--max-seqs must be >= 1, got {}", maxSeqs);
  if (maxContext < 0) fail("the context limit must be >= 0, got {}", maxContext);
}

struct Scheduler::Seq {
  int64_t id;
  GenerateRequest req;
  StopFn stop;
  Sampler sampler;
  std::vector<int64_t> ids;  // prompt + generated
  int64_t cached = 0;        // leading ids whose K/V are in the cache
  int64_t generated = 0;
  std::vector<int64_t> forks;  // samples waiting for this prompt to be computed
};

Scheduler::Scheduler(const GraphRunner& exec, SchedulerOptions options, Events events)
    : exec_(exec),
      opts_((options.validate(), options)),
      events_(std::move(events)),
      cache_(kvCacheShapeFor(exec, opts_.blockSize, opts_.numBlocks), exec.cacheDevice()),
      model_(exec, cache_) {
  if (opts_.prefixCache) cache_.enablePrefixCache();
}

Scheduler::~Scheduler() = default;

int64_t Scheduler::add(const GenerateRequest& req, StopFn stop) {
  if (req.promptIds.empty()) fail("request: the prompt is empty");
  if (req.maxNewTokens < 0) fail("request: max new tokens must be >= 0, got {}", req.maxNewTokens);
  req.sampling.validate();
  if (req.logprobs && (*req.logprobs < 0 || *req.logprobs > kMaxTopLogprobs))
    fail("request: top log-probabilities must be in 0..{}, got {}", kMaxTopLogprobs, *req.logprobs);
  int64_t len = (int64_t)req.promptIds.size();
  if (opts_.maxContext > 0 && len >= opts_.maxContext)
    fail("the prompt has {} tokens; the model's context is {}", len, opts_.maxContext);
  // The whole sequence must fit the cache on its own, or it could never finish.
  int64_t total = len + req.maxNewTokens;
  if (opts_.maxContext > 0) total = std::min(total, opts_.maxContext);
  if ((total + opts_.blockSize - 1) / opts_.blockSize > opts_.numBlocks)
    fail("the KV cache ({} blocks of {} tokens) is too small for {} tokens of one sequence; give more blocks",
         opts_.numBlocks, opts_.blockSize, total);
  auto s = std::make_unique<Seq>(Seq{nextId_++, req, std::move(stop), Sampler(req.sampling), req.promptIds});
  int64_t id = s->id;
  stats_.promptTokens += len;
  seqs_[id] = std::move(s);
  waiting_.push_back(id);
  return id;
}

std::vector<int64_t> Scheduler::addSamples(const GenerateRequest& req, int64_t n, StopFn stop) {
  if (n < 1) fail("the number of samples must be >= 1, got {}", n);
  std::vector<int64_t> ids{add(req, stop)};
  Seq& parent = *seqs_.at(ids[0]);
  for (int64_t k = 1; k < n; ++k) {
    GenerateRequest r = req;
    r.sampling.seed = req.sampling.seed + (uint64_t)k;
    auto s = std::make_unique<Seq>(Seq{nextId_++, r, stop, Sampler(r.sampling), r.promptIds});
    parent.forks.push_back(s->id);
    ids.push_back(s->id);
    seqs_[s->id] = std::move(s);
  }
  return ids;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = stats_;
  s.copiedBlocks = cache_.copiedBlocks();
  s.prefixHitTokens = cache_.prefixHitTokens();
  return s;
}

bool Scheduler::idle() const { return waiting_.empty() && running_.empty(); }

void Scheduler::preempt(Seq& s) {
  cache_.free(s.id);
  stats_.recomputedTokens += s.cached;
  s.cached = 0;
  running_.erase(std::find(running_.begin(), running_.end(), s.id));
  waiting_.push_front(s.id);
  ++stats_.preemptions;
}

void Scheduler::finish(Seq& s, FinishReason why) {
  if (cache_.has(s.id)) cache_.free(s.id);
  running_.erase(std::remove(running_.begin(), running_.end(), s.id), running_.end());
  if (events_.onFinish) events_.onFinish(s.id, s.ids, why);
  seqs_.erase(s.id);
}

bool Scheduler::step() {
  if (idle()) return false;
  struct Planned {
    Seq* seq;
    int64_t count;  // ids [cached, cached + count) go in this step
  };
  std::vector<Planned> plan;
  int64_t budget = opts_.maxStepTokens;

  // Running sequences first (oldest first): each continues with what it has
  // not cached yet (one token when decoding, a chunk when prefilling). When
  // the cache is full, the newest running sequence is preempted.
  for (size_t i = 0; i < running_.size() && budget > 0 && (int64_t)plan.size() < opts_.maxSeqs;) {
    Seq& s = *seqs_.at(running_[i]);
    int64_t count = std::min<int64_t>((int64_t)s.ids.size() - s.cached, budget);
    if (cache_.reserve(s.id, s.cached + count)) {
      plan.push_back({&s, count});
      budget -= count;
      ++i;
      continue;
    }
    // running_ is in admission order: the victim comes at or after i, so it
    // is not in the plan yet.
    Seq& victim = *seqs_.at(running_.back());
    bool self = &victim == &s;
    preempt(victim);
    if (self) break;
  }
  // Then waiting sequences, front first, while the budget and cache allow.
  // A sequence starts with the cached blocks of its longest cached prefix.
  while (!waiting_.empty() && budget > 0 && (int64_t)plan.size() < opts_.maxSeqs) {
    Seq& s = *seqs_.at(waiting_.front());
    s.cached = cache_.reusePrefix(s.id, s.ids);
    int64_t count = std::min<int64_t>((int64_t)s.ids.size() - s.cached, budget);
    if (!cache_.reserve(s.id, s.cached + count)) {
      if (cache_.has(s.id)) cache_.free(s.id);  // the reused blocks go back (still cached)
      s.cached = 0;
      break;
    }
    waiting_.pop_front();
    running_.push_back(s.id);
    plan.push_back({&s, count});
    budget -= count;
  }
  if (plan.empty()) {
    // Nothing fits even with every other sequence preempted: add() rules this out.
    fail("scheduler: no sequence fits the KV cache ({} free blocks)", cache_.freeBlocks());
  }

  std::vector<PagedModel::SeqStep> steps;
  for (const Planned& p : plan)
    steps.push_back({p.seq->id, std::vector<int64_t>(p.seq->ids.begin() + p.seq->cached,
                                                     p.seq->ids.begin() + p.seq->cached + p.count)});
  // Who samples a token now, from which logits row: a sequence whose
  // prompt is all in the cache after this step, and the samples waiting
  // for that prompt (they share its blocks and sample their first token
  // from the same row). The runner draws where the logits are
  // (GraphRunner::runSampled: on the GPU only candidates come down).
  std::vector<std::pair<Seq*, size_t>> sampled;
  for (size_t n = 0; n < plan.size(); ++n) {
    Seq& s = *plan[n].seq;
    if (s.cached + plan[n].count < (int64_t)s.ids.size()) continue;  // a prefill chunk: no token yet
    sampled.push_back({&s, n});
    for (int64_t id : s.forks) sampled.push_back({seqs_.at(id).get(), n});
  }
  std::vector<GraphRunner::RowDraw> draws;
  std::vector<size_t> drawOf(sampled.size(), SIZE_MAX);
  std::vector<TokenLogprobs> logprobs(sampled.size());
  for (size_t i = 0; i < sampled.size(); ++i) {
    auto [s, row] = sampled[i];
    if (s->req.maxNewTokens == 0) continue;
    drawOf[i] = draws.size();
    draws.push_back({(int64_t)row, &s->sampler, s->ids, s->req.logprobs ? &logprobs[i] : nullptr,
                     s->req.logprobs.value_or(0), s->req.promptIds.size()});
  }
  std::vector<int64_t> drawn = model_.stepSampled(steps, draws);
  ++stats_.steps;

  for (const Planned& p : plan) {
    p.seq->cached += p.count;
    cache_.commitPrefix(p.seq->id, p.seq->ids);  // its full blocks, for later prompts (when on)
  }
  // Forked before the parent advances: finishing frees its blocks.
  for (const Planned& p : plan) {
    Seq& s = *p.seq;
    if (s.cached < (int64_t)s.ids.size()) continue;
    for (int64_t id : s.forks) {
      Seq& child = *seqs_.at(id);
      cache_.fork(s.id, child.id);
      child.cached = s.cached;
      running_.push_back(child.id);
      ++stats_.forks;
    }
    s.forks.clear();
  }
  std::vector<int64_t> next(sampled.size(), -1);
  for (size_t i = 0; i < sampled.size(); ++i)
    if (drawOf[i] != SIZE_MAX) next[i] = drawn[drawOf[i]];
  for (size_t i = 0; i < sampled.size(); ++i)
    advance(*sampled[i].first, next[i], sampled[i].first->req.logprobs ? &logprobs[i] : nullptr);
  return !idle();
}

void Scheduler::advance(Seq& s, int64_t next, const TokenLogprobs* logprobs) {
  if (s.req.maxNewTokens == 0) return finish(s, FinishReason::Length);
  s.ids.push_back(next);
  ++s.generated;
  ++stats_.generatedTokens;
  if (events_.onToken) events_.onToken(s.id, next, logprobs);
  std::vector<int64_t> gen(s.ids.end() - s.generated, s.ids.end());
  if (std::find(s.req.eosIds.begin(), s.req.eosIds.end(), next) != s.req.eosIds.end()) finish(s, FinishReason::Eos);
  else if (s.stop && s.stop(s.id, gen)) finish(s, FinishReason::Stop);
  else if (s.generated >= s.req.maxNewTokens) finish(s, FinishReason::Length);
  else if (opts_.maxContext > 0 && (int64_t)s.ids.size() >= opts_.maxContext) finish(s, FinishReason::Context);
}

void Scheduler::cancel(int64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  for (int64_t f : it->second->forks) seqs_.erase(f);  // not forked yet: nothing in the cache
  for (auto& [other, s] : seqs_) std::erase(s->forks, id);
  if (cache_.has(id)) cache_.free(id);
  std::erase(running_, id);
  std::erase(waiting_, id);
  seqs_.erase(id);
}

int64_t Scheduler::waitingCount() const {
  int64_t n = 0;
  for (int64_t id : waiting_) n += 1 + (int64_t)seqs_.at(id)->forks.size();
  return n;
}

void Scheduler::runToCompletion() {
  while (step()) {
  }
}

}  // namespace strata::runtime
