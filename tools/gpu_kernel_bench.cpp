#include "tools/gpu_kernel_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>
#include <unistd.h>
#include "ops/error.h"
#include "ops/tensor.h"
#include "ops/row_forms.h"
#include "runtime/artifact.h"
#include "runtime/devices/registry.h"
#include "runtime/gpu_kernels.h"

namespace strata::tools {

namespace {

struct Case {
  int64_t M, K, N;
};

// The mean ms of one `launch(r)` over `reps` calls (r = 1..reps) between
// two events, after max(warmups, reps) untimed calls (r = 0, 1, ...): a
// case's first launches run slower, 70-150 us more in all over its first
// ~10 of 20-90 us each where its weights are largest, so one warm-up
// launch left up to 3-8 % in such cases (H100, 2026-11-25: it fits the
// first touch of each freshly allocated weight copy, 7-16 us per 235 MB
// measured with cuBLAS; docs/cuda.md of bd79745 "First prompts").
float timeLaunches(const runtime::Device& dev, int reps, const std::function<void(int)>& launch,
                   int64_t warmups = 0) {
  for (int64_t r = 0; r < std::max<int64_t>(warmups, reps); ++r) launch(int(r));
  return dev.timeMs([&] {
           for (int r = 0; r < reps; ++r) launch(r + 1);
         }) / reps;
}

}  // namespace

// The device that runs the kernel set (or artifact) in `dir`, by its
// manifest's target.
std::unique_ptr<runtime::Device> openDeviceFor(const std::string& dir) {
  return runtime::openGpuDevice(runtime::GpuKernelSet::manifestTarget(dir));
}

void writeResults(const std::string& path, const nlohmann::json& results) {
  if (path.empty()) return;
  std::ofstream os(path);
  os << results.dump(1) << "\n";
  if (!os) fail("cannot write {}", path);
}


// coldWeights: each timed launch reads the next of several copies of its
// weights, together at least kColdBytes, so they come from HBM as in a
// model's decode step (one copy stays in the 50 MB L2 between launches
// where it fits: 4096 x 4096 bf16 is 32 MiB). tightA: A's buffer is taken
// to hold just M rows, so TMA kernels zero-fill the rows of their last
// row block past M; otherwise it holds the largest case's rows, as the
// model's padded activations hold whole row blocks (GemmBuffers::aRows).
int benchGemm(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
              const std::vector<int64_t>& rowsList, const std::vector<int64_t>& epilogueRows, int64_t forceSplits,
              bool coldWeights, bool tightA) {
  constexpr int64_t kColdBytes = int64_t(256) << 20;
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  std::printf("device: %s (%d compute units); kernels %s\n", dev->description().c_str(), dev->computeUnits(),
              dir.c_str());
  const std::vector<std::pair<int64_t, int64_t>> kn = {{4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}};
  std::vector<Case> cases;
  for (int64_t m : rowsList) {
    if (m <= 0) fail("rows must be positive, got {}", m);
    for (auto [k, n] : kn) cases.push_back({m, k, n});
  }
  for (int64_t m : epilogueRows)
    if (m <= 0) fail("epilogue rows must be positive, got {}", m);
  // One random weight / activation buffer big enough for every case.
  int64_t maxW = 0, maxA = 0, maxC = 0;
  for (const Case& c : cases) {
    maxW = std::max(maxW, c.K * c.N);
    maxA = std::max(maxA, c.M * c.K);
    maxC = std::max(maxC, c.M * c.N);
  }
  // SwiGLU: [m, hidden] x two [intermediate, hidden]; residual: K up to
  // intermediate, N = hidden.
  constexpr int64_t hidden = 4096, intermediate = 14336;
  for (int64_t m : epilogueRows) {
    maxW = std::max(maxW, intermediate * hidden);
    maxA = std::max(maxA, m * intermediate);
    maxC = std::max(maxC, m * intermediate);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  auto upload = [&](int64_t n) {
    std::vector<uint16_t> h(n);
    for (auto& x : h) x = dtype == "bf16" ? ops::floatToBf16(u(rng)) : ops::floatToHalf(u(rng));
    void* p = dev->allocate(n * 2);
    dev->upload(p, h.data(), n * 2);
    return p;
  };
  // Cold weights: copies of the largest weight (or two: SwiGLU's gate and
  // up) side by side, kColdBytes in all at least.
  const int64_t wElems = coldWeights ? std::max(2 * maxW, kColdBytes / 2 + maxW) : maxW;
  void* w = upload(wElems);
  void* a = upload(maxA);
  void* c = dev->allocate(maxC * 2);
  // One timed case (timeLaunches): warm-up launches, then `reps` between events;
  // prints a table row and returns its JSON. `dots` counts the products
  // (2 for SwiGLU's two weights); GB/s (bytes of A, B and C) only for the
  // plain GEMMs, where decode is bandwidth-bound.
  auto timeCase = [&](const runtime::GpuGemmKernel& k, runtime::GemmBuffers b, int64_t M, int64_t K, int64_t N,
                      double dots, bool bandwidth) {
    // A kernel that splits K across programs: its workspace and zeroed
    // counters (each launch leaves them zero) for this case.
    const int64_t splits = !k.splitKPrograms ? 1 : forceSplits > 0 ? forceSplits : set->gemmKSplits(k, M, N, K);
    const int64_t wsBytes = runtime::GpuKernelSet::gemmWorkspaceBytes(k, M, N, splits),
                  counterBytes = splits > 1 ? runtime::GpuKernelSet::gemmCounterBytes(k, M, N) : 0;
    if (splits > 1) b.workspace = dev->allocate(wsBytes), b.counters = dev->allocate(counterBytes);
    b.aRows = tightA ? M : maxA / K;
    // Weight copies the launches cycle through. Cold: as many as fit, a
    // SwiGLU's up weight the copy after its gate's. Otherwise one, and a
    // SwiGLU reads the same weight as gate and up (so its second read of
    // each block hits the cache: the figures of the tables before
    // --cold-weights).
    const int64_t wBytes = 2 * K * N, perLaunch = coldWeights && b.bUp ? 2 * wBytes : wBytes;
    const int64_t copies = coldWeights ? (2 * wElems - perLaunch) / perLaunch + 1 : 1;
    auto launch = [&](int r) {
      runtime::GemmBuffers x = b;
      x.b = static_cast<const char*>(b.b) + (r % copies) * perLaunch;
      if (coldWeights && b.bUp) x.bUp = static_cast<const char*>(x.b) + wBytes;
      set->launch(k, x, M, N, K, splits);
    };
    // Warm-up: at least one launch a copy, so that a TMA kernel's tensor
    // maps over every copy are made (encoded and copied once each,
    // Device::tensorMap) before the timing, not in it: with the maps' copies
    // still synchronous that cost 7-9 us of a 19-20 us case, in the first
    // case of each box shape (H100, 2026-11-25: 65 / 129 rows).
    float ms = timeLaunches(*dev, reps, launch, copies);
    dev->release(b.workspace, wsBytes);
    dev->release(b.counters, counterBytes);
    double tflops = dots * 2.0 * M * N * K / (ms * 1e-3) / 1e12;
    double gbs = 2.0 * (K * N + M * K + M * N) / (ms * 1e-3) / 1e9;
    std::printf("%-6lld %-6lld %-6lld %-30s %9.1f %9.1f ", (long long)M, (long long)K, (long long)N, k.name.c_str(),
                ms * 1e3, tflops);
    nlohmann::json row = {{"M", M}, {"K", K}, {"N", N}, {"kernel", k.name}, {"us", ms * 1e3}, {"tflops", tflops},
                          {"k_splits", splits}};
    if (bandwidth) {
      std::printf("%9.0f\n", gbs);
      row["gbs"] = gbs;
    } else {
      std::printf("%9s\n", "-");
    }
    return row;
  };
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-6s %-6s %-6s %-30s %9s %9s %9s\n", "M", "K", "N", "kernel", "us", "TFLOP/s", "GB/s");
  for (const Case& cs : cases)
    rows.push_back(timeCase(set->gemmFor(dtype, /*weightsNK=*/true, cs.M, {}, cs.N, cs.K),
                            {a, w, nullptr, c, nullptr, nullptr, nullptr}, cs.M, cs.K, cs.N, 1, true));
  // The MLP's gate / up projection as one SwiGLU kernel (two [N, K] weights;
  // the same weight buffer serves both: timing only).
  nlohmann::json swiglu = nlohmann::json::array();
  for (int64_t m : epilogueRows)
    swiglu.push_back(timeCase(set->gemmFor(dtype, /*weightsNK=*/true, m, {.swiglu = true}, intermediate, hidden),
                              {a, w, w, c, nullptr, nullptr, nullptr}, m, hidden, intermediate, 2, false));
  // The projections with the residual add (o_proj, down_proj).
  nlohmann::json residual = nlohmann::json::array();
  void* r = upload(maxC);
  for (int64_t m : epilogueRows)
    for (int64_t k : {hidden, intermediate})
      residual.push_back(timeCase(set->gemmFor(dtype, /*weightsNK=*/true, m, {.residual = true}, hidden, k),
                                  {a, w, nullptr, c, nullptr, nullptr, r}, m, k, hidden, 1, false));
  dev->release(r, maxC * 2);
  dev->release(w, wElems * 2);
  dev->release(a, maxA * 2);
  dev->release(c, maxC * 2);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", dtype}, {"gemm", rows}, {"swiglu", swiglu},
                          {"residual", residual}, {"cold_weights", coldWeights}, {"tight_a", tightA}});
  return 0;
}

