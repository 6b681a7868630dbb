// strata-gpu: the runtime-only GPU tool (links no LLVM; it runs on the GPU
// machine next to an artifact from `strata compile --target cuda:sm_90` or
// a kernel set from `strata compile-kernels`).
//   strata-gpu run DIR --prompt-ids 0,53,308 [strata run's options]
// generates on the GPU (token ids in and out);
//   strata-gpu bench-model DIR [--random-weights SEED] [--sampling] [--json FILE]
// times the whole model: time to first token and decode ms/step;
//   strata-gpu bench-gemm --kernels DIR [--rows M...] [--epilogue-rows M...] [--json FILE]
// times the generated bf16 GEMM kernels on Llama-3-8B projection shapes
// (weights [N, K] as HF Linear stores them; M = 1, 16, 64, 256, 2048 by
// default), the SwiGLU kernel on the MLP's gate / up projection and the
// residual projections (M = 256, 2048 by default) with CUDA events;
//   strata-gpu bench-rmsnorm --kernels DIR [--json FILE]
// the generated RMSNorm kernels at hidden 4096 (Llama-3-8B) for 1..4096 rows;
//   strata-gpu bench-rope --kernels DIR [--json FILE]
// the generated RoPE kernels on Llama-3-8B's q and k rows for 1..4096 tokens;
//   strata-gpu bench-attention --kernels DIR [--json FILE]
// the FlashAttention-2 kernels at 16k tokens per launch (batch x seq, seq
// 1k..16k), head dim 64 and 128, causal and not, Llama-3-8B's GQA
// prefill (seq 128..8k, batch 1) and its paged prefill (512..8k);
//   strata-gpu bench-paged-decode --kernels DIR [--batches B...] [--contexts T...] [--stamps] [--json FILE]
// the paged decode kernels on Llama-3-8B's attention (32 / 8 heads, dim
// 128, pages of 16), by default at batch 1..64 and context 1k..32k
// (--stamps: also the phases of a set instrumented by
// tools/gpu/stamp_paged_decode.py);
//   strata-gpu bench-elementwise --kernels ARTIFACT [--json FILE]
// the fused elementwise kernels of a compiled graph at rows 1..4096;
//   strata-gpu bench-all --kernels DIR --out DIR [--artifact DIR --config FILE [--check]]
// every table of docs/cuda.md against its peers in one call (through
// tools/gpu/bench_all.py: the peers are PyTorch, Triton and transformers).
#include <CLI/CLI.hpp>
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
#include "runtime/cuda_executor.h"
#include "runtime/cuda_kernels.h"
#include "runtime/model_bench.h"
#include "tools/run_loop.h"

using namespace strata;

namespace {

struct Case {
  int64_t M, K, N;
};

void writeResults(const std::string& path, const nlohmann::json& results) {
  if (path.empty()) return;
  std::ofstream os(path);
  os << results.dump(1) << "\n";
  if (!os) fail("cannot write {}", path);
}

// The mean ms of one `launch(r)` over `reps` calls (r = 1..reps) between
// two events, after max(warmups, reps) untimed calls (r = 0, 1, ...): a
// case's first launches run slower, 70-150 us more in all over its first
// ~10 of 20-90 us each where its weights are largest, so one warm-up
// launch left up to 3-8 % in such cases (H100, 2026-11-25: it fits the
// first touch of each freshly allocated weight copy, 7-16 us per 235 MB
// measured with cuBLAS; docs/cuda.md "First prompts").
float timeLaunches(const runtime::CudaDevice& dev, int reps, const std::function<void(int)>& launch,
                   int64_t warmups = 0) {
  for (int64_t r = 0; r < std::max<int64_t>(warmups, reps); ++r) launch(int(r));
  return dev.timeMs([&] {
           for (int r = 0; r < reps; ++r) launch(r + 1);
         }) / reps;
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
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  std::printf("device: %s (sm_%d, %d SMs); kernels %s\n", dev->deviceName().c_str(), dev->computeCapability(),
              dev->multiprocessors(), dir.c_str());
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
  auto timeCase = [&](const runtime::CudaGemmKernel& k, runtime::GemmBuffers b, int64_t M, int64_t K, int64_t N,
                      double dots, bool bandwidth) {
    // A kernel that splits K across programs: its workspace and zeroed
    // counters (each launch leaves them zero) for this case.
    const int64_t splits = !k.splitKPrograms ? 1 : forceSplits > 0 ? forceSplits : set->gemmKSplits(k, M, N, K);
    const int64_t wsBytes = runtime::CudaKernelSet::gemmWorkspaceBytes(k, M, N, splits),
                  counterBytes = splits > 1 ? runtime::CudaKernelSet::gemmCounterBytes(k, M, N) : 0;
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
    // CudaTensorMaps) before the timing, not in it: with the maps' copies
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
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", dtype}, {"gemm", rows}, {"swiglu", swiglu},
                          {"residual", residual}, {"cold_weights", coldWeights}, {"tight_a", tightA}});
  return 0;
}

