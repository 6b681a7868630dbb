// `strata bench serve`: load on an OpenAI-compatible server, as `vllm bench
// serve` measures it. Streaming /v1/completions requests with token-id
// prompts of seeded random lengths (or a shared prefix, or a file of
// prompts), ignore_eos so outputs have the asked length, at each
// concurrency (closed loop) or request rate (Poisson arrivals). Per run:
// TTFT, TPOT, ITL and end-to-end latency (mean, p50, p90, p99), request and
// token throughput, goodput under an SLO. A table on stdout, JSON, and a PNG
// (latency against throughput, a point per concurrency or rate).
//
// The server is --url, or MODEL: `strata serve MODEL` started on a free
// port for the run and stopped after it (the calling binary's own `serve`:
// strata's, or strata-gpu's for an artifact). With neither, --compare files
// and --plot redraw earlier results.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace strata::tools {

struct BenchServeOpts {
  std::string url, model, backend, servedName, apiKey, promptsFile, jsonPath, plotPath, label;
  std::vector<int64_t> concurrency;
  std::vector<double> rates;  // requests/s; empty: closed-loop concurrency
  std::vector<int64_t> numPrompts = {64};  // per load level: one value for all, or one each
  int64_t inputLen = 128, outputLen = 64, prefixLen = 0, seed = 0, vocab = 0;
  double rangeRatio = 0, sloTtftMs = 0, sloTpotMs = 0;
  std::vector<std::string> serveArgs;  // extra flags for the started server
  std::vector<std::string> compare;    // earlier --json files drawn in the plot
};

// Draws the --plot PNG from bench serve JSON documents; strata passes its
// cairo plotter (tools/bench_serve_plot.h), strata-gpu none (no cairo on a
// GPU machine: its --json files are drawn here with --compare).
using ServePlotWriter = void (*)(const std::string& path, const std::vector<nlohmann::json>& series);

void addBenchServeOptions(CLI::App* cmd, BenchServeOpts& o);
int benchServe(const BenchServeOpts& o, ServePlotWriter plot);

}  // namespace strata::tools