int benchRmsNorm(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps) {
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  const runtime::GpuRmsNormKernel* k = nullptr;
  for (const auto& n : set->rmsNorms())
    if (n.dtype == dtype) k = &n;
  if (!k) fail("no {} RMSNorm kernel in {}", dtype, dir);
  const int64_t hidden = 4096, maxRows = 4096, elt = ops::dtypeSize(ops::parseDType(dtype));
  std::printf("device: %s; kernel %s\n%-6s %-6s %9s %9s\n", dev->description().c_str(), k->name.c_str(), "rows",
              "hidden", "us", "GB/s");
  void* x = dev->allocate(maxRows * hidden * elt);  // zero-filled: the timing does not depend on values
  void* w = dev->allocate(hidden * elt);
  void* y = dev->allocate(maxRows * hidden * elt);
  nlohmann::json out = nlohmann::json::array();
  for (int64_t rows : {1, 8, 32, 128, 512, 2048, 4096}) {
    float ms = timeLaunches(*dev, reps, [&](int) { set->launch(*k, x, w, y, rows, hidden, 1e-5f); });
    double bytes = double(elt) * (2 * rows * hidden + hidden), gbs = bytes / (ms * 1e-3) / 1e9;
    std::printf("%-6lld %-6lld %9.1f %9.0f\n", (long long)rows, (long long)hidden, ms * 1e3, gbs);
    out.push_back({{"rows", rows}, {"hidden", hidden}, {"us", ms * 1e3}, {"gbs", gbs}});
  }
  dev->release(x, maxRows * hidden * elt);
  dev->release(w, hidden * elt);
  dev->release(y, maxRows * hidden * elt);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", dtype}, {"rms_norm", out}});
  return 0;
}

