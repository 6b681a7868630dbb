#include "runtime/server/engine.h"

#include <chrono>

#include <fmt/format.h>

#include "ops/error.h"
#include "runtime/server/metrics.h"

namespace strata::runtime::server {

using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
constexpr size_t kPromptContext = 6;  // prompt tokens a sample's text decodes after (TextStream)
}  // namespace

struct Engine::Active {
  Job job;
  std::shared_ptr<JobSink> sink;
  std::vector<int64_t> seqs;  // scheduler ids, by sample
  std::vector<std::unique_ptr<TextStream>> text;
  std::vector<Clock::time_point> lastToken;
  std::vector<char> stopHit;
  std::vector<int64_t> generated;
  int64_t remaining = 0;
  Clock::time_point arrived;
  bool firstToken = false;
};

Engine::Engine(const GraphRunner& runner, EngineOptions options, DecodeFn decode, Metrics* metrics)
    : runner_(runner), opts_(std::move(options)), decode_(std::move(decode)), metrics_(metrics) {
  Scheduler::Events ev;
  ev.onToken = [this](int64_t seq, int64_t token, const TokenLogprobs* lp) { onToken(seq, token, lp); };
  ev.onFinish = [this](int64_t seq, const std::vector<int64_t>&, FinishReason why) { onFinish(seq, why); };
  sched_ = std::make_unique<Scheduler>(runner_, opts_.scheduler, std::move(ev));
  publishGauges();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  abort();
  if (thread_.joinable()) thread_.join();
}

void Engine::abort() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  idle_.notify_all();
}

int64_t Engine::submit(Job job, std::shared_ptr<JobSink> sink) {
  std::lock_guard lk(mu_);
  if (draining_ || stopping_ || queuedLocked() >= opts_.maxQueue) return -1;
  int64_t id = nextJob_++;
  incoming_.push_back({id, std::move(job), std::move(sink)});
  ++activeJobs_;
  wake_.notify_one();
  return id;
}

int64_t Engine::queued() const {
  std::lock_guard lk(mu_);
  return queuedLocked();
}

void Engine::cancel(int64_t jobId) {
  std::lock_guard lk(mu_);
  cancels_.push_back(jobId);
  wake_.notify_one();
}

void Engine::drain() {
  std::unique_lock lk(mu_);
  draining_ = true;
  idle_.wait(lk, [&] { return activeJobs_ == 0 || stopping_; });
}

void Engine::loop() {
  runner_.cacheDevice().useOnThisThread();  // the model runs here, not on the thread that loaded it
  std::unique_lock lk(mu_);
  while (true) {
    wake_.wait(lk, [&] { return stopping_ || !incoming_.empty() || !cancels_.empty() || !sched_->idle(); });
    if (stopping_) return;
    std::deque<Pending> in;
    in.swap(incoming_);
    std::vector<int64_t> cancels;
    cancels.swap(cancels_);
    lk.unlock();

    for (Pending& p : in) start(p.id, std::move(p.job), std::move(p.sink));
    for (int64_t id : cancels) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;  // already ended
      for (int64_t seq : it->second->seqs) {
        sched_->cancel(seq);
        seqOf_.erase(seq);
      }
      jobs_.erase(it);
      if (metrics_) metrics_->request(Outcome::Cancelled);
      std::lock_guard g(mu_);
      --activeJobs_;
    }
    if (!sched_->idle()) {
      try {
        sched_->step();
      } catch (const std::exception& e) {
        // A failed step (a device error) ends every running job; the server stays up.
        std::vector<int64_t> ids;
        for (const auto& [id, a] : jobs_) ids.push_back(id);
        for (int64_t id : ids) {
          for (int64_t seq : jobs_.at(id)->seqs) sched_->cancel(seq), seqOf_.erase(seq);
          endJob(id, fmt::format("the model step failed: {}", e.what()));
        }
      }
    }
    publishGauges();
    lk.lock();
    if (activeJobs_ == 0) idle_.notify_all();
  }
}

