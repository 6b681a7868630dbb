// The server's metrics in Prometheus text format (GET /metrics), kept by
// prometheus-cpp (Debian's prometheus-cpp-dev): counters, gauges and
// histograms with the registry's thread safety and the text exposition
// format's escaping, rather than strings built by hand. Names follow
// vLLM's where one exists (strata: prefix).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace strata::runtime::server {

enum class Outcome { Ok, Error, Cancelled, Refused };

class Metrics {
 public:
  Metrics();
  ~Metrics();
  // A request answered: ok (completed), error (bad request or a failed
  // run), cancelled (client went away), refused (queue full, shutting down,
  // unauthorized).
  void request(Outcome o);
  void queue(int64_t waitingJobs);
  void sequences(int64_t running, int64_t waiting);
  // Blocks sequences hold, blocks kept for the prefix cache only (evictable), all.
  void kvBlocks(int64_t used, int64_t cached, int64_t total);
  void prefixCacheHits(int64_t totalTokens);
  void preemptions(int64_t total);
  void promptTokens(int64_t n);
  void generationTokens(int64_t n);
  void timeToFirstToken(double seconds);
  void interTokenLatency(double seconds);
  void requestLatency(double seconds);
  std::string text() const;  // the exposition

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime::server