// In place on zero-filled rows (timing does not depend on values); bytes =
// x read and written plus the cos / sin rows each token reads.
int benchRope(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps) {
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  const int64_t maxTokens = 4096, tableRows = 8192, elt = ops::dtypeSize(ops::parseDType(dtype));
  std::printf("device: %s\n%-22s %-6s %9s %9s\n", dev->description().c_str(), "kernel", "tokens", "us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  for (const runtime::GpuRopeKernel& k : set->ropes()) {
    if (k.dtype != dtype) continue;
    // A joined kernel rotates the q heads and then the KV heads (rows of
    // heads + KV heads, as one q | k row was).
    const int64_t heads = k.heads + k.kvHeads, width = heads * k.headDim, half = k.headDim / 2;
    void* x = dev->allocate(maxTokens * width * elt);
    void* cos = dev->allocate(tableRows * half * 4);
    void* sin = dev->allocate(tableRows * half * 4);
    void* pos = dev->allocate(maxTokens * 8);
    for (int64_t tokens : {1, 8, 32, 128, 512, 2048, 4096}) {
      float ms = timeLaunches(*dev, reps, [&](int) { set->launch(k, x, x, cos, sin, pos, tokens, tableRows); });
      double bytes = double(tokens) * (2 * width * elt + 2 * half * 4 + 8), gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("%-22s %-6lld %9.1f %9.0f\n", k.name.c_str(), (long long)tokens, ms * 1e3, gbs);
      out.push_back({{"kernel", k.name}, {"heads", heads}, {"kv_heads", k.kvHeads}, {"head_dim", k.headDim}, {"tokens", tokens},
                     {"us", ms * 1e3}, {"gbs", gbs}});
    }
    dev->release(x, maxTokens * width * elt);
    dev->release(cos, tableRows * half * 4);
    dev->release(sin, tableRows * half * 4);
    dev->release(pos, maxTokens * 8);
  }
  if (out.empty()) fail("no {} RoPE kernel in {}", dtype, dir);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", dtype}, {"rope", out}});
  return 0;
}