void Engine::start(int64_t jobId, Job job, std::shared_ptr<JobSink> sink) {
  auto a = std::make_unique<Active>();
  a->arrived = Clock::now();
  a->sink = std::move(sink);
  GenerateRequest req;
  req.promptIds = job.promptIds;
  req.maxNewTokens = job.maxTokens;
  req.sampling = job.sampling;
  req.eosIds = job.eosIds;
  req.logprobs = job.logprobs;
  try {
    a->seqs = sched_->addSamples(req, job.n, [this](int64_t seq, const std::vector<int64_t>&) {
      auto it = seqOf_.find(seq);
      return it != seqOf_.end() && jobs_.at(it->second.first)->stopHit[it->second.second];
    });
  } catch (const Error& e) {
    a->job = std::move(job);
    jobs_[jobId] = std::move(a);
    endJob(jobId, e.what());
    return;
  }
  std::vector<int64_t> tail(job.promptIds.end() - std::min(job.promptIds.size(), kPromptContext), job.promptIds.end());
  for (int64_t k = 0; k < job.n; ++k) {
    seqOf_[a->seqs[k]] = {jobId, k};
    a->text.push_back(std::make_unique<TextStream>(decode_, job.stop, tail));
  }
  a->lastToken.assign(job.n, a->arrived);
  a->stopHit.assign(job.n, 0);
  a->generated.assign(job.n, 0);
  a->remaining = job.n;
  if (metrics_) metrics_->promptTokens((int64_t)job.promptIds.size());
  a->job = std::move(job);
  jobs_[jobId] = std::move(a);
}

void Engine::onToken(int64_t seq, int64_t token, const TokenLogprobs* lp) {
  auto it = seqOf_.find(seq);
  if (it == seqOf_.end()) return;
  auto [jobId, k] = it->second;
  Active& a = *jobs_.at(jobId);
  Clock::time_point now = Clock::now();
  if (metrics_) {
    if (!a.firstToken) metrics_->timeToFirstToken(seconds(now - a.arrived));
    else if (a.lastToken[k] != a.arrived) metrics_->interTokenLatency(seconds(now - a.lastToken[k]));
    metrics_->generationTokens(1);
  }
  a.firstToken = true;
  a.lastToken[k] = now;
  ++a.generated[k];
  std::string text = a.text[k]->push(token);
  if (a.text[k]->stopped()) a.stopHit[k] = 1;
  TokenInfo info{token, lp ? *lp : TokenLogprobs{}};
  a.sink->onDelta(k, text, {info});
}

void Engine::onFinish(int64_t seq, FinishReason why) {
  auto it = seqOf_.find(seq);
  if (it == seqOf_.end()) return;
  auto [jobId, k] = it->second;
  seqOf_.erase(it);
  Active& a = *jobs_.at(jobId);
  std::string rest = a.text[k]->finish();
  if (!rest.empty()) a.sink->onDelta(k, rest, {});
  a.sink->onSampleEnd(k, {why, a.generated[k]});
  if (--a.remaining == 0) endJob(jobId, "");
}

void Engine::endJob(int64_t jobId, const std::string& error) {
  auto it = jobs_.find(jobId);
  Active& a = *it->second;
  if (metrics_) {
    metrics_->request(error.empty() ? Outcome::Ok : Outcome::Error);
    if (error.empty()) metrics_->requestLatency(seconds(Clock::now() - a.arrived));
  }
  a.sink->onJobEnd(error);
  jobs_.erase(it);
  std::lock_guard g(mu_);
  --activeJobs_;
}

void Engine::publishGauges() {
  waitingSeqs_ = sched_->waitingCount();
  if (!metrics_) return;
  const PagedKvCache& c = sched_->cache();
  metrics_->kvBlocks(c.usedBlocks(), c.cachedBlocks(), c.shape().numBlocks);
  metrics_->prefixCacheHits(c.prefixHitTokens());
  metrics_->sequences(sched_->runningCount(), waitingSeqs_.load());
  metrics_->preemptions(sched_->stats().preemptions);
  metrics_->queue(queued());
}

}  // namespace strata::runtime::server
