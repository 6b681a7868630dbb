// `strata serve`'s HTTP side: an OpenAI-compatible API over Boost.Beast on
// Asio. A few I/O threads serve every connection asynchronously (a
// connection is a strand, not a thread), so thousands of concurrent streams
// cost memory for their buffers only; the model runs on the engine's own
// thread (runtime/server/engine.h).
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON, or
// server-sent events with "stream": true), GET /v1/models, GET /health,
// GET /metrics (Prometheus text). With an API key, /v1/* needs
// "Authorization: Bearer KEY". Errors come in OpenAI's shape with their
// status (400, 401, 404, 405, 413, 503 + Retry-After). A client that
// disconnects cancels its request at the next step.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/server/engine.h"
#include "runtime/server/metrics.h"
#include "runtime/server/openai.h"

namespace strata::runtime::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (the bound one is reported)
  std::string apiKey;
  int64_t maxBodyBytes = 8 << 20;
  int64_t maxConnections = 4096;
  int threads = 2;  // I/O threads
  int idleTimeoutSeconds = 60;   // a connection's wait for a request's bytes
  int writeTimeoutSeconds = 120; // a stalled reader is dropped after this
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, Engine& engine, const ServedText& text, ServeLimits limits, Metrics& metrics);
  ~HttpServer();
  // Binds (a strata::Error names host:port when it cannot), calls
  // onListening with the URL, then serves until SIGINT or SIGTERM: new
  // connections and requests are refused, running requests finish (their
  // streams end with their last event), then it returns. A second signal
  // cancels what is still running.
  void run(const std::function<void(const std::string& url)>& onListening);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime::server
