// The serving engine: one thread owns the model and its scheduler
// (runtime/scheduler.h) and runs steps while there is work; requests from
// any thread join between steps (continuous batching, chunked prefill) and
// leave when they finish or are cancelled (their KV blocks return at once).
//
// A job is one prompt with n samples. Its events go to a JobSink, called
// on the engine thread: text deltas as they decode (stop strings held back
// and cut, runtime/server/text_stream.h), then each sample's end, then the
// job's end. A sink must not block; the HTTP layer posts to its
// connection. Timings feed the metrics (runtime/server/metrics.h).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/graph_runner.h"
#include "runtime/scheduler.h"
#include "runtime/server/text_stream.h"

namespace strata::runtime::server {

class Metrics;

struct TokenInfo {
  int64_t id;
  TokenLogprobs logprobs;  // filled when the job asked for them
};

struct Job {
  std::vector<int64_t> promptIds;
  int64_t n = 1;
  int64_t maxTokens = 16;
  SamplingParams sampling;  // sample k uses seed + k
  std::vector<int64_t> eosIds;
  std::vector<std::string> stop;
  std::optional<int64_t> logprobs;  // alternatives per token
};

struct SampleEnd {
  FinishReason reason;
  int64_t generated = 0;
};

class JobSink {
 public:
  virtual ~JobSink() = default;
  // New text of sample `index` and the tokens it came from (tokens may
  // arrive with empty text while a character or stop string is pending).
  virtual void onDelta(int64_t index, const std::string& text, const std::vector<TokenInfo>& tokens) = 0;
  virtual void onSampleEnd(int64_t index, const SampleEnd& end) = 0;
  // The job is over: every sample ended (error empty), or it could not run
  // (error says why; nothing else was called).
  virtual void onJobEnd(const std::string& error) = 0;
};

struct EngineOptions {
  SchedulerOptions scheduler;
  int64_t maxQueue = 1024;  // jobs waiting to start; submit() refuses more
};

class Engine {
 public:
  // `decode` turns ids into text (the tokenizer's, skipping special tokens).
  Engine(const GraphRunner& runner, EngineOptions options, DecodeFn decode, Metrics* metrics = nullptr);
  ~Engine();  // stops the thread; jobs still running end without onJobEnd

  // Queues a job; returns its id, or -1 when the queue is full. The job
  // is checked on the engine thread (an error ends it via onJobEnd).
  int64_t submit(Job job, std::shared_ptr<JobSink> sink);
  // Ends a job now (its client went away); no more events.
  void cancel(int64_t jobId);
  // Stops taking jobs; returns once every running job has ended (or abort()).
  void drain();
  // Stops the engine thread after the step in progress; running jobs get
  // no more events.
  void abort();
  int64_t queued() const;

 private:
  struct Active;
  void loop();
  void start(int64_t jobId, Job job, std::shared_ptr<JobSink> sink);
  void onToken(int64_t seq, int64_t token, const TokenLogprobs* lp);
  void onFinish(int64_t seq, FinishReason why);
  void endJob(int64_t jobId, const std::string& error);
  void publishGauges();
  int64_t queuedLocked() const { return (int64_t)incoming_.size() + waitingSeqs_.load(); }

  const GraphRunner& runner_;
  EngineOptions opts_;
  DecodeFn decode_;
  Metrics* metrics_;
  std::unique_ptr<Scheduler> sched_;

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  struct Pending {
    int64_t id;
    Job job;
    std::shared_ptr<JobSink> sink;
  };
  std::deque<Pending> incoming_;
  std::vector<int64_t> cancels_;
  bool stopping_ = false, draining_ = false;
  int64_t nextJob_ = 0;
  int64_t activeJobs_ = 0;  // submitted and not ended (under mu_)
  std::atomic<int64_t> waitingSeqs_{0};  // the scheduler's, after the last step

  // Engine thread only.
  std::map<int64_t, std::unique_ptr<Active>> jobs_;
  std::map<int64_t, std::pair<int64_t, int64_t>> seqOf_;  // scheduler id -> (job, sample)
  std::thread thread_;
};

}  // namespace strata::runtime::server
