#include "tools/bench_serve.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ops/error.h"

namespace strata::tools {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

struct Url {
  std::string host, port, base;
};

Url parseUrl(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) fail("--url {}: only http:// is supported", url);
  if (size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) fail("--url {}: give host:port, e.g. http://127.0.0.1:8000", url);
  return {rest.substr(0, colon), rest.substr(colon + 1), "http://" + rest};
}

// A blocking GET of a small JSON document (the model list).
json getJson(const Url& u, const std::string& path, const std::string& apiKey) {
  net::io_context io;
  tcp::socket s(io);
  net::connect(s, tcp::resolver(io).resolve(u.host, u.port));
  std::string req = fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{}\r\n", path, u.host,
                                apiKey.empty() ? "" : "Authorization: Bearer " + apiKey + "\r\n");
  net::write(s, net::buffer(req));
  std::string data;
  boost::system::error_code ec;
  char buf[4096];
  for (size_t n; (n = s.read_some(net::buffer(buf), ec)) > 0 || !ec;) data.append(buf, n);
  size_t body = data.find("\r\n\r\n");
  if (data.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos)
    fail("GET {}{}: {}", u.base, path, data.substr(0, data.find("\r\n")));
  std::string b = data.substr(body + 4);
  if (data.find("Transfer-Encoding: chunked") != std::string::npos) {  // de-chunk
    std::string out;
    for (size_t i = 0;;) {
      size_t eol = b.find("\r\n", i);
      if (eol == std::string::npos) break;
      size_t n = std::stoul(b.substr(i, eol - i), nullptr, 16);
      if (n == 0) break;
      out += b.substr(eol + 2, n);
      i = eol + 2 + n + 2;
    }
    b = out;
  }
  return json::parse(b);
}

struct Request {
  json prompt;  // token ids or text
  int64_t promptTokens, outputTokens;
};

struct Result {
  bool ok = false;
  std::string error;
  double ttft = 0, e2e = 0;
  std::vector<double> itl;
  int64_t outputTokens = 0, promptTokens = 0;
};

// One streaming request on its own connection: times the first text chunk
// and every gap after it; token counts from the usage chunk (or the chunks).
class Call : public std::enable_shared_from_this<Call> {
 public:
  Call(net::io_context& io, const Url& u, std::string body, Result& r, std::function<void()> done)
      : sock_(io), resolver_(io), url_(u), body_(std::move(body)), r_(r), done_(std::move(done)) {}

  void start() {
    t0_ = Clock::now();
    resolver_.async_resolve(url_.host, url_.port, [self = shared_from_this()](auto ec, auto eps) {
      if (ec) return self->finish(ec.message());
      net::async_connect(self->sock_, eps, [self](auto ec2, auto) {
        if (ec2) return self->finish(ec2.message());
        net::async_write(self->sock_, net::buffer(self->body_), [self](auto ec3, size_t) {
          if (ec3) return self->finish(ec3.message());
          self->read();
        });
      });
    });
  }

