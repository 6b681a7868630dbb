#include "runtime/server/http_server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <mutex>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "ops/error.h"

namespace strata::runtime::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
  }
  return "Error";
}

// A whole response: status line, headers, body.
std::string response(int status, const std::string& contentType, const std::string& body, bool keepAlive,
                     const std::string& extraHeaders = "") {
  return fmt::format("HTTP/1.1 {} {}\r\nServer: strata\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n{}\r\n{}",
                     status, reason(status), contentType, body.size(), keepAlive ? "keep-alive" : "close",
                     extraHeaders, body);
}

std::string chunk(const std::string& data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); }
std::string event(const ojson& j) { return chunk("data: " + j.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n\n"); }

std::string randomId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = (uint64_t)std::chrono::system_clock::now().time_since_epoch().count();
  uint64_t x = salt ^ (++counter * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return fmt::format("{}-{:016x}{:08x}", prefix, x, (uint32_t)counter.load());
}

}  // namespace

struct Shared {
  ServerOptions opts;
  Engine& engine;
  const ServedText& text;
  ServeLimits limits;
  Metrics& metrics;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> connections{0}, activeRuns{0};
};

class Session;

// One API request in flight: its jobs (one per prompt), the choices'
// results, and the stream when it streams. Lives on its session's strand;
// the engine's events are posted there.
struct Run : std::enable_shared_from_this<Run> {
  std::weak_ptr<Session> session;
  ParsedRequest req;
  ResponseIds ids;
  std::vector<int64_t> jobIds;
  std::vector<ChoiceResult> choices;
  int64_t promptTokens = 0, completionTokens = 0;
  int64_t jobsLeft = 0;
  bool finished = false;
};

class RunSink : public JobSink {
 public:
  RunSink(std::shared_ptr<Run> run, int64_t prompt, net::any_io_executor strand)
      : run_(std::move(run)), prompt_(prompt), strand_(std::move(strand)) {}
  void onDelta(int64_t index, const std::string& text, const std::vector<TokenInfo>& tokens) override;
  void onSampleEnd(int64_t index, const SampleEnd& end) override;
  void onJobEnd(const std::string& error) override;

 private:
  std::shared_ptr<Run> run_;
  int64_t prompt_;
  net::any_io_executor strand_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // The socket's executor is the connection's strand (accepted on one).
  Session(tcp::socket socket, Shared& sh) : stream_(std::move(socket)), strand_(stream_.get_executor()), sh_(sh) {
    ++sh_.connections;
  }
  ~Session() { --sh_.connections; }
  net::any_io_executor executor() const { return strand_; }

  void start(bool refuse) {
    if (refuse) {
      keepAlive_ = false;
      sendError(ApiError(503, "too many connections", "server_error", "", "too_many_connections"), "Retry-After: 1\r\n");
      return;
    }
    read();
  }

  // Engine events, on the strand.
  void delta(Run& run, int64_t choice, const std::string& text, const std::vector<TokenInfo>& tokens) {
    if (run.finished) return;
    ChoiceResult& c = run.choices[choice];
    c.tokens.insert(c.tokens.end(), tokens.begin(), tokens.end());
    run.completionTokens += (int64_t)tokens.size();
    if (!run.req.stream) {
      c.text += text;
      return;
    }
    if (text.empty() && (tokens.empty() || run.req.topLogprobs < 0)) return;
    send(event(streamChunk(run.ids, run.req.chat, choice, nullptr, text, tokens, nullptr, run.req.topLogprobs,
                           run.req.includeUsage, sh_.text)));
  }
  void sampleEnd(Run& run, int64_t choice, const SampleEnd& end) {
    if (run.finished) return;
    run.choices[choice].finishReason = finishReasonText(end.reason);
    if (run.req.stream)
      send(event(streamChunk(run.ids, run.req.chat, choice, nullptr, "", {}, finishReasonText(end.reason), -1,
                             run.req.includeUsage, sh_.text)));
  }
  void jobEnd(Run& run, const std::string& error) {
    if (run.finished) return;
    if (!error.empty()) {
      // A job refused by the scheduler (too long for the cache or context):
      // the request fails, its other jobs are cancelled.
      for (int64_t id : run.jobIds) sh_.engine.cancel(id);
      ApiError e(400, error, "invalid_request_error", run.req.chat ? "messages" : "prompt");
      if (run.req.stream) {
        send(event(e.body()));
        endRun(run);
        finishSimple();
      } else {
        endRun(run);
        sendError(e);
      }
      return;
    }
    if (--run.jobsLeft > 0) return;
    if (run.req.stream) {
      if (run.req.includeUsage) send(event(usageChunk(run.ids, run.req.chat, run.promptTokens, run.completionTokens)));
      endRun(run);
    } else {
      ojson body = completionResponse(run.ids, run.req.chat, run.choices, run.promptTokens, run.completionTokens,
                                      run.req.topLogprobs, sh_.text);
      endRun(run);
      send(response(200, "application/json", body.dump(-1, ' ', false, ojson::error_handler_t::replace), keepAlive()));
    }
    finishSimple();
  }

 private:
  bool keepAlive() const { return keepAlive_ && !sh_.stopping; }

  // The run is over (the caller then finishes the response).
  void endRun(Run& run) {
    run.finished = true;
    if (run.req.stream) {
      send(chunk("data: [DONE]\n\n"));
      send("0\r\n\r\n");
    }
    if (run_.get() == &run) {
      run_.reset();
      --sh_.activeRuns;
    }
  }

  void read() {
    parser_.emplace();
    parser_->body_limit((uint64_t)sh_.opts.maxBodyBytes);
    parser_->header_limit(64 * 1024);
    responseDone_ = false;
    stream_.expires_after(std::chrono::seconds(sh_.opts.idleTimeoutSeconds));
    http::async_read(stream_, buf_, *parser_, beast::bind_front_handler(&Session::onRead, shared_from_this()));
  }

  void onRead(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return close();
    keepAlive_ = false;
    if (ec == http::error::body_limit) {
      sh_.metrics.request(Outcome::Error);
      return sendError(ApiError(413,
                                fmt::format("the request body is over this server's limit of {} bytes (--max-body-bytes)",
                                            sh_.opts.maxBodyBytes),
                                "invalid_request_error", "", "request_too_large"));
    }
    if (ec == http::error::header_limit) {
      sh_.metrics.request(Outcome::Error);
      return sendError(ApiError(431, "the request's headers are over 64 KiB"));
    }
    if (ec) {
      sh_.metrics.request(Outcome::Error);
      return sendError(ApiError(400, fmt::format("malformed HTTP request: {}", ec.message())));
    }
    http::request<http::string_body> req = parser_->release();
    keepAlive_ = req.keep_alive();
    stream_.expires_never();
    try {
      handle(req);
    } catch (const ApiError& e) {
      sh_.metrics.request(e.status == 503 ? Outcome::Refused : Outcome::Error);
      sendError(e);
    } catch (const std::exception& e) {
      sh_.metrics.request(Outcome::Error);
      sendError(ApiError(500, fmt::format("internal error: {}", e.what()), "server_error"));
    }
  }

  void handle(http::request<http::string_body>& req) {
    std::string target(req.target());
    if (size_t q = target.find('?'); q != std::string::npos) target.resize(q);
    const bool post = req.method() == http::verb::post, get = req.method() == http::verb::get;
    auto only = [&](bool ok, const char* allow) {
      if (!ok) {
        throw ApiError(405, fmt::format("{} takes {} only", target, allow), "invalid_request_error", "", "method_not_allowed");
      }
    };
    if (target == "/health") {
      only(get, "GET");
      send(response(200, "application/json", "{\"status\":\"ok\"}", keepAlive()));
      return finishSimple();
    }
    if (target == "/metrics") {
      only(get, "GET");
      send(response(200, "text/plain; version=0.0.4; charset=utf-8", sh_.metrics.text(), keepAlive()));
      return finishSimple();
    }
    const bool api = target.rfind("/v1/", 0) == 0;
    if (api && !sh_.opts.apiKey.empty()) {
      auto auth = req.find(http::field::authorization);
      if (auth == req.end() || std::string(auth->value()) != "Bearer " + sh_.opts.apiKey)
        throw ApiError(401, "a valid API key is needed: Authorization: Bearer KEY", "invalid_request_error", "",
                       "invalid_api_key");
    }
    if (target == "/v1/models") {
      only(get, "GET");
      ojson model = {{"id", sh_.limits.modelName}, {"object", "model"}, {"created", created()}, {"owned_by", "strata"}};
      if (sh_.limits.maxContext > 0) model["max_model_len"] = sh_.limits.maxContext;
      if (sh_.limits.vocabSize > 0) model["vocab_size"] = sh_.limits.vocabSize;  // for token-id prompts (strata bench serve)
      ojson body = {{"object", "list"}, {"data", ojson::array({model})}};
      send(response(200, "application/json", body.dump(), keepAlive()));
      sh_.metrics.request(Outcome::Ok);
      return finishSimple();
    }
    if (target == "/v1/completions" || target == "/v1/chat/completions") {
      only(post, "POST");
      return startRun(req.body(), target == "/v1/chat/completions");
    }
    throw ApiError(404, fmt::format("no route {} {}", std::string(req.method_string()), target), "invalid_request_error",
                   "", "not_found");
  }

  static int64_t created() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  void startRun(const std::string& body, bool chat) {
    if (sh_.stopping)
      throw ApiError(503, "the server is shutting down", "server_error", "", "shutting_down");
    auto run = std::make_shared<Run>();
    run->session = weak_from_this();
    run->req = parseRequest(body, chat, sh_.limits, sh_.text);
    run->ids = {randomId(chat ? "chatcmpl" : "cmpl"), sh_.limits.modelName, created()};
    const int64_t n = run->req.jobs.front().n;
    run->choices.resize(run->req.jobs.size() * n);
    run->jobsLeft = (int64_t)run->req.jobs.size();
    for (const Job& j : run->req.jobs) run->promptTokens += (int64_t)j.promptIds.size();
    for (size_t p = 0; p < run->req.jobs.size(); ++p) {
      int64_t id = sh_.engine.submit(run->req.jobs[p], std::make_shared<RunSink>(run, (int64_t)p, strand_));
      if (id < 0) {
        for (int64_t submitted : run->jobIds) sh_.engine.cancel(submitted);
        throw ApiError(503, sh_.stopping ? "the server is shutting down" : "the server's queue is full (--max-queue); retry later",
                       "server_error", "", "queue_full");
      }
      run->jobIds.push_back(id);
    }
    run_ = run;
    ++sh_.activeRuns;
    if (run->req.stream) {
      send("HTTP/1.1 200 OK\r\nServer: strata\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
           "Transfer-Encoding: chunked\r\nConnection: " +
           std::string(keepAlive() ? "keep-alive" : "close") + "\r\n\r\n");
      if (chat) {
        static const std::string role = "assistant";
        for (int64_t c = 0; c < (int64_t)run->choices.size(); ++c)
          send(event(streamChunk(run->ids, true, c, &role, "", {}, nullptr, -1, run->req.includeUsage, sh_.text)));
      }
    }
    watchForClose();
  }

  // While a request runs, a socket whose peek reads end-of-stream is a
  // client that went away: cancel at the next step. (A readiness wakeup
  // alone proves nothing: the reactor reports stale readiness, so the
  // socket is asked.)
  void watchForClose() {
    // The wait outlives its run when the run ends first: it checks it is
    // still watching the same one (a later request may be running).
    std::weak_ptr<Run> watched = run_;
    stream_.socket().async_wait(tcp::socket::wait_read, net::bind_executor(strand_, [self = shared_from_this(), watched](beast::error_code ec) {
      if (!self->run_ || self->run_ != watched.lock() || ec == net::error::operation_aborted) return;
      if (ec) return self->abandon(ec.message());
      char c;
      ssize_t n = ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0) return self->abandon("closed");
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return self->abandon(std::strerror(errno));
      if (n < 0) self->watchForClose();  // nothing to read after all: wait again
      // n > 0: the next request, pipelined: the connection is alive.
    }));
  }

  // The client is gone: cancel its jobs, drop the connection.
  void abandon(const std::string& why) {
    if (run_) {
      std::fprintf(stderr, "strata serve: %s: the client went away (%s); cancelled\n", run_->ids.id.c_str(), why.c_str());
      for (int64_t id : run_->jobIds) sh_.engine.cancel(id);
      run_->finished = true;
      run_.reset();
      --sh_.activeRuns;
    }
    close();
  }

  void finishSimple() {
    responseDone_ = true;
    flushOrNext();
  }

  void sendError(const ApiError& e, const std::string& extraHeaders = "") {
    std::string headers = extraHeaders;
    if (e.status == 503 && headers.empty()) headers = "Retry-After: 1\r\n";
    if (e.status == 401) headers += "WWW-Authenticate: Bearer\r\n";
    send(response(e.status, "application/json", e.body().dump(-1, ' ', false, ojson::error_handler_t::replace),
                  keepAlive(), headers));
    finishSimple();
  }

  void send(std::string bytes) {
    if (closed_) return;
    out_.push_back(std::move(bytes));
    if (!writing_) writeNext();
  }

  void writeNext() {
    if (out_.empty()) {
      writing_ = false;
      return flushOrNext();
    }
    writing_ = true;
    stream_.expires_after(std::chrono::seconds(sh_.opts.writeTimeoutSeconds));
    net::async_write(stream_, net::buffer(out_.front()), beast::bind_front_handler(&Session::onWrite, shared_from_this()));
  }

  void onWrite(beast::error_code ec, size_t) {
    if (ec) return abandon(ec.message());
    out_.pop_front();
    if (out_.empty()) stream_.expires_never();  // the timeout is for a write in progress
    writeNext();
  }

  // After a response is written in full: the next request, or close.
  void flushOrNext() {
    if (writing_ || !out_.empty() || !responseDone_ || closed_) return;
    if (run_) return;  // still streaming
    responseDone_ = false;
    if (keepAlive()) read();
    else close();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (run_) {
      for (int64_t id : run_->jobIds) sh_.engine.cancel(id);
      run_->finished = true;
      run_.reset();
      --sh_.activeRuns;
    }
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  net::any_io_executor strand_;
  Shared& sh_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> out_;
  std::shared_ptr<Run> run_;
  bool writing_ = false, keepAlive_ = true, responseDone_ = false, closed_ = false;
};

void RunSink::onDelta(int64_t index, const std::string& text, const std::vector<TokenInfo>& tokens) {
  net::post(strand_, [run = run_, c = prompt_ * run_->req.jobs.front().n + index, text, tokens] {
    if (auto s = run->session.lock()) s->delta(*run, c, text, tokens);
  });
}
void RunSink::onSampleEnd(int64_t index, const SampleEnd& end) {
  net::post(strand_, [run = run_, c = prompt_ * run_->req.jobs.front().n + index, end] {
    if (auto s = run->session.lock()) s->sampleEnd(*run, c, end);
  });
}
void RunSink::onJobEnd(const std::string& error) {
  net::post(strand_, [run = run_, error] {
    if (auto s = run->session.lock()) s->jobEnd(*run, error);
  });
}

struct HttpServer::Impl {
  Shared sh;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  Impl(ServerOptions o, Engine& e, const ServedText& t, ServeLimits l, Metrics& m) : sh{std::move(o), e, t, std::move(l), m} {}

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (acceptor.is_open()) accept();
        return;
      }
      bool refuse = sh.connections >= sh.opts.maxConnections;
      auto session = std::make_shared<Session>(std::move(socket), sh);
      net::dispatch(session->executor(), [session, refuse] { session->start(refuse); });
      accept();
    });
  }
};