// Random q, k, v (timing does not depend on values beyond the mask);
// FLOPs = 4 B H S T D, halved with the causal mask at S = T (the count
// FlashAttention's benchmarks use).
int benchAttention(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                   bool everyKernel) {
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  std::printf("device: %s\n%-38s %-5s %-6s %9s %9s\n", dev->description().c_str(), "kernel", "batch", "seq", "ms",
              "TFLOP/s");
  const int64_t maxElems = int64_t(32) * 16384 * 128;  // [B, 32 heads, S, 128] with B S = 16k
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> h(maxElems);
  for (auto& x : h) x = dtype == "bf16" ? ops::floatToBf16(u(rng)) : ops::floatToHalf(u(rng));
  std::array<void*, 4> bufs{};
  for (void*& p : bufs) {
    p = dev->allocate(maxElems * 2);
    dev->upload(p, h.data(), maxElems * 2);
  }
  nlohmann::json out = nlohmann::json::array();
  // Each case runs the kernel the runtime picks for it (attentionFor: of
  // the kernels differing in query block, by grid size), or every kernel.
  std::set<std::string> shapes;
  for (const runtime::GpuAttentionKernel& a : set->attentions()) {
    if (a.dtype != dtype) continue;
    if (!everyKernel && !shapes.insert(fmt::format("{}/{}/{}/{}", a.heads, a.kvHeads, a.headDim, a.causal)).second)
      continue;
    const bool gqa = a.kvHeads != a.heads;
    std::vector<int64_t> seqs = gqa ? std::vector<int64_t>{128, 512, 2048, 8192}
                                    : std::vector<int64_t>{1024, 2048, 4096, 8192, 16384};
    for (int64_t S : seqs) {
      const int64_t B = gqa ? 1 : 16384 / S;
      const runtime::GpuAttentionKernel& k =
          everyKernel ? a : set->attentionFor(a.dtype, a.heads, a.kvHeads, a.headDim, a.causal, B, S);
      auto launch = [&] { set->launch(k, bufs[0], bufs[1], bufs[2], bufs[3], B, S, S); };
      float ms = timeLaunches(*dev, reps, [&](int) { launch(); });
      double flops = 4.0 * B * k.heads * S * S * k.headDim * (k.causal ? 0.5 : 1.0);
      double tflops = flops / (ms * 1e-3) / 1e12;
      std::printf("%-38s %-5lld %-6lld %9.3f %9.1f\n", k.name.c_str(), (long long)B, (long long)S, ms, tflops);
      out.push_back({{"kernel", k.name}, {"heads", k.heads}, {"kv_heads", k.kvHeads}, {"head_dim", k.headDim},
                     {"causal", k.causal}, {"batch", B}, {"seq", S}, {"ms", ms}, {"tflops", tflops}});
    }
  }
  // Paged prefill of one fresh prompt (S = T) from a cache of shuffled
  // pages: what a TTFT step runs after writing the prompt's K / V.
  shapes.clear();
  for (const runtime::GpuPagedPrefillKernel& shape : set->pagedPrefills()) {
    if (shape.dtype != dtype) continue;
    const std::string key =
        fmt::format("{}/{}/{}/{}/{}", shape.heads, shape.kvHeads, shape.headDim, shape.pageSize, shape.scale);
    if (!everyKernel && !shapes.insert(key).second) continue;
    for (int64_t S : {512, 2048, 8192}) {
      // The kernel the runtime picks for one prompt of S tokens, or each.
      const runtime::GpuPagedPrefillKernel& k =
          everyKernel ? shape
                      : set->pagedPrefillFor(shape.dtype, shape.heads, shape.kvHeads, shape.headDim, shape.pageSize,
                                             shape.scale, 1, S);
      const int64_t P = k.pageSize, maxBlocks = S / P, numBlocks = maxBlocks;
      std::vector<int64_t> physical(numBlocks), starts = {0, S}, lens = {S};
      for (int64_t i = 0; i < numBlocks; ++i) physical[i] = i;
      std::shuffle(physical.begin(), physical.end(), rng);
      const int64_t cacheBytes = numBlocks * 2 * k.kvHeads * P * k.headDim * 2;
      void* cache = dev->allocate(cacheBytes);
      void* tables = dev->allocate(numBlocks * 8);
      void* dstarts = dev->allocate(16);
      void* dlens = dev->allocate(8);
      dev->upload(tables, physical.data(), numBlocks * 8);
      dev->upload(dstarts, starts.data(), 16);
      dev->upload(dlens, lens.data(), 8);
      runtime::PagedPrefillBuffers pb{bufs[0], cache, tables, dstarts, dlens, bufs[3]};
      auto launch = [&] { set->launch(k, pb, 1, S, S, maxBlocks, numBlocks); };
      float ms = timeLaunches(*dev, reps, [&](int) { launch(); });
      double tflops = 4.0 * k.heads * S * S * k.headDim * 0.5 / (ms * 1e-3) / 1e12;
      std::printf("%-38s %-5d %-6lld %9.3f %9.1f\n", k.name.c_str(), 1, (long long)S, ms, tflops);
      out.push_back({{"kernel", k.name}, {"heads", k.heads}, {"kv_heads", k.kvHeads}, {"head_dim", k.headDim},
                     {"causal", true}, {"paged", true}, {"batch", 1}, {"seq", S}, {"ms", ms}, {"tflops", tflops}});
      dev->release(cache, cacheBytes);
      dev->release(tables, numBlocks * 8);
      dev->release(dstarts, 16);
      dev->release(dlens, 8);
    }
  }
  for (void* p : bufs) dev->release(p, maxElems * 2);
  if (out.empty()) fail("no {} attention kernel in {}", dtype, dir);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", dtype}, {"attention", out}});
  return 0;
}

