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
// port for the run and stopped after it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strata::tools {

struct BenchServeOpts {
  std::string url, model, backend = "cpu", servedName, apiKey, promptsFile, jsonPath, plotPath, label;
  std::vector<int64_t> concurrency;
  std::vector<double> rates;  // requests/s; empty: closed-loop concurrency
  int64_t numPrompts = 64, inputLen = 128, outputLen = 64, prefixLen = 0, seed = 0, vocab = 0;
  double rangeRatio = 0, sloTtftMs = 0, sloTpotMs = 0;
  std::vector<std::string> serveArgs;  // extra flags for the started server
  std::vector<std::string> compare;    // earlier --json files drawn in the plot
};

void addBenchServeOptions(CLI::App* cmd, BenchServeOpts& o);
int benchServe(const BenchServeOpts& o);

}  // namespace strata::tools
