#include "tools/bench_predict.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "codegen/UArch.h"
#include "ops/error.h"
#include "tools/cuda_model.h"
#include "tools/flag_ranges.h"

namespace strata::tools {

namespace {

// What one kernel launch of a decode step moves and computes.
struct Cost {
  double bytes = 0;  // read + written
  double dots = 0;   // DPAS operations (dotM x dotN x dotK each)
};

constexpr double kStorageBytes = 2;  // bf16 / f16: weights, activations and the KV cache

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One row of the kernel table: a kernel of one shape, `count` launches a step.
struct KernelRow {
  std::string kernel;
  int64_t count = 0;
  Cost each;
};

// The decode step of `g` at `batch` sequences of `context` cached tokens:
// its kernels by shape, in first-launch order. Region kinds the model does
// not cover are named in `unmodeled`.
std::vector<KernelRow> stepKernels(const ops::GraphDef& g, const tile::UArch& u, int64_t batch, int64_t context,
                                   std::map<std::string, int64_t>& unmodeled) {
  std::map<std::string, const ops::WeightRef*> weights;
  for (const auto& w : g.weights) weights[w.name] = &w;
  auto weight = [&](const ops::NodeDef& n, size_t i) -> const ops::WeightRef& {
    auto it = i < n.inputs.size() ? weights.find(n.inputs[i]) : weights.end();
    if (it == weights.end() || it->second->shape.empty())
      fail("{}: node '{}' ({}): input {} is not a weight with a shape", g.source, n.name, n.op, i);
    return *it->second;
  };
  const nlohmann::json& paged = g.meta.at("paged");
  const int64_t heads = paged.at("heads").get<int64_t>(), kvHeads = paged.at("kv_heads").get<int64_t>();
  const double B = double(batch), s = kStorageBytes;
  std::vector<KernelRow> rows;
  auto add = [&](const std::string& kernel, Cost c) {
    for (KernelRow& r : rows)
      if (r.kernel == kernel) {
        ++r.count;
        return;
      }
    rows.push_back({kernel, 1, c});
  };
  for (const ops::NodeDef& n : g.nodes) {
    if (n.op == "region.gemm") {
      const int64_t count = n.attrs.value("weights", (int64_t)1);
      const bool nk = n.attrs.value("layout", "nk") == "nk", swiglu = n.attrs.value("epilogue", "none") == "swiglu";
      Cost c;
      int64_t K = 0, outCols = 0;
      std::vector<std::string> shapes;
      for (int64_t i = 1; i <= count; ++i) {
        const ops::WeightRef& w = weight(n, size_t(i));
        if (w.shape.size() != 2) fail("{}: node '{}': weight '{}' is not a matrix", g.source, n.name, w.name);
        const int64_t N = nk ? w.shape[0] : w.shape[1];
        K = nk ? w.shape[1] : w.shape[0];
        c.bytes += double(N) * double(K) * s;
        c.dots += double(ceilDiv(batch, u.dotM) * ceilDiv(N, u.dotN) * ceilDiv(K, u.dotK));
        outCols += N;
        shapes.push_back(std::to_string(N));
      }
      if (swiglu) outCols /= 2;
      const double residual = n.attrs.value("residual", (int64_t)0) ? B * outCols * s : 0;
      c.bytes += B * K * s + B * outCols * s + residual;
      add(fmt::format("gemm K {} -> N {}{}{}", K, fmt::join(shapes, " + "), swiglu ? ", SwiGLU" : "",
                      residual ? ", residual" : ""),
          c);
    } else if (n.op == "region.embedding") {
      const ops::WeightRef& w = weight(n, 0);
      add(fmt::format("embedding rows of {}", w.shape.back()), {2 * B * double(w.shape.back()) * s, 0});
    } else if (n.op == "region.rmsnorm") {
      const int64_t H = weight(n, 1).shape.back();
      add(fmt::format("rmsnorm {}", H), {2 * B * H * s + H * s, 0});
    } else if (n.op == "region.rope_kv_write") {
      const int64_t D = n.attrs.at("head_dim").get<int64_t>();
      // q, k, v read; q rotated out; k and v into the cache; the tables'
      // row at each position (f32 cos and sin).
      const double rowsIn = B * double((heads + 2 * kvHeads) * D);
      add(fmt::format("rope + kv write {} + 2x{} heads of {}", heads, kvHeads, D),
          {rowsIn * s + B * double(heads * D) * s + B * double(2 * kvHeads * D) * s + B * D * 4, 0});
    } else if (n.op == "region.paged_attention") {
      const int64_t D = n.attrs.at("head_dim").get<int64_t>();
      // Each sequence's cached keys and values once, its query and output
      // rows; per (sequence, query head) one row block of dotM rows (one
      // token used), S = Q K^T and O = P V over `context` keys.
      const double kv = B * double(2 * kvHeads) * double(context) * D * s, qo = 2 * B * double(heads * D) * s;
      const double dots = B * double(heads) *
                          double(ceilDiv(context, u.dotN) * ceilDiv(D, u.dotK) + ceilDiv(D, u.dotN) * ceilDiv(context, u.dotK));
      add(fmt::format("paged attention {} heads over {} of {}", heads, kvHeads, D), {kv + qo, dots});
    } else if (n.op.rfind("region.", 0) == 0) {
      ++unmodeled[n.op];
    }
  }
  // Greedy sampling: the argmax over each row of logits.
  if (!g.outputs.empty() && g.meta.contains("vocab_size"))
    add("argmax over the vocabulary", {B * g.meta["vocab_size"].get<double>() * s, 0});
  return rows;
}

}  // namespace

int benchPredict(const BenchPredictOpts& o) {
  if (o.target.rfind("xe:", 0) != 0)
    fail("--target {}: bench predict models the Intel Xe parts (xe:pvc, xe:bmg, xe:dg2); on the CPU and CUDA "
         "measure instead (strata bench decode, strata-gpu bench-model)",
         o.target);
  const tile::UArch& u = tile::uarchFor(o.target);
  if (u.rooflinePart.empty()) fail("--target {}: no roofline part in the uArch table", o.target);
  for (int64_t b : o.batches) flagInRange<int64_t>("--batches", b, 1, kMaxSeqsFlag);
  flagInRange<int64_t>("--context", o.context, 1, kMaxTokensFlag);
  const ops::GraphDef g = gpuRegionGraph(o.model, {.ropeKvWrite = true});
  if (!g.meta.contains("paged")) fail("{}: not a decoder strata forms into paged regions", o.model);
  const double bw = u.memoryGBps * 1e9, peak = u.peakMatrixTflops * 1e12, dotFlops = 2.0 * u.dotM * u.dotN * u.dotK;

  std::printf("%s, %s: %.1f TFLOP/s 16-bit DPAS (%ldx%ldx%ld), %.0f GB/s; %s, decode with %lld cached tokens a "
              "sequence, 16-bit storage\n",
              o.target.c_str(), u.rooflinePart.c_str(), u.peakMatrixTflops, (long)u.dotM, (long)u.dotN, (long)u.dotK,
              u.memoryGBps, o.model.c_str(), (long long)o.context);
  nlohmann::json out = {{"target", o.target}, {"part", u.rooflinePart}, {"peak_matrix_tflops", u.peakMatrixTflops},
                        {"memory_gbps", u.memoryGBps}, {"model", o.model}, {"context", o.context},
                        {"batches", nlohmann::json::array()}};
  std::map<std::string, int64_t> unmodeled;
  for (int64_t batch : o.batches) {
    unmodeled.clear();
    const std::vector<KernelRow> rows = stepKernels(g, u, batch, o.context, unmodeled);
    std::printf("\nbatch %lld\n%-58s %6s %12s %12s %10s %7s\n", (long long)batch, "kernel", "count", "MB each",
                "DPAS each", "us each", "bound");
    double stepUs = 0, stepBytes = 0;
    nlohmann::json kernels = nlohmann::json::array();
    for (const KernelRow& r : rows) {
      const double memUs = r.each.bytes / bw * 1e6, dotUs = r.each.dots * dotFlops / peak * 1e6;
      const double us = std::max(memUs, dotUs);
      stepUs += us * double(r.count);
      stepBytes += r.each.bytes * double(r.count);
      std::printf("%-58s %6lld %12.3f %12.0f %10.2f %7s\n", r.kernel.c_str(), (long long)r.count, r.each.bytes / 1e6,
                  r.each.dots, us, memUs >= dotUs ? "memory" : "DPAS");
      kernels.push_back({{"kernel", r.kernel}, {"count", r.count}, {"bytes", r.each.bytes}, {"dpas", r.each.dots},
                         {"us", us}, {"bound", memUs >= dotUs ? "memory" : "dpas"}});
    }
    const double tokensPerS = double(batch) / (stepUs * 1e-6);
    std::printf("step: %.3f ms, %.1f MB moved, %.0f tokens/s\n", stepUs / 1e3, stepBytes / 1e6, tokensPerS);
    out["batches"].push_back({{"batch", batch}, {"kernels", kernels}, {"step_ms", stepUs / 1e3},
                              {"bytes", stepBytes}, {"tokens_per_s", tokensPerS}});
  }
  if (!unmodeled.empty()) {
    std::string names;
    for (const auto& [op, n] : unmodeled) names += fmt::format("{}{} x{}", names.empty() ? "" : ", ", op, n);
    std::printf("not modeled (left out of the step): %s\n", names.c_str());
    out["unmodeled"] = unmodeled;
  }
  std::printf("\nA roofline: launches, caches and occupancy are not modeled; what the kernels could reach.\n");
  if (!o.jsonPath.empty()) {
    std::ofstream f(o.jsonPath);
    if (!(f << out.dump(2) << "\n")) fail("--json {}: cannot write", o.jsonPath);
  }
  return 0;
}

}  // namespace strata::tools