 private:
  void read() {
    sock_.async_read_some(net::buffer(buf_), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (n) self->consume(std::string(self->buf_.data(), n));
      if (self->closed_) return;
      if (ec) return self->finish(ec == net::error::eof ? "" : ec.message());
      self->read();
    });
  }

  void consume(const std::string& bytes) {
    raw_ += bytes;
    if (!headerDone_) {
      size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      status_ = raw_.substr(0, raw_.find("\r\n"));
      chunked_ = raw_.substr(0, end).find("chunked") != std::string::npos;
      raw_.erase(0, end + 4);
      headerDone_ = true;
      if (status_.find(" 200 ") == std::string::npos && status_.find(" 200") != status_.size() - 4) {
        errorBody_ = true;
      }
    }
    // De-chunk what is complete, then split server-sent events.
    while (chunked_) {
      size_t eol = raw_.find("\r\n");
      if (eol == std::string::npos) return;
      size_t n = std::stoul(raw_.substr(0, eol), nullptr, 16);
      if (raw_.size() < eol + 2 + n + 2) return;
      if (n == 0) {
        raw_.clear();
        return finish("");
      }
      events_ += raw_.substr(eol + 2, n);
      raw_.erase(0, eol + 2 + n + 2);
      parseEvents();
    }
    if (!chunked_) {
      events_ += raw_;
      raw_.clear();
      parseEvents();
    }
  }

  void parseEvents() {
    size_t end;
    while ((end = events_.find("\n\n")) != std::string::npos) {
      std::string ev = events_.substr(0, end);
      events_.erase(0, end + 2);
      if (ev.rfind("data: ", 0) != 0) continue;
      std::string data = ev.substr(6);
      if (data == "[DONE]") {
        sawDone_ = true;
        continue;
      }
      json j = json::parse(data, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) {
        errorText_ = j["error"].value("message", "error");
        continue;
      }
      if (j.contains("usage") && j["usage"].is_object()) usageTokens_ = j["usage"].value("completion_tokens", (int64_t)-1);
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const json& c = j["choices"][0];
      std::string text = c.contains("text") && c["text"].is_string() ? c["text"].get<std::string>() : "";
      if (text.empty() && c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
        text = c["delta"]["content"].get<std::string>();
      if (text.empty()) continue;
      Clock::time_point now = Clock::now();
      if (chunks_ == 0) r_.ttft = msSince(t0_, now);
      else r_.itl.push_back(msSince(last_, now));
      last_ = now;
      ++chunks_;
    }
  }

  void finish(const std::string& error) {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    sock_.close(ignored);
    r_.e2e = msSince(t0_, Clock::now());
    r_.outputTokens = usageTokens_ >= 0 ? usageTokens_ : chunks_;
    if (!error.empty()) r_.error = error;
    else if (errorBody_) r_.error = status_ + " " + events_.substr(0, 200) + raw_.substr(0, 200);
    else if (!errorText_.empty()) r_.error = errorText_;
    else if (!sawDone_ || chunks_ == 0) r_.error = "the stream ended without [DONE] or text";
    r_.ok = r_.error.empty();
    done_();
  }

  tcp::socket sock_;
  tcp::resolver resolver_;
  Url url_;
  std::string body_;
  Result& r_;
  std::function<void()> done_;
  std::array<char, 16384> buf_{};
  std::string raw_, events_, status_, errorText_;
  bool headerDone_ = false, chunked_ = false, errorBody_ = false, sawDone_ = false, closed_ = false;
  int64_t chunks_ = 0, usageTokens_ = -1;
  Clock::time_point t0_, last_;
};

std::string requestBody(const Url& u, const std::string& model, const Request& q, const std::string& apiKey) {
  json body = {{"model", model},
               {"prompt", q.prompt},
               {"max_tokens", q.outputTokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"ignore_eos", true},
               {"temperature", 0}};
  std::string b = body.dump();
  return fmt::format("POST /v1/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     "{}Content-Length: {}\r\n\r\n{}",
                     u.host, apiKey.empty() ? "" : "Authorization: Bearer " + apiKey + "\r\n", b.size(), b);
}

// One load level: all requests at `concurrency` (closed loop) or arriving
// at `rate` per second (Poisson, seeded).
std::vector<Result> runLoad(const Url& u, const std::string& model, const std::vector<Request>& reqs, int64_t concurrency,
                            double rate, uint64_t seed, const std::string& apiKey, double& seconds) {
  net::io_context io;
  std::vector<Result> results(reqs.size());
  size_t next = 0, finished = 0;
  Clock::time_point start = Clock::now();
  std::function<void()> launch = [&] {
    if (next >= reqs.size()) return;
    size_t i = next++;
    std::make_shared<Call>(io, u, requestBody(u, model, reqs[i], apiKey), results[i], [&, i] {
      results[i].promptTokens = reqs[i].promptTokens;
      ++finished;
      if (rate <= 0) launch();  // closed loop: the next request takes the freed slot
    })->start();
  };
  std::vector<std::unique_ptr<net::steady_timer>> timers;
  if (rate > 0) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(rate);
    double at = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      auto t = std::make_unique<net::steady_timer>(io, start + std::chrono::microseconds((int64_t)(at * 1e6)));
      t->async_wait([&](auto) { launch(); });
      timers.push_back(std::move(t));
      at += gap(rng);
    }
  } else {
    for (int64_t c = 0; c < concurrency; ++c) launch();
  }
  io.run();
  seconds = msSince(start, Clock::now()) / 1000.0;
  return results;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = p / 100.0 * (double)(v.size() - 1);
  size_t lo = (size_t)pos;
  double frac = pos - (double)lo;
  return lo + 1 < v.size() ? v[lo] * (1 - frac) + v[lo + 1] * frac : v[lo];
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / (double)v.size();
}
json stats(const std::vector<double>& v) {
  return {{"mean", mean(v)}, {"p50", percentile(v, 50)}, {"p90", percentile(v, 90)}, {"p99", percentile(v, 99)}};
}

// The server `bench serve MODEL` starts: `strata serve MODEL --port 0`.
struct ChildServer {
  pid_t pid = -1;
  std::string url;
  ~ChildServer() { stop(); }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
  }
};