int benchRmsNorm(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps) {
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  const runtime::CudaRmsNormKernel* k = nullptr;
  for (const auto& n : set->rmsNorms())
    if (n.dtype == dtype) k = &n;
  if (!k) fail("no {} RMSNorm kernel in {}", dtype, dir);
  const int64_t hidden = 4096, maxRows = 4096, elt = ops::dtypeSize(ops::parseDType(dtype));
  std::printf("device: %s; kernel %s\n%-6s %-6s %9s %9s\n", dev->deviceName().c_str(), k->name.c_str(), "rows",
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
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", dtype}, {"rms_norm", out}});
  return 0;
}

// In place on zero-filled rows (timing does not depend on values); bytes =
// x read and written plus the cos / sin rows each token reads.
int benchRope(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps) {
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  const int64_t maxTokens = 4096, tableRows = 8192, elt = ops::dtypeSize(ops::parseDType(dtype));
  std::printf("device: %s\n%-22s %-6s %9s %9s\n", dev->deviceName().c_str(), "kernel", "tokens", "us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  for (const runtime::CudaRopeKernel& k : set->ropes()) {
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
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", dtype}, {"rope", out}});
  return 0;
}

// Random q, k, v (timing does not depend on values beyond the mask);
// FLOPs = 4 B H S T D, halved with the causal mask at S = T (the count
// FlashAttention's benchmarks use).
int benchAttention(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                   bool everyKernel) {
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  std::printf("device: %s\n%-38s %-5s %-6s %9s %9s\n", dev->deviceName().c_str(), "kernel", "batch", "seq", "ms",
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
  for (const runtime::CudaAttentionKernel& a : set->attentions()) {
    if (a.dtype != dtype) continue;
    if (!everyKernel && !shapes.insert(fmt::format("{}/{}/{}/{}", a.heads, a.kvHeads, a.headDim, a.causal)).second)
      continue;
    const bool gqa = a.kvHeads != a.heads;
    std::vector<int64_t> seqs = gqa ? std::vector<int64_t>{128, 512, 2048, 8192}
                                    : std::vector<int64_t>{1024, 2048, 4096, 8192, 16384};
    for (int64_t S : seqs) {
      const int64_t B = gqa ? 1 : 16384 / S;
      const runtime::CudaAttentionKernel& k =
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
  for (const runtime::CudaPagedPrefillKernel& shape : set->pagedPrefills()) {
    if (shape.dtype != dtype) continue;
    const std::string key =
        fmt::format("{}/{}/{}/{}/{}", shape.heads, shape.kvHeads, shape.headDim, shape.pageSize, shape.scale);
    if (!everyKernel && !shapes.insert(key).second) continue;
    for (int64_t S : {512, 2048, 8192}) {
      // The kernel the runtime picks for one prompt of S tokens, or each.
      const runtime::CudaPagedPrefillKernel& k =
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
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", dtype}, {"attention", out}});
  return 0;
}

// The u64 stamp slots a program of an instrumented paged decode set
// writes right after the scratch's partials (tools/gpu/stamp_paged_decode.py
// names their meanings).
constexpr int64_t kStampSlots = 16;

// The phases of a paged decode kernel instrumented by
// tools/gpu/stamp_paged_decode.py, from the last step run.
nlohmann::json printStamps(const std::vector<uint64_t>& st, int64_t programs) {
  static const char* names[] = {"grid wait",  "context length", "Q ready", "first key block",
                                "last key block", "last step", "partial stores"};
  nlohmann::json out;
  auto spread = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return std::array<double, 3>{v.front(), v[v.size() / 2], v.back()};
  };
  uint64_t t0 = ~0ull;
  for (int64_t p = 0; p < programs; ++p) t0 = std::min(t0, st[p * kStampSlots]);
  std::vector<std::vector<double>> phase(8);
  std::vector<double> start, end;
  for (int64_t p = 0; p < programs; ++p) {
    const uint64_t* s = &st[p * kStampSlots];
    for (int i = 0; i < 7; ++i) phase[i].push_back(double(s[i + 2]) - double(s[i + 1]));
    phase[7].push_back(double(s[8]) - double(s[1]));
    start.push_back(double(s[0] - t0)), end.push_back(double(s[10] - t0));
  }
  std::printf("  %-16s %8s %8s %8s   (cycles a program, since the previous phase)\n", "phase", "min", "median", "max");
  for (int i = 0; i < 8; ++i) {
    auto [lo, med, hi] = spread(phase[i]);
    const char* name = i < 7 ? names[i] : "whole program";
    std::printf("  %-16s %8.0f %8.0f %8.0f\n", name, lo, med, hi);
    out[name] = {lo, med, hi};
  }
  auto [s0, s1, s2] = spread(start);
  auto [e0, e1, e2] = spread(end);
  std::printf("  programs start %.0f-%.0f ns and end %.0f-%.0f ns after the first start (median end %.0f)\n", s0, s2, e0,
              e2, e1);
  out["start_ns"] = {s0, s1, s2}, out["end_ns"] = {e0, e1, e2};
  return out;
}

// One decode step per launch pair (split kernel + combine) over a cache of
// shuffled pages; bytes = the K and V every sequence reads (q, o and the
// partials are < 1 % at these sizes). `splitScale` multiplies the
// runtime's split count (for tuning). Timed two ways: `reps` steps
// launched one by one on the stream (us), and the same launches replayed
// as one CUDA graph (graph_us: how the model's decode steps run, and how
// bench_paged_decode.py times its peers), which leaves out the host's
// per-launch cost; at batch 1 with a few MB a step that cost is a large
// part of the stream figure. `stamps`: also print the phases of an
// instrumented set (printStamps).
int benchPagedDecode(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                     double splitScale, const std::vector<int64_t>& batches, const std::vector<int64_t>& contexts,
                     bool stamps) {
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  std::printf("device: %s\n%-34s %-5s %-6s %-6s %9s %9s %9s %9s\n", dev->deviceName().c_str(), "kernel", "batch",
              "ctx", "splits", "us", "GB/s", "graph us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  std::mt19937 rng(5);
  for (const runtime::CudaPagedDecodeKernel& k : set->pagedDecodes()) {
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
        const int64_t partialBytes = runtime::CudaKernelSet::pagedDecodeScratchBytes(k, B, splits);
        const int64_t programs = splits * k.kvHeads * B;
        const int64_t stampBytes = stamps ? programs * kStampSlots * 8 : 0;
        const int64_t scratchBytes = partialBytes + stampBytes;
        void* scratch = dev->allocate(scratchBytes);
        dev->upload(tables, physical.data(), numBlocks * 8);
        dev->upload(dlens, lens.data(), B * 8);
        runtime::PagedDecodeBuffers bufs{q, cache, tables, dlens, o, scratch};
        auto step = [&](int) { set->launch(k, bufs, B, maxBlocks, numBlocks, splits); };
        float ms = timeLaunches(*dev, reps, step);
        auto steps = [&] {
          for (int r = 0; r < reps; ++r) step(r);
        };
        runtime::CudaGraph graph = dev->graph(dev->record(steps));
        graph.launch();  // warm-up
        float graphMs = dev->timeMs([&] { graph.launch(); }) / reps;
        double bytes = double(B) * ctx * k.kvHeads * 2 * rowBytes, gbs = bytes / (ms * 1e-3) / 1e9;
        double graphGbs = bytes / (graphMs * 1e-3) / 1e9;
        std::printf("%-34s %-5lld %-6lld %-6lld %9.1f %9.0f %9.1f %9.0f\n", k.name.c_str(), (long long)B,
                    (long long)ctx, (long long)splits, ms * 1e3, gbs, graphMs * 1e3, graphGbs);
        out.push_back({{"kernel", k.name}, {"heads", k.heads}, {"kv_heads", k.kvHeads}, {"head_dim", k.headDim},
                       {"page_size", P}, {"batch", B}, {"context", ctx}, {"splits", splits}, {"us", ms * 1e3},
                       {"gbs", gbs}, {"graph_us", graphMs * 1e3}, {"graph_gbs", graphGbs},
                       {"warps", k.threads / 32}});
        if (stamps) {
          std::vector<uint64_t> st(programs * kStampSlots);
          dev->download(st.data(), static_cast<char*>(scratch) + partialBytes, stampBytes);
          out.back()["stamps"] = printStamps(st, programs);
        }
        dev->release(q, B * k.heads * rowBytes);
        dev->release(o, B * k.heads * rowBytes);
        dev->release(cache, cacheBytes);
        dev->release(tables, numBlocks * 8);
        dev->release(dlens, B * 8);
        dev->release(scratch, scratchBytes);
      }
  }
  if (out.empty()) fail("no {} paged decode kernel in {}", dtype, dir);
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", dtype}, {"paged_decode", out}});
  return 0;
}

// Each region.elementwise node of a compiled graph (`--kernels DIR`: an
// artifact of fused elementwise regions, e.g. build/cuda-models/
// elementwise-bf16) at rows 1..4096, on zero-filled buffers of its
// operands' row forms (timing does not depend on values); bytes = each
// operand and output moved once (what a fused kernel must move at least).
// Rows at least `minCols` wide only.
int benchElementwise(const std::string& dir, const std::string& jsonPath, int reps, int64_t minCols) {
  auto dev = runtime::CudaDevice::open();
  auto set = runtime::CudaKernelSet::load(*dev, dir);
  const runtime::Artifact a = runtime::loadArtifact(dir);
  const int64_t elt = ops::dtypeSize(ops::parseDType(a.dtype));
  std::printf("device: %s; %s\n%-32s %-7s %-6s %-5s %9s %9s\n", dev->deviceName().c_str(), a.dtype.c_str(), "node",
              "cols", "rows", "warps", "us", "GB/s");
  nlohmann::json out = nlohmann::json::array();
  for (const ops::NodeDef& n : a.graph.nodes) {
    if (n.op != "region.elementwise" || !n.attrs.contains("kernel")) continue;
    const ops::ElementwiseLaunch l = ops::ElementwiseLaunch::fromJson(n.attrs["kernel"]);
    if (l.cols < minCols) continue;
    const runtime::CudaElementwiseKernel& k = set->elementwise(n.attrs["kernel"]["name"].get<std::string>());
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
  writeResults(jsonPath, {{"device", dev->deviceName()}, {"dtype", a.dtype}, {"elementwise", out}});
  return 0;
}

// What `strata-gpu run` adds to `strata run`'s options: debugging aids.
struct GpuRunOpts {
  bool noGraphs = false;
  std::string dumpDir, dumpMatch;
};

// `strata-gpu run DIR`: `strata run` on an artifact compiled for the GPU,
// with token ids in and out (this tool links no tokenizer).
int runModel(const tools::RunOpts& o, const GpuRunOpts& g) {
  tools::checkRunOpts(o);
  runtime::Artifact a = runtime::loadArtifact(o.model, {o.weightsDir});
  tools::checkArtifactRun(o, a);
  const int64_t blockSize = a.blockSize;
  runtime::CudaModel m = runtime::loadCudaModel(
      std::move(a), {.verbose = !o.json, .graphs = !g.noGraphs, .dumpDir = g.dumpDir, .dumpMatch = g.dumpMatch});
  return tools::runPrompts(*m.exec, blockSize, o, {{o.promptIds, tools::parsePromptIds(o.promptIds)}}, {});
}

struct BenchModelOpts {
  std::string dir, weightsDir, json;
  std::optional<uint64_t> randomWeights;
  std::vector<int64_t> prompts = {128, 2048}, batches = {1, 8, 32};
  int64_t context = 128, steps = 32;
  bool profile = false, noGraphs = false, sampling = false;
};

// GPU time per region kind of the steps `work` runs (CudaExecutor's
// profiling), per step, as a table and JSON.
nlohmann::json profileSteps(const runtime::CudaExecutor& exec, const std::string& what, int64_t steps,
                            const std::function<void()>& work) {
  exec.setProfiling(true);
  work();
  exec.setProfiling(false);
  auto rows = exec.takeProfile();
  double total = 0;
  for (const auto& [label, r] : rows) total += r.ms;
  std::printf("\nprofile: %s (GPU ms per step, each node timed alone)\n", what.c_str());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [label, r] : rows) {
    std::printf("  %-26s %8lld calls %9.3f ms %5.1f %%\n", label.c_str(), (long long)(r.calls / steps), r.ms / steps,
                100 * r.ms / total);
    out.push_back({{"region", label}, {"calls_per_step", r.calls / steps}, {"ms_per_step", r.ms / steps}});
  }
  std::printf("  %-26s %24.3f ms\n", "total", total / steps);
  return {{"what", what}, {"rows", out}, {"ms_per_step", total / steps}};
}

// End to end on the GPU: time to first token (one prefill step of a
// batch-1 prompt, logits on the host) and decode ms per step at each
// batch, next to the HBM roofline (weight bytes a step reads / a device
// copy's bandwidth, bytes read + written, measured here).
int benchModel(const BenchModelOpts& o) {
  runtime::Artifact a = runtime::loadArtifact(o.dir, {o.weightsDir, !o.randomWeights});
  if (!a.cuda()) fail("{} is compiled for {}, not for a GPU", o.dir, a.target);
  const int64_t bs = a.blockSize;
  runtime::CudaModel m =
      runtime::loadCudaModel(std::move(a), {.randomWeights = o.randomWeights, .verbose = true, .graphs = !o.noGraphs});
  const runtime::CudaExecutor& exec = *m.exec;
  runtime::CudaDevice& dev = *m.device;
  const size_t copyBytes = size_t(1) << 30;
  void* src = dev.allocate(copyBytes);
  void* dst = dev.allocate(copyBytes);
  dev.copy(dst, src, copyBytes);
  float copyMs = 1e30f;
  for (int r = 0; r < 5; ++r) copyMs = std::min(copyMs, dev.timeMs([&] { dev.copy(dst, src, copyBytes); }));
  dev.release(src, copyBytes);
  dev.release(dst, copyBytes);
  const double bw = 2.0 * copyBytes / (copyMs * 1e-3);
  const ops::GraphDef& g = exec.graph();
  std::printf("device: %s; model %s, %.2f GB of %s weights%s; KV blocks of %lld; copy %.0f GB/s\n",
              dev.deviceName().c_str(), g.source.c_str(), exec.weightBytes() / 1e9,
              ops::dtypeName(exec.cacheDType()), o.randomWeights ? " (random)" : "", (long long)bs, bw / 1e9);
  runtime::timePagedModel(exec, 1, 16, 2, bs, 0);  // warm-up: first launches, the pool's blocks
  nlohmann::json ttft = nlohmann::json::array(), decode = nlohmann::json::array();
  // Best of 3, and the first of them apart: the first prompt of a length
  // also pays what the runtime does once per shape (tensor maps over its
  // activations, buffers).
  std::printf("%-28s %10s %10s\n", "time to first token", "ms", "first ms");
  for (int64_t p : o.prompts) {
    double best = 1e30, first = 0;
    for (int r = 0; r < 3; ++r) {
      const double ms = runtime::timePagedModel(exec, 1, p, 0, bs, r).prefillMs;
      if (r == 0) first = ms;
      best = std::min(best, ms);
    }
    std::printf("  prompt %-19lld %10.2f %10.2f\n", (long long)p, best, first);
    ttft.push_back({{"prompt_tokens", p}, {"ttft_ms", best}, {"first_ttft_ms", first}});
  }
  std::printf("%-8s %-10s %12s %12s %12s %10s\n", "batch", "context", "ms/step", "tokens/s", "roofline ms", "fraction");
  for (int64_t b : o.batches) {
    runtime::ModelTiming t = runtime::timePagedModel(exec, b, o.context, o.steps, bs, 1);
    const double roof =
        runtime::weightBytesPerStep(g, b, ops::dtypeSize(exec.cacheDType())) / bw * 1e3;
    std::printf("%-8lld %-10lld %12.2f %12.1f %12.2f %10.2f\n", (long long)b, (long long)o.context, t.msPerStep,
                b * 1e3 / t.msPerStep, roof, roof / t.msPerStep);
    decode.push_back({{"batch", b}, {"context", o.context}, {"steps", o.steps}, {"ms_per_step", t.msPerStep},
                      {"tokens_per_s", b * 1e3 / t.msPerStep}, {"roofline_ms", roof}});
  }
  std::printf("roofline: weight bytes one decode step reads / copy bandwidth; fraction = roofline / measured\n");
  nlohmann::json sampled = nlohmann::json::array();
  if (o.sampling) {
    // Two common settings; random weights give flat logits, so top-p's
    // nucleus is most of the vocabulary and every draw takes its whole
    // row (the worst case), while top-k settles on the candidates.
    // A repetition penalty over the prompt and the tokens so far is a
    // third, on greedy draws.
    runtime::SamplingParams topK, topP, penalty;
    topK.greedy = topP.greedy = false;
    topK.temperature = topP.temperature = 0.8f;
    topK.topK = 50;
    topP.topP = 0.95f;
    penalty.repetitionPenalty = 1.2f;
    std::printf("%-8s %-32s %12s\n", "batch", "sampling", "ms/step");
    for (int64_t b : o.batches)
      for (const auto& [label, p] : {std::pair{"temperature 0.8, top-k 50", topK}, std::pair{"temperature 0.8, top-p 0.95", topP},
                                     std::pair{"greedy, repetition penalty 1.2", penalty}}) {
        runtime::ModelTiming t = runtime::timePagedModel(exec, b, o.context, o.steps, bs, 1, {}, p);
        std::printf("%-8lld %-32s %12.2f\n", (long long)b, label, t.msPerStep);
        sampled.push_back({{"batch", b}, {"context", o.context}, {"steps", o.steps}, {"sampling", label},
                           {"ms_per_step", t.msPerStep}});
      }
  }
  nlohmann::json profiles = nlohmann::json::array();
  if (o.profile) {
    for (int64_t p : o.prompts)
      profiles.push_back(profileSteps(exec, fmt::format("prefill of {} tokens", p), 1,
                                      [&] { runtime::timePagedModel(exec, 1, p, 0, bs, 0); }));
    for (int64_t b : o.batches)
      profiles.push_back(profileSteps(exec, fmt::format("decode at batch {}", b), 4, [&] {
        runtime::timePagedModel(exec, b, o.context, 4, bs, 0, [&] { exec.takeProfile(); });  // decode steps only
      }));
  }
  writeResults(o.json, {{"profiles", profiles}, {"device", dev.deviceName()}, {"model", g.source}, {"dtype", ops::dtypeName(exec.cacheDType())},
                        {"weight_bytes", exec.weightBytes()}, {"random_weights", o.randomWeights.has_value()},
                        {"graphs", !o.noGraphs},
                        {"block_size", bs}, {"copy_gbs", bw / 1e9}, {"ttft", ttft}, {"decode", decode},
                        {"decode_sampled", sampled}});
  return 0;
}

struct BenchAllOpts {
  std::string kernels, out, dtype = "bf16", artifact, config, scripts;
  int reps = 0;
  bool check = false;
};

// Every GPU table against its peers in one call. The peers (cuBLAS and
// Triton through PyTorch, SDPA, HF transformers) are Python libraries, so
// the driver is tools/gpu/bench_all.py, run with this binary as strata's
// side; the process becomes the script (its output and exit status are
// the call's). The scripts are the repository's tools/gpu: --scripts, or
// the nearest folder above this binary that has them (build/bin, .gpu/x).
int benchAll(const BenchAllOpts& o) {
  namespace fs = std::filesystem;
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path inRepo = fs::path("tools") / "gpu" / "bench_all.py";
  fs::path script = o.scripts.empty() ? fs::path() : fs::path(o.scripts) / "bench_all.py";
  for (fs::path d = self.parent_path(); script.empty() && d.has_relative_path(); d = d.parent_path())
    if (fs::is_regular_file(d / inRepo)) script = d / inRepo;
  if (script.empty() || !fs::is_regular_file(script))
    throw Error(fmt::format("bench-all: no {} (pass --scripts with the repository's tools/gpu folder)",
                            script.empty() ? inRepo.string() + " in a folder above " + self.string() : script.string()));
  if (o.artifact.empty() != o.config.empty())
    throw Error("bench-all: --artifact and --config go together (the compiled model and the HF config it came from)");
  if (o.check && o.artifact.empty()) throw Error("bench-all: --check needs --artifact and --config (the model to check)");
  std::vector<std::string> args{"python3", script.string(), "--strata-gpu", self.string(), "--kernels", o.kernels,
                                "--out", o.out, "--dtype", o.dtype};
  if (o.reps > 0) args.insert(args.end(), {"--reps", std::to_string(o.reps)});
  if (!o.artifact.empty()) args.insert(args.end(), {"--artifact", o.artifact, "--config", o.config});
  if (o.check) args.push_back("--check");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp("python3", argv.data());
  throw Error(fmt::format("bench-all: could not run python3 {}: {}", script.string(), std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata-gpu: run models compiled for the GPU and time strata's generated GPU kernels (runtime only, no LLVM)"};
  app.require_subcommand(1);
  std::string dir, json, dtype = "bf16";
  int reps = 20;
  // Every bench subcommand takes the same options.
  auto benchCommand = [&](const char* name, const char* what, const char* dtypes) {
    CLI::App* c = app.add_subcommand(name, what);
    c->add_option("--kernels", dir, "Kernel set directory from `strata compile-kernels`")->required();
    c->add_option("--json", json, "Also write the results to this JSON file");
    c->add_option("--dtype", dtype, dtypes)->capture_default_str();
    c->add_option("--reps", reps, "Timed launches per case")->capture_default_str();
    return c;
  };
  auto* bench = benchCommand("bench-gemm",
                             "Time the generated GEMM kernels on Llama-3-8B projection shapes (decode M = 1..256, "
                             "prefill M = 2048) and the SwiGLU kernel on the gate / up projection",
                             "bf16 or f16");
  std::vector<int64_t> gemmRows{1, 16, 64, 256, 2048}, gemmEpilogueRows{256, 2048};
  bench->add_option("--rows", gemmRows, "M of the plain GEMMs")->capture_default_str();
  bench->add_option("--epilogue-rows", gemmEpilogueRows, "M of the SwiGLU and residual GEMMs")->capture_default_str();
  int64_t gemmKSplits = 0;
  bench->add_option("--k-splits", gemmKSplits,
                    "Split K across this many programs in kernels that can (compiled with a +k blocking) instead "
                    "of the runtime's choice (for tuning)");
  bool coldWeights = false;
  bench->add_flag("--cold-weights", coldWeights,
                  "Cycle each case's launches through copies of its weights (256 MiB in all at least), so they are "
                  "read from HBM as in a model's decode step, not from the L2 where one copy fits");
  bool tightA = false;
  bench->add_flag("--tight-a", tightA,
                  "Give each case an A buffer of just M rows, so that TMA kernels zero-fill the rows of their last "
                  "row block past M (by default A holds whole row blocks, as the model's activations do)");
  auto* norm = benchCommand("bench-rmsnorm", "Time the generated RMSNorm kernels at hidden 4096 (1..4096 rows)",
                            "f32, bf16 or f16");
  auto* rope = benchCommand("bench-rope", "Time the generated RoPE kernels on Llama-3-8B q and k rows (1..4096 tokens)",
                            "bf16 or f16");
  auto* attn = benchCommand("bench-attention",
                            "Time the generated FlashAttention-2 kernels (head dim 64 / 128, seq 1k..16k, causal and "
                            "not; Llama-3-8B GQA prefill, contiguous and from a paged cache)",
                            "bf16 or f16");
  bool everyKernel = false;
  attn->add_flag("--every-kernel", everyKernel,
                 "Time every attention and paged prefill kernel of the set on its shapes, not only the one the "
                 "runtime picks for each case (for tuning)");
  double splitScale = 1;
  auto* paged = benchCommand("bench-paged-decode",
                             "Time the generated paged decode attention kernels (Llama-3-8B: 32 / 8 heads, dim 128, "
                             "pages of 16) at batch 1..64, context 1k..32k",
                             "bf16 or f16");
  paged->add_option("--split-scale", splitScale, "Multiply the runtime's KV split count by this (for tuning)")
      ->capture_default_str();
  std::vector<int64_t> pagedBatches{1, 8, 32, 64}, pagedContexts{1024, 4096, 16384, 32768};
  paged->add_option("--batches", pagedBatches, "Sequences per step")->capture_default_str();
  paged->add_option("--contexts", pagedContexts, "Tokens of context per sequence (whole pages)")->capture_default_str();
  bool pagedStamps = false;
  paged->add_flag("--stamps", pagedStamps,
                  "The set's bf16 split kernel was instrumented by tools/gpu/stamp_paged_decode.py: print its "
                  "programs' phases from the stamps they write (an experiment's view; time uninstrumented sets)");
  int64_t minCols = 4096;
  auto* elementwise = benchCommand("bench-elementwise",
                                   "Time the fused elementwise kernels of a compiled graph (--kernels: its artifact "
                                   "directory) at rows 1..4096",
                                   "ignored: the artifact's storage type");
  elementwise->add_option("--min-cols", minCols, "Only rows at least this wide")->capture_default_str();
  BenchAllOpts ba;
  auto* all = app.add_subcommand(
      "bench-all", "Every GPU table against its peers in one call (GEMM vs cuBLAS and Triton, RMSNorm vs PyTorch, RoPE "
                   "vs HF eager, attention vs SDPA FlashAttention-2 and cuDNN, paged decode vs the copy bandwidth and "
                   "SDPA; with --artifact and --config the model end to end vs HF eager): runs "
                   "tools/gpu/bench_all.py, which needs python3 with torch, triton and transformers");
  all->add_option("--kernels", ba.kernels, "Kernel set directory from `strata compile-kernels`")->required();
  all->add_option("--out", ba.out, "Directory for each table's JSON")->required();
  all->add_option("--dtype", ba.dtype, "bf16 or f16")->capture_default_str();
  all->add_option("--reps", ba.reps, "Timed launches per case (default: each table's own)");
  all->add_option("--artifact", ba.artifact, "A model from `strata compile MODEL --target cuda:sm_90`: also time it end to end");
  all->add_option("--config", ba.config, "The HF config.json the artifact was compiled from (for HF eager)");
  all->add_flag("--check", ba.check,
                "With --artifact: also check the model's log-probabilities against HF in f32 with the same random "
                "weights, beside HF's bf16 (tools/gpu/check_model.py; writes the weights under "
                "/tmp/strata-check-weights, 16 GB for Llama-3-8B)");
  all->add_option("--scripts", ba.scripts,
                  "The repository's tools/gpu folder (default: the nearest folder above this binary that has it)");
  tools::RunOpts ro;
  ro.backend = "cuda";
  auto* run = app.add_subcommand("run", "Generate tokens on the GPU from a model compiled with `strata compile MODEL "
                                        "--target cuda:sm_90 -o DIR` (token ids in and out)");
  tools::addRunOptions(run, ro, /*text=*/false);
  GpuRunOpts gro;
  run->add_flag("--no-graphs", gro.noGraphs, "Run every step node by node (no CUDA graph replays of repeated steps)");
  run->add_option("--dump-values", gro.dumpDir,
                  "Debugging: write the node outputs of every step as f32 under DIR/step-<n>/ with an index.json of "
                  "their shapes (steps then run without graphs)");
  run->add_option("--dump-match", gro.dumpMatch,
                  "With --dump-values: only the outputs whose names match this regular expression (default: all; "
                  "e.g. 'mlp\\.residual' for each layer's output)");
  BenchModelOpts bm;
  auto* benchModelCmd = app.add_subcommand(
      "bench-model", "End to end on the GPU: time to first token and decode ms/step of a compiled model against the "
                     "HBM roofline");
  benchModelCmd->add_option("DIR", bm.dir, "Artifact directory from strata compile --target cuda:sm_90")->required();
  benchModelCmd->add_option("--weights", bm.weightsDir, "The model's weight files are now in this folder");
  benchModelCmd->add_option("--random-weights", bm.randomWeights,
                            "Make the weights on the host with this seed instead of reading the files (which then "
                            "need not exist)");
  benchModelCmd->add_option("--prompts", bm.prompts, "Prompt lengths for time to first token")->capture_default_str();
  benchModelCmd->add_option("--batches", bm.batches, "Batch sizes for decode")->capture_default_str();
  benchModelCmd->add_option("--context", bm.context, "Prompt tokens of each sequence before decode")
      ->capture_default_str();
  benchModelCmd->add_option("--steps", bm.steps, "Timed decode steps")->capture_default_str();
  benchModelCmd->add_option("--json", bm.json, "Also write the results to this JSON file");
  benchModelCmd->add_flag("--no-graphs", bm.noGraphs,
                          "Launch every kernel of every step instead of replaying repeated steps as CUDA graphs");
  benchModelCmd->add_flag("--sampling", bm.sampling,
                          "Also time decode with sampling (temperature 0.8 with top-k 50, and with top-p 0.95; greedy with a "
                          "repetition penalty of 1.2) at "
                          "each batch");
  benchModelCmd->add_flag("--profile", bm.profile,
                          "Also time every region on the GPU (one prefill per prompt length, decode steps per batch)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  try {
    if (run->parsed()) return runModel(ro, gro);
    if (benchModelCmd->parsed()) return benchModel(bm);
    if (bench->parsed()) return benchGemm(dir, json, dtype, reps, gemmRows, gemmEpilogueRows, gemmKSplits, coldWeights, tightA);
    if (norm->parsed()) return benchRmsNorm(dir, json, dtype, reps);
    if (rope->parsed()) return benchRope(dir, json, dtype, reps);
    if (attn->parsed()) return benchAttention(dir, json, dtype, reps, everyKernel);
    if (paged->parsed()) return benchPagedDecode(dir, json, dtype, reps, splitScale, pagedBatches, pagedContexts, pagedStamps);
    if (elementwise->parsed()) return benchElementwise(dir, json, reps, minCols);
    if (all->parsed()) return benchAll(ba);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
