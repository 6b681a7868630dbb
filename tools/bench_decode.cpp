#include "tools/bench_decode.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/Pipeline.h"
#include "models/hf_config.h"
#include "models/model_source.h"
#include "models/random_model.h"
#include "runtime/executor.h"
#include "runtime/model_bench.h"
#include "tools/cpu_model.h"
#include "tools/flag_ranges.h"

namespace strata::tools {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Copy bandwidth in bytes/s, counting bytes read plus bytes written: the best
// of 5 copies of 256 MiB, split over all cores (what the kernels use).
double copyBandwidth() {
  const size_t n = 256ull << 20;
  std::vector<char> a(n, 1), b(n, 0);
  int threads = (int)std::max(1u, std::thread::hardware_concurrency());
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        size_t lo = n / threads * t, hi = t + 1 == threads ? n : n / threads * (t + 1);
        std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
      });
    for (auto& t : ts) t.join();
    best = std::min(best, seconds(Clock::now() - t0));
  }
  return 2.0 * n / best;
}

std::string randomModel(const std::string& config) {
  models::LlamaConfig c = models::readLlamaConfig(config);
  std::string key = fmt::format("{:x}", std::hash<std::string>{}(models::toJson(c).dump()));
  fs::path dir = fs::temp_directory_path() / ("strata-bench-model-" + key);
  if (!fs::exists(dir / "model.safetensors")) {
    std::fprintf(stderr, "writing a random %s model to %s...\n", c.modelType.c_str(), dir.c_str());
    models::writeRandomCheckpoint(c, dir.string(), 1);
  }
  return dir.string();
}

}  // namespace

int benchDecode(const BenchDecodeOpts& o) {
  for (int64_t b : o.batches) flagInRange<int64_t>("--batch", b, 1, kMaxSeqsFlag);
  flagInRange<int64_t>("--prompt-tokens", o.promptTokens, 1, kMaxTokensFlag);
  flagInRange<int64_t>("--tokens", o.decodeTokens, 1, kMaxTokensFlag);
  flagInRange<int64_t>("--block-size", o.blockSize, 1, kMaxBlockSizeFlag);
  std::string model = o.model.empty() ? randomModel(o.config.empty() ? std::string(STRATA_SOURCE_DIR "/models/configs/llama-100m.json") : o.config) : o.model;
  std::fprintf(stderr, "measuring copy bandwidth...\n");
  double bw = copyBandwidth();
  CompiledCpuModel m = compileCpuModel(graph::formRegions(models::loadModel(model)), o.blockSize, true);
  runtime::Executor exec(std::move(m.graph), std::move(m.kernels));
  const ops::GraphDef& g = exec.graph();
  int64_t params = 0;
  for (const auto& w : g.weights) params += ops::numel(w.shape);

  json rows = json::array();
  std::printf("model: %s (%.1fM parameters, f32), prompt %lld tokens, %lld decode steps, KV block %lld\n", model.c_str(),
              params / 1e6, (long long)o.promptTokens, (long long)o.decodeTokens, (long long)o.blockSize);
  std::printf("copy bandwidth (read + write, %u threads): %.1f GB/s\n", std::max(1u, std::thread::hardware_concurrency()),
              bw / 1e9);
  std::printf("%6s %12s %12s %14s %14s %12s %10s\n", "batch", "prefill ms", "ms/step", "tokens/s", "weights MB/step",
              "roofline ms", "fraction");
  for (int64_t batch : o.batches) {
    runtime::ModelTiming t = runtime::timePagedModel(exec, batch, o.promptTokens, o.decodeTokens, o.blockSize, 1);
    double prefill = t.prefillMs / 1e3, perStep = t.msPerStep / 1e3;
    double bytes = runtime::weightBytesPerStep(g, batch), roofline = bytes / bw;
    json r = {{"batch", batch}, {"prefill_ms", prefill * 1e3}, {"ms_per_step", perStep * 1e3},
              {"tokens_per_s", batch / perStep}, {"weight_bytes_per_step", bytes}, {"roofline_ms", roofline * 1e3},
              {"roofline_fraction", roofline / perStep}};
    rows.push_back(r);
    std::printf("%6lld %12.1f %12.2f %14.1f %14.1f %12.2f %10.2f\n", (long long)batch, prefill * 1e3, perStep * 1e3,
                batch / perStep, bytes / 1e6, roofline * 1e3, roofline / perStep);
  }
  std::printf("roofline: weight bytes read per decode step / copy bandwidth; fraction = roofline / measured\n");
  json profiles = json::array();
  for (int64_t batch : o.profile ? o.batches : std::vector<int64_t>{}) {
    profiles.push_back(runtime::profilePagedModel(
        exec, fmt::format("prefill of {} x {} tokens", batch, o.promptTokens), batch, o.promptTokens, 0, o.blockSize));
    profiles.push_back(runtime::profilePagedModel(exec, fmt::format("decode at batch {}", batch), batch, o.promptTokens,
                                                  std::min<int64_t>(o.decodeTokens, 8), o.blockSize));
  }
  if (!o.jsonPath.empty()) {
    json out = {{"model", model}, {"parameters", params}, {"copy_bandwidth_bytes_per_s", bw}, {"rows", rows},
                {"prompt_tokens", o.promptTokens}, {"decode_steps", o.decodeTokens}, {"block_size", o.blockSize}};
    if (o.profile) out["profiles"] = profiles;
    std::ofstream(o.jsonPath) << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace strata::tools