// One decode step per launch pair (split kernel + combine) over a cache of
// shuffled pages; bytes = the K and V every sequence reads (q, o and the
// partials are < 1 % at these sizes). `splitScale` multiplies the
// runtime's split count (for tuning). Timed two ways: `reps` steps
// launched one by one on the stream (us), and the same launches replayed
// as one CUDA graph (graph_us: how the model's decode steps run, and how
// bench_paged_decode.py times its peers), which leaves out the host's
// per-launch cost; at batch 1 with a few MB a step that cost is a large
// part of the stream figure.
int benchPagedDecode(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                     double splitScale, const std::vector<int64_t>& batches, const std::vector<int64_t>& contexts) {
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  std::printf("device: %s\n%-34s %-5s %-6s %-6s %9s %9s %9s %9s\n", dev->description().c_str(), "kernel", "batch",
              "ctx", "splits", "us", "GB/s", "graph us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  std::mt19937 rng(5);
  for (const runtime::GpuPagedDecodeKernel& k : set->pagedDecodes()) {
    if (k.dtype != dtype) continue;
    const int64_t P = k.pageSize, rowBytes = k.headDim * 2;
    for (int64_t B : batches)
      for (int64_t ctx : contexts) {
        if (B <= 0 || ctx <= 0 || ctx % P)
          fail("batch {} / context {}: both must be positive and the context whole pages of {}", B, ctx, P);
        const int64_t maxBlocks = ctx / P, numBlocks = B * maxBlocks;
        const int64_t cacheBytes = numBlocks * 2 * k.kvHeads * P * rowBytes;
        std::vector<int64_t> physical(numBlocks), lens(B, ctx);
        for (int64_t i = 0; i < numBlocks; ++i) physical[i] = i;
        std::shuffle(physical.begin(), physical.end(), rng);
        const int64_t splits = std::max<int64_t>(
            1, int64_t(splitScale * set->pagedDecodeSplits(k, B, ctx)));
        void* q = dev->allocate(B * k.heads * rowBytes);
        void* o = dev->allocate(B * k.heads * rowBytes);
        void* cache = dev->allocate(cacheBytes);  // zero-filled: timing does not depend on values
        void* tables = dev->allocate(numBlocks * 8);
        void* dlens = dev->allocate(B * 8);
        const int64_t scratchBytes = runtime::GpuKernelSet::pagedDecodeScratchBytes(k, B, splits);
        void* scratch = dev->allocate(scratchBytes);
        dev->upload(tables, physical.data(), numBlocks * 8);
        dev->upload(dlens, lens.data(), B * 8);
        runtime::PagedDecodeBuffers bufs{q, cache, tables, dlens, o, scratch};
        auto step = [&](int) { set->launch(k, bufs, B, maxBlocks, numBlocks, splits); };
        float ms = timeLaunches(*dev, reps, step);
        auto steps = [&] {
          for (int r = 0; r < reps; ++r) step(r);
        };
        std::unique_ptr<runtime::Replay> graph = dev->replayable(dev->record(steps));
        graph->launch();  // warm-up
        float graphMs = dev->timeMs([&] { graph->launch(); }) / reps;
        double bytes = double(B) * ctx * k.kvHeads * 2 * rowBytes, gbs = bytes / (ms * 1e-3) / 1e9;
        double graphGbs = bytes / (graphMs * 1e-3) / 1e9;
        std::printf("%-34s %-5lld %-6lld %-6lld %9.1f %9.0f %9.1f %9.0f\n", k.name.c_str(), (long long)B,
                    (long long)ctx, (long long)splits, ms * 1e3, gbs, graphMs * 1e3, graphGbs);
        out.push_back({{"kernel", k.name}, {"heads", k.heads}, {"kv_heads", k.kvHeads}, {"head_dim", k.headDim},
                       {"page_size", P}, {"batch", B}, {"context", ctx}, {"splits", splits}, {"us", ms * 1e3},
                       {"gbs", gbs}, {"graph_us", graphMs * 1e3}, {"graph_gbs", graphGbs},
                       {"warps", k.threads / 32}});
        dev->release(q, B * k.heads * rowBytes);
        dev->release(o, B * k.heads * rowBytes);
        dev->release(cache, cacheBytes);
        dev->release(tables, numBlocks * 8);
        dev->release(dlens, B * 8);
        dev->release(scratch, scratchBytes);
      }
  }
  if (out.empty()) fail("no {} paged decode kernel in {}", dtype, dir);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", dtype}, {"paged_decode", out}});
  return 0;
}

// Each region.elementwise node of a compiled graph (`--kernels DIR`: an
// artifact of fused elementwise regions, e.g. build/cuda-models/
// elementwise-bf16) at rows 1..4096, on zero-filled buffers of its
// operands' row forms (timing does not depend on values); bytes = each
// operand and output moved once (what a fused kernel must move at least).
// Rows at least `minCols` wide only.
int benchElementwise(const std::string& dir, const std::string& jsonPath, int reps, int64_t minCols) {
  auto dev = openDeviceFor(dir);
  auto set = runtime::GpuKernelSet::load(*dev, dir);
  const runtime::Artifact a = runtime::loadArtifact(dir);
  const int64_t elt = ops::dtypeSize(ops::parseDType(a.dtype));
  std::printf("device: %s; %s\n%-32s %-7s %-6s %-5s %9s %9s\n", dev->description().c_str(), a.dtype.c_str(), "node",
              "cols", "rows", "warps", "us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  for (const ops::NodeDef& n : a.graph.nodes) {
    if (n.op != "region.elementwise" || !n.attrs.contains("kernel")) continue;
    const ops::ElementwiseLaunch l = ops::ElementwiseLaunch::fromJson(n.attrs["kernel"]);
    if (l.cols < minCols) continue;
    const runtime::GpuElementwiseKernel& k = set->elementwise(n.attrs["kernel"]["name"].get<std::string>());
    for (int64_t rows : {1, 32, 256, 4096}) {
      std::vector<int64_t> sizes;
      for (auto [i, form] : l.operands)
        sizes.push_back(form == ops::RowForm::Full ? rows * l.cols
                        : form == ops::RowForm::Row ? l.cols
                        : form == ops::RowForm::Col ? rows
                                                    : 1);
      for (auto [full, keepLast] : l.outputs) sizes.push_back(full ? rows * l.cols : rows);
      std::vector<std::pair<const void*, int64_t>> buffers;
      int64_t bytes = 0;
      for (int64_t e : sizes) buffers.push_back({dev->allocate(e * elt), e}), bytes += e * elt;
      float ms = timeLaunches(*dev, reps, [&](int) { set->launch(k, buffers, rows); });
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("%-32s %-7lld %-6lld %-5lld %9.1f %9.0f\n", n.name.c_str(), (long long)l.cols, (long long)rows,
                  (long long)(k.threads / 32), ms * 1e3, gbs);
      out.push_back({{"node", n.name}, {"kernel", k.name}, {"cols", l.cols}, {"rows", rows}, {"block_n", k.blockN},
                     {"warps", k.threads / 32}, {"bytes", bytes}, {"us", ms * 1e3}, {"gbs", gbs}});
      for (size_t i = 0; i < buffers.size(); ++i) dev->release(const_cast<void*>(buffers[i].first), sizes[i] * elt);
    }
  }
  if (out.empty()) fail("{}: no region.elementwise node with rows of {} or more", dir, minCols);
  writeResults(jsonPath, {{"device", dev->description()}, {"dtype", a.dtype}, {"elementwise", out}});
  return 0;
}

}  // namespace strata::tools