HttpServer::HttpServer(ServerOptions options, Engine& engine, const ServedText& text, ServeLimits limits, Metrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), engine, text, std::move(limits), metrics)) {}
HttpServer::~HttpServer() = default;

void HttpServer::run(const std::function<void(const std::string&)>& onListening) {
  Impl& m = *impl_;
  // Thousands of connections need as many descriptors as the hard limit allows.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  beast::error_code ec;
  auto addr = net::ip::make_address(m.sh.opts.host, ec);
  if (ec) fail("--host {}: not an IP address ({})", m.sh.opts.host, ec.message());
  tcp::endpoint ep(addr, (unsigned short)m.sh.opts.port);
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on {}:{}: {}", m.sh.opts.host, m.sh.opts.port, ec.message());
  const int port = m.acceptor.local_endpoint().port();

  net::signal_set signals(m.ioc, SIGINT, SIGTERM);
  std::thread drainer;
  std::function<void(beast::error_code, int)> onSignal = [&](beast::error_code sec, int) {
    if (sec) return;
    if (!m.sh.stopping.exchange(true)) {
      // Stop accepting; let running requests finish, then stop the I/O.
      beast::error_code ignored;
      m.acceptor.close(ignored);
      drainer = std::thread([&] {
        m.sh.engine.drain();
        for (int i = 0; i < 100 && m.sh.activeRuns > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        m.ioc.stop();
      });
      signals.async_wait(onSignal);
    } else {
      m.sh.engine.abort();  // a second signal: stop now
      m.ioc.stop();
    }
  };
  signals.async_wait(onSignal);
  m.accept();
  onListening(fmt::format("http://{}:{}", m.sh.opts.host, port));

  std::vector<std::thread> io;
  for (int i = 1; i < std::max(1, m.sh.opts.threads); ++i) io.emplace_back([&] { m.ioc.run(); });
  m.ioc.run();
  for (auto& t : io) t.join();
  if (drainer.joinable()) drainer.join();
}

}  // namespace strata::runtime::server