void startServer(ChildServer& c, const BenchServeOpts& o) {
  int fds[2];
  if (::pipe(fds) != 0) fail("bench serve: pipe: {}", std::strerror(errno));
  std::vector<std::string> args = {"strata", "serve", o.model, "--port", "0"};
  if (!o.backend.empty()) args.insert(args.end(), {"--backend", o.backend});
  if (!o.servedName.empty()) args.insert(args.end(), {"--served-model-name", o.servedName});
  args.insert(args.end(), o.serveArgs.begin(), o.serveArgs.end());
  pid_t pid = ::fork();
  if (pid < 0) fail("bench serve: fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  c.pid = pid;
  FILE* err = ::fdopen(fds[0], "r");
  char line[4096];
  std::string log;
  while (std::fgets(line, sizeof line, err)) {
    log += line;
    std::string l(line);
    if (size_t at = l.find("strata serve: http://"); at != std::string::npos) {
      c.url = l.substr(at + 14, l.find(' ', at + 14) - at - 14);
      std::fprintf(stderr, "%s", line);
      break;
    }
  }
  if (c.url.empty()) {
    c.stop();
    fail("bench serve: `strata serve {}` did not start:\n{}", o.model, log);
  }
  // Keep draining the server's stderr so it never blocks on it.
  std::thread([err] {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, err)) {
    }
    std::fclose(err);
  }).detach();
}

}  // namespace

void addBenchServeOptions(CLI::App* cmd, BenchServeOpts& o) {
  cmd->add_option("MODEL", o.model, "A model (or artifact) to start `strata serve` on for the run (instead of --url)");
  cmd->add_option("--url", o.url, "A running OpenAI-compatible server, e.g. http://127.0.0.1:8000 (strata or another)");
  cmd->add_option("--backend", o.backend, "With MODEL: --backend of the started server (default: its own)");
  cmd->add_option("--served-model-name", o.servedName, "The model name to send (default: the server's first model)");
  cmd->add_option("--api-key", o.apiKey, "Sent as 'Authorization: Bearer KEY'");
  cmd->add_option("--concurrency", o.concurrency, "Requests in flight (closed loop; repeatable, e.g. --concurrency 1 4 16)");
  cmd->add_option("--request-rate", o.rates, "Requests per second, Poisson arrivals (repeatable; instead of --concurrency)");
  cmd->add_option("--num-prompts", o.numPrompts,
                  "Requests per load level: one count for all, or one per level (e.g. --concurrency 1 32 "
                  "--num-prompts 16 128); every level sends the first of the same requests")
      ->capture_default_str();
  cmd->add_option("--input-len", o.inputLen, "Prompt tokens (random token ids, after the shared prefix)")->capture_default_str();
  cmd->add_option("--output-len", o.outputLen, "Tokens generated per request (ignore_eos)")->capture_default_str();
  cmd->add_option("--range-ratio", o.rangeRatio,
                  "Lengths drawn uniformly from [len * (1 - r), len * (1 + r)] (0: fixed)")->capture_default_str();
  cmd->add_option("--shared-prefix-len", o.prefixLen, "Tokens every prompt starts with (a shared system prompt)")
      ->capture_default_str();
  cmd->add_option("--prompts-file", o.promptsFile, "Text prompts, one per line (instead of random token ids)");
  cmd->add_option("--vocab", o.vocab, "Token ids are drawn below this (default: the server's vocab_size from /v1/models)");
  cmd->add_option("--seed", o.seed, "Seed of lengths, token ids and arrivals")->capture_default_str();
  cmd->add_option("--slo-ttft-ms", o.sloTtftMs, "Goodput counts requests with TTFT at most this (0: no bound)");
  cmd->add_option("--slo-tpot-ms", o.sloTpotMs, "Goodput counts requests with TPOT at most this (0: no bound)");
  cmd->add_option("--label", o.label, "The series' name in the JSON and plot (default: the server's model name)");
  cmd->add_option("--json", o.jsonPath, "Write every run's results to this JSON file");
  cmd->add_option("--plot", o.plotPath, "Write a PNG: TTFT and TPOT against output tokens/s, a point per load level");
  cmd->add_option("--compare", o.compare, "Earlier --json results drawn beside these in the plot (repeatable)");
  cmd->add_option("--serve-arg", o.serveArgs, "With MODEL: an extra flag for the started server (repeatable)");
}

namespace {

std::vector<json> readCompared(const std::vector<std::string>& files) {
  std::vector<json> series;
  for (const std::string& c : files) {
    std::ifstream f(c);
    if (!f) fail("--compare {}: cannot read", c);
    json j = json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.contains("runs")) fail("--compare {}: not a bench serve JSON file", c);
    series.push_back(j);
  }
  return series;
}

}  // namespace

