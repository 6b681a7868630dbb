#include "runtime/server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace strata::runtime::server {

using namespace prometheus;

namespace {
// Latency buckets in seconds: 1 ms .. 2 min (TTFT and end to end), and
// finer for the gap between tokens.
Histogram::BucketBoundaries latencyBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 120.0};
}
Histogram::BucketBoundaries tokenBuckets() {
  return {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5};
}
}  // namespace

struct Metrics::Impl {
  std::shared_ptr<Registry> reg = std::make_shared<Registry>();
  Family<Counter>& requests = BuildCounter().Name("strata:requests_total").Help("Requests answered, by outcome").Register(*reg);
  Counter& ok = requests.Add({{"outcome", "ok"}});
  Counter& error = requests.Add({{"outcome", "error"}});
  Counter& cancelled = requests.Add({{"outcome", "cancelled"}});
  Counter& refused = requests.Add({{"outcome", "refused"}});
  Gauge& queue = BuildGauge().Name("strata:queue_length").Help("Jobs waiting to start").Register(*reg).Add({});
  Family<Gauge>& seqs = BuildGauge().Name("strata:num_sequences").Help("Sequences by state").Register(*reg);
  Gauge& running = seqs.Add({{"state", "running"}});
  Gauge& waiting = seqs.Add({{"state", "waiting"}});
  Family<Gauge>& blocks = BuildGauge().Name("strata:kv_cache_blocks").Help("KV cache blocks by state").Register(*reg);
  Gauge& used = blocks.Add({{"state", "used"}});
  Gauge& cached = blocks.Add({{"state", "cached"}});
  Gauge& total = blocks.Add({{"state", "total"}});
  Counter& preempt = BuildCounter().Name("strata:num_preemptions_total").Help("Sequences preempted (recomputed later)").Register(*reg).Add({});
  int64_t preemptSeen = 0;
  Counter& hits = BuildCounter().Name("strata:prefix_cache_hit_tokens_total").Help("Prompt tokens found in the prefix cache").Register(*reg).Add({});
  int64_t hitsSeen = 0;
  Counter& prompt = BuildCounter().Name("strata:prompt_tokens_total").Help("Prompt tokens of requests started").Register(*reg).Add({});
  Counter& generated = BuildCounter().Name("strata:generation_tokens_total").Help("Tokens generated").Register(*reg).Add({});
  Histogram& ttft = BuildHistogram().Name("strata:time_to_first_token_seconds").Help("Arrival to first token").Register(*reg).Add({}, latencyBuckets());
  Histogram& itl = BuildHistogram().Name("strata:inter_token_latency_seconds").Help("Time between a sequence's tokens").Register(*reg).Add({}, tokenBuckets());
  Histogram& e2e = BuildHistogram().Name("strata:e2e_request_latency_seconds").Help("Arrival to the last token").Register(*reg).Add({}, latencyBuckets());
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {}
Metrics::~Metrics() = default;

void Metrics::request(Outcome o) {
  switch (o) {
    case Outcome::Ok: impl_->ok.Increment(); break;
    case Outcome::Error: impl_->error.Increment(); break;
    case Outcome::Cancelled: impl_->cancelled.Increment(); break;
    case Outcome::Refused: impl_->refused.Increment(); break;
  }
}
void Metrics::queue(int64_t n) { impl_->queue.Set((double)n); }
void Metrics::sequences(int64_t running, int64_t waiting) {
  impl_->running.Set((double)running);
  impl_->waiting.Set((double)waiting);
}
void Metrics::kvBlocks(int64_t used, int64_t cached, int64_t total) {
  impl_->used.Set((double)used);
  impl_->cached.Set((double)cached);
  impl_->total.Set((double)total);
}
void Metrics::preemptions(int64_t total) {
  // Called from the engine thread only.
  if (total > impl_->preemptSeen) impl_->preempt.Increment((double)(total - impl_->preemptSeen));
  impl_->preemptSeen = total;
}
void Metrics::prefixCacheHits(int64_t total) {
  if (total > impl_->hitsSeen) impl_->hits.Increment((double)(total - impl_->hitsSeen));
  impl_->hitsSeen = total;
}
void Metrics::promptTokens(int64_t n) { impl_->prompt.Increment((double)n); }
void Metrics::generationTokens(int64_t n) { impl_->generated.Increment((double)n); }
void Metrics::timeToFirstToken(double s) { impl_->ttft.Observe(s); }
void Metrics::interTokenLatency(double s) { impl_->itl.Observe(s); }
void Metrics::requestLatency(double s) { impl_->e2e.Observe(s); }

std::string Metrics::text() const { return TextSerializer().Serialize(impl_->reg->Collect()); }

}  // namespace strata::runtime::server
