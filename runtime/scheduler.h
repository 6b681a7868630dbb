// Continuous batching over the paged model (DESIGN.md step 8): requests join
// and leave between steps; one step runs the decode token of every running
// sequence and prefill chunks of new (or preempted) ones together, within a
// token budget. When the KV cache cannot hold the next step, the most
// recently admitted sequence is preempted: its blocks are freed and it waits
// at the front of the queue to be recomputed (prompt + what it generated so
// far), keeping its sampler state, so its output does not change.
//
// Parallel sampling (addSamples): the prompt is prefilled once, then forked
// into n sequences that share its cache blocks (copy-on-write), each with
// its own sampler seed.
#pragma once
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/paged_generate.h"

namespace strata::runtime {

enum class FinishReason { Eos, Length, Stop, Context };
const char* finishReasonName(FinishReason r);

struct SchedulerOptions {
  int64_t blockSize = 16;
  int64_t numBlocks = 0;          // KV cache blocks (> 0)
  int64_t maxStepTokens = 512;    // tokens per step over all sequences (prefill chunks + decodes)
  int64_t maxSeqs = 64;           // sequences per step
  int64_t maxContext = 0;         // positions a sequence may reach (0 = unbounded)
  bool prefixCache = false;       // reuse cached KV blocks of earlier prompts (runtime/paged_cache.h)
  void validate() const;
};

struct SchedulerStats {
  int64_t steps = 0, preemptions = 0, promptTokens = 0, generatedTokens = 0, recomputedTokens = 0;
  int64_t forks = 0, copiedBlocks = 0;  // forked sequences; shared blocks copied on write
  int64_t prefixHitTokens = 0;          // prompt tokens found in the prefix cache (not computed)
};

class Scheduler {
 public:
  struct Events {
    // A sampled token of request `id` (in order), with its log-probabilities
    // when the request asked for them (else null).
    std::function<void(int64_t id, int64_t token, const TokenLogprobs* logprobs)> onToken;
    // Request `id` is done; `ids` = prompt + generated.
    std::function<void(int64_t id, const std::vector<int64_t>& ids, FinishReason why)> onFinish;
  };
  // Asked after each token of request `id` (after its onToken) with the
  // ids it generated; true ends it (FinishReason::Stop): stop strings.
  using StopFn = std::function<bool(int64_t id, const std::vector<int64_t>& generated)>;
  Scheduler(const GraphRunner& exec, SchedulerOptions options, Events events);
  ~Scheduler();

  // Queues a request (it joins at the next step) and returns its id. `stop`,
  // when given, is asked after each token (StopFn). Throws on an
  // empty prompt, bad sampling parameters, or a prompt that can never fit
  // the cache or the context.
  int64_t add(const GenerateRequest& req, StopFn stop = {});
  // `n` samples of one prompt: ids of n requests, sample k seeded with
  // req.sampling.seed + k (sample k's tokens equal those of `req` alone with
  // that seed). The prompt is computed once and its blocks shared.
  std::vector<int64_t> addSamples(const GenerateRequest& req, int64_t n, StopFn stop = {});
  // Ends request `id` now, whatever its state (a client went away): its
  // cache blocks return at once and no event fires for it. Samples of its
  // prompt that have not forked yet end with it. Unknown ids are ignored.
  void cancel(int64_t id);
  // Runs one step; false when nothing is waiting or running.
  bool step();
  // Steps until every request has finished.
  void runToCompletion();
  bool idle() const;
  SchedulerStats stats() const;
  // Sequences in the cache, and those waiting for it (new, preempted, or
  // samples waiting for their prompt).
  int64_t runningCount() const { return (int64_t)running_.size(); }
  int64_t waitingCount() const;
  const PagedKvCache& cache() const { return cache_; }

 private:
  struct Seq;
  void preempt(Seq& s);
  void finish(Seq& s, FinishReason why);
  // Appends s's sampled token `next` and finishes s if it is done (or
  // finishes it without a token when it asked for none).
  void advance(Seq& s, int64_t next, const TokenLogprobs* logprobs);

  const GraphRunner& exec_;
  SchedulerOptions opts_;
  Events events_;
  PagedKvCache cache_;
  PagedModel model_;
  std::map<int64_t, std::unique_ptr<Seq>> seqs_;
  std::deque<int64_t> waiting_;   // not in the cache (new or preempted), front first
  std::vector<int64_t> running_;  // in the cache, in admission order (the last is preempted first)
  int64_t nextId_ = 0;
  SchedulerStats stats_;
};

}  // namespace strata::runtime