int benchServe(const BenchServeOpts& o, ServePlotWriter plot) {
  if (!o.plotPath.empty() && !plot)
    fail("--plot: this build draws no plots (no cairo); write --json and draw it with `strata bench serve --compare "
         "FILE --plot PNG`");
  if (o.url.empty() && o.model.empty() && !o.compare.empty() && !o.plotPath.empty()) {
    plot(o.plotPath, readCompared(o.compare));  // a redraw of earlier results
    return 0;
  }
  if (o.url.empty() == o.model.empty())
    fail("bench serve: give --url URL or MODEL (one of them), or only --compare FILE... with --plot PNG to redraw");
  if (!o.concurrency.empty() && !o.rates.empty()) fail("bench serve: give --concurrency or --request-rate, not both");
  for (int64_t n : o.numPrompts)
    if (n < 1 || n > 1000000) fail("--num-prompts must be in 1..1000000, got {}", n);
  if (o.inputLen < 1 || o.outputLen < 1) fail("--input-len and --output-len must be >= 1");
  if (o.rangeRatio < 0 || o.rangeRatio >= 1 || std::isnan(o.rangeRatio)) fail("--range-ratio must be in [0, 1)");
  if (o.prefixLen < 0) fail("--shared-prefix-len must be >= 0");
  for (int64_t c : o.concurrency)
    if (c < 1 || c > 100000) fail("--concurrency must be in 1..100000, got {}", c);
  for (double r : o.rates)
    if (!(r > 0) || r > 1e6) fail("--request-rate must be > 0, got {}", r);

  ChildServer child;
  std::string url = o.url;
  if (!o.model.empty()) {
    startServer(child, o);
    url = child.url;
  }
  const Url u = parseUrl(url);
  json models = getJson(u, "/v1/models", o.apiKey);
  if (!models.contains("data") || models["data"].empty()) fail("{}/v1/models lists no model", u.base);
  const std::string model = o.servedName.empty() ? models["data"][0]["id"].get<std::string>() : o.servedName;
  int64_t vocab = o.vocab > 0 ? o.vocab : models["data"][0].value("vocab_size", (int64_t)0);

  // The requests, the same at every load level.
  std::mt19937_64 rng((uint64_t)o.seed);
  auto draw = [&](int64_t len) {
    if (o.rangeRatio == 0) return len;
    std::uniform_int_distribution<int64_t> d(std::max<int64_t>(1, (int64_t)std::floor(len * (1 - o.rangeRatio))),
                                             (int64_t)std::ceil(len * (1 + o.rangeRatio)));
    return d(rng);
  };
  std::vector<double> levels;
  bool byRate = !o.rates.empty();
  if (byRate) levels = o.rates;
  else for (int64_t c : (o.concurrency.empty() ? std::vector<int64_t>{1} : o.concurrency)) levels.push_back((double)c);
  if (o.numPrompts.size() != 1 && o.numPrompts.size() != levels.size())
    fail("--num-prompts: give one count, or one per load level ({} levels, {} counts)", levels.size(), o.numPrompts.size());
  auto promptsAt = [&](size_t level) { return o.numPrompts.size() == 1 ? o.numPrompts[0] : o.numPrompts[level]; };
  const int64_t numPrompts = *std::max_element(o.numPrompts.begin(), o.numPrompts.end());
  std::vector<Request> reqs;
  if (!o.promptsFile.empty()) {
    std::ifstream in(o.promptsFile);
    if (!in) fail("--prompts-file {}: cannot read", o.promptsFile);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) lines.push_back(l);
    if (lines.empty()) fail("--prompts-file {}: no prompts (one per line)", o.promptsFile);
    for (int64_t i = 0; i < numPrompts; ++i) reqs.push_back({lines[i % lines.size()], 0, draw(o.outputLen)});
  } else {
    if (vocab <= 0) fail("bench serve: {} reports no vocab_size; give --vocab", u.base);
    // Ids from the middle of the vocabulary (away from special tokens at either end).
    std::uniform_int_distribution<int64_t> id(std::min<int64_t>(vocab / 8, 256), vocab - 1 - std::min<int64_t>(vocab / 8, 256));
    std::vector<int64_t> prefix;
    for (int64_t k = 0; k < o.prefixLen; ++k) prefix.push_back(id(rng));
    for (int64_t i = 0; i < numPrompts; ++i) {
      std::vector<int64_t> ids = prefix;
      int64_t n = draw(o.inputLen);
      for (int64_t k = 0; k < n; ++k) ids.push_back(id(rng));
      reqs.push_back({ids, (int64_t)ids.size(), draw(o.outputLen)});
    }
  }

  const std::string label = o.label.empty() ? model : o.label;
  json out = {{"label", label},
              {"server", u.base},
              {"model", model},
              {"input_len", o.inputLen},
              {"output_len", o.outputLen},
              {"shared_prefix_len", o.prefixLen},
              {"range_ratio", o.rangeRatio},
              {"seed", o.seed},
              {"runs", json::array()}};
  std::printf("%-10s %9s %8s %10s %23s %23s %15s %15s %9s\n", byRate ? "rate/s" : "conc", "done/fail", "req/s",
              "out tok/s", "TTFT mean/p50/p99 ms", "TPOT mean/p50/p99 ms", "ITL p50/p99", "E2E p50/p99 s", "goodput");
  for (size_t li = 0; li < levels.size(); ++li) {
    const double level = levels[li];
    double seconds = 0;
    const std::vector<Request> sent(reqs.begin(), reqs.begin() + promptsAt(li));
    std::vector<Result> rs = runLoad(u, model, sent, byRate ? 0 : (int64_t)level, byRate ? level : 0, (uint64_t)o.seed,
                                     o.apiKey, seconds);
    std::vector<double> ttft, tpot, itl, e2e;
    int64_t ok = 0, outTokens = 0, inTokens = 0, good = 0;
    std::string firstError;
    for (const Result& r : rs) {
      if (!r.ok) {
        if (firstError.empty()) firstError = r.error;
        continue;
      }
      ++ok;
      outTokens += r.outputTokens;
      inTokens += r.promptTokens;
      ttft.push_back(r.ttft);
      e2e.push_back(r.e2e);
      itl.insert(itl.end(), r.itl.begin(), r.itl.end());
      double t = r.outputTokens > 1 ? (r.e2e - r.ttft) / (double)(r.outputTokens - 1) : 0;
      if (r.outputTokens > 1) tpot.push_back(t);
      if ((o.sloTtftMs <= 0 || r.ttft <= o.sloTtftMs) && (o.sloTpotMs <= 0 || t <= o.sloTpotMs)) ++good;
    }
    json run = {{byRate ? "request_rate" : "concurrency", byRate ? json(level) : json((int64_t)level)},
                {"num_prompts", (int64_t)rs.size()},
                {"completed", ok},
                {"failed", (int64_t)rs.size() - ok},
                {"duration_s", seconds},
                {"request_throughput", ok / seconds},
                {"output_throughput", outTokens / seconds},
                {"total_token_throughput", (outTokens + inTokens) / seconds},
                {"goodput", good / seconds},
                {"ttft_ms", stats(ttft)},
                {"tpot_ms", stats(tpot)},
                {"itl_ms", stats(itl)},
                {"e2e_ms", stats(e2e)}};
    if (!firstError.empty()) run["first_error"] = firstError;
    out["runs"].push_back(run);
    std::printf("%-10s %9s %8.2f %10.1f %23s %23s %15s %15s %9.2f\n",
                byRate ? fmt::format("{:g}", level).c_str() : fmt::format("{}", (int64_t)level).c_str(),
                fmt::format("{}/{}", ok, (int64_t)rs.size() - ok).c_str(), ok / seconds, outTokens / seconds,
                fmt::format("{:.1f}/{:.1f}/{:.1f}", mean(ttft), percentile(ttft, 50), percentile(ttft, 99)).c_str(),
                fmt::format("{:.2f}/{:.2f}/{:.2f}", mean(tpot), percentile(tpot, 50), percentile(tpot, 99)).c_str(),
                fmt::format("{:.2f}/{:.2f}", percentile(itl, 50), percentile(itl, 99)).c_str(),
                fmt::format("{:.2f}/{:.2f}", percentile(e2e, 50) / 1000, percentile(e2e, 99) / 1000).c_str(),
                good / seconds);
    std::fflush(stdout);
    if (!firstError.empty()) std::fprintf(stderr, "note: %lld requests failed; the first: %s\n", (long long)(rs.size() - ok), firstError.c_str());
  }
  child.stop();
  if (!o.jsonPath.empty()) {
    std::ofstream f(o.jsonPath);
    if (!f) fail("--json {}: cannot write", o.jsonPath);
    f << out.dump(1) << "\n";
  }
  if (!o.plotPath.empty()) {
    std::vector<json> series{out};
    for (json& j : readCompared(o.compare)) series.push_back(std::move(j));
    plot(o.plotPath, series);
  }
  return 0;
}

}  // namespace strata::tools
