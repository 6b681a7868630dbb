// What merging a batch-1 paged decode step's splits costs, measured on
// stand-in kernels with no attention math: the question behind the "merge"
// rows of docs/cuda.md's paged decode sections.
//
// A step reads `bytes` (a sequence's K and V at some context: 4 MiB at 1k,
// 16 MiB at 4k) split over G = 8 KV heads x S splits, one program each,
// and every program writes a partial result of the shape strata's split
// kernel writes (acc [4, 128] f32, m and l [4]). Three ways to finish the
// step, each timed as N steps in one CUDA graph with programmatic
// dependent launch between the kernels (as the runtime launches them):
//
//   split   the split kernel alone (no merge: the floor of the other two);
//   combine the split kernel, then a combine kernel of G x 4 one-warp
//           programs (one per query head) that waits for the split grid
//           (griddepcontrol.wait) and merges S partial rows;
//   fused   the split kernel's programs arrive at a counter of their KV
//           head after storing their partials; the first 4 programs of
//           each head then wait for the count to reach S and each merges
//           one query head, as the combine would. Needs every program of
//           the grid resident at once (checked with the occupancy API).
//   flagged one kernel of S + 4 programs a KV head: the S split programs
//           store their partials (relaxed, at GPU scope) and return; the
//           4 more, one warp per query head, poll those partials until
//           no element holds the sentinel bit pattern 0xffffffff (a NaN
//           that arithmetic never makes), merge them as the combine does,
//           store o and write the sentinel back for the next step. No
//           counter, no fence, no second grid; waits and signals as
//           "late" does. Needs every program resident at once.
//
// "split" and "combine" run twice: "late" waits for the previous grid at
// the kernel's entry and signals the next at its return (how strata's
// kernels did until 2026-11-24); otherwise the split kernel's reads go out
// before its wait and both kernels signal at entry. The stand-in reads the
// same bytes every step, so the early form overlaps the reads of
// consecutive steps: its figures bound what a merge costs, not what one
// step takes. Raw results: docs/bench/2026-11-24-h100-merge-floor.txt.
//
//   nvcc -O3 -arch=sm_90a -o bench_merge_floor tools/gpu/bench_merge_floor.cu
//   ./bench_merge_floor [--paged] [bytes_mib splits warps]...
//
// --paged reads as strata's paged cache is read: the context length first
// (the loop's bound), then each 4 KiB page's index from a shuffled table.
//
// An experiment's harness, not part of bench_all.py: prints one table.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_check.h"

constexpr int G = 8, H = 4, D = 128;

struct Args {
  const uint4* kv;
  int per;  // uint4s each program reads
  float* pacc;  // [G][S][H][D]
  float* pm;    // [G][S][H]
  float* pl;
  float* out;  // [G][H][D]
  unsigned* arrive;  // [G]
  unsigned* depart;  // [G]
  int S;
  // --paged: the program first reads the context length (its loop bound),
  // then each 4 KiB page's index from a shuffled table, as strata's paged
  // cache is read; null: contiguous reads.
  const int* lens;
  const int* table;  // [G * S * pages a program]
};

__device__ __forceinline__ void waitPrimary() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void launchDependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

__device__ __forceinline__ unsigned ldAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Reads this program's share and writes its partials (warp 0 writes). With
// `early`, the reads go out before the wait for the previous grid (which
// may still read the partials); otherwise the program waits first.
__device__ __forceinline__ void stRelaxed(float* p, float v) {
  asm volatile("st.relaxed.gpu.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void stRelaxed4(float* p, float4 v) {
  asm volatile("st.relaxed.gpu.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}
__device__ __forceinline__ float ldRelaxed(const float* p) {
  float v;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ float4 ldRelaxed4(const float* p) {
  float4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
constexpr unsigned kSentinel = 0xffffffffu;
#ifndef POLL_PAUSE_NS
#define POLL_PAUSE_NS 100
#endif
constexpr unsigned kPollPauseNs = POLL_PAUSE_NS;
__device__ __forceinline__ bool isSentinel(float x) { return __float_as_uint(x) == kSentinel; }

template <bool early, bool relaxed = false>
__device__ void splitPart(const Args& a, int g, int s) {
  if (!early) waitPrimary();
  const int t = threadIdx.x, n = blockDim.x;
  unsigned x = 0;
  if (a.table) {
    constexpr int kPage = 256;  // uint4s a page
    const int per = min(a.per, __ldg(a.lens));
    const int* pages = a.table + (size_t(g) * a.S + s) * (a.per / kPage);
#pragma unroll 8
    for (int i = t; i < per; i += n) {
      uint4 v = __ldg(a.kv + size_t(__ldg(pages + i / kPage)) * kPage + i % kPage);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  } else {
    const uint4* p = a.kv + (size_t(g) * a.S + s) * a.per;
#pragma unroll 8
    for (int i = t; i < a.per; i += n) {
      uint4 v = __ldg(p + i);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  __shared__ unsigned red[32];
  x = __reduce_xor_sync(0xffffffffu, x);
  if ((t & 31) == 0) red[t >> 5] = x;
  __syncthreads();
  if (t >= 32) return;
  x = t < n / 32 ? red[t] : 0;
  x = __reduce_xor_sync(0xffffffffu, x);
  if (early) waitPrimary();  // the previous step may still read the partials
  const size_t base = (size_t(g) * a.S + s) * H;
  const float f = float(x & 255) * (1.0f / 256.0f);
  for (int h = 0; h < H; ++h) {
    const float4 v = make_float4(f, f + 1, f + 2, f + h);
    if (relaxed)
      stRelaxed4(a.pacc + (base + h) * D + 4 * t, v);
    else
      reinterpret_cast<float4*>(a.pacc + (base + h) * D)[t] = v;
  }
  if (t < H) {
    if (relaxed) {
      stRelaxed(a.pm + base + t, f - float(s & 7));
      stRelaxed(a.pl + base + t, 1.0f + f);
    } else {
      a.pm[base + t] = f - float(s & 7);
      a.pl[base + t] = 1.0f + f;
    }
  }
}

// What one warp's merge does once the partials of query head h of KV head
// g are in registers (lane s: split s's m and l, live below S; v: 4 columns
// of every split's row, weighted 0 from split S on): store o.
__device__ void storeMerged(const Args& a, int g, int h, float m, float l, bool live, const float4 (&v)[32]) {
  const int lane = threadIdx.x;
  float mx = m;
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  const float w = live ? exp2f(m - mx) : 0.0f;
  float L = w * l;
  for (int o = 16; o; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
  float4 acc = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    const float ws = __shfl_sync(0xffffffffu, w, s);  // 0 past the last split
    acc.x += ws * v[s].x, acc.y += ws * v[s].y, acc.z += ws * v[s].z, acc.w += ws * v[s].w;
  }
  const float r = 1.0f / L;
  reinterpret_cast<float4*>(a.out + (size_t(g) * H + h) * D)[lane] =
      make_float4(acc.x * r, acc.y * r, acc.z * r, acc.w * r);
}

// One warp merges the S partial rows of query head h of KV head g (S <= 32):
// lane s holds split s's m and l; each lane holds 4 columns of the sum.
__device__ void mergeHead(const Args& a, int g, int h) {
  const int lane = threadIdx.x;
  const size_t base = size_t(g) * a.S * H + h;
  const bool live = lane < a.S;
  const float m = live ? __ldcg(a.pm + base + size_t(lane) * H) : -INFINITY;
  const float l = live ? __ldcg(a.pl + base + size_t(lane) * H) : 0.0f;
  // Every split's row first (independent loads: one wait), then the sums.
  float4 v[32];
#pragma unroll
  for (int s = 0; s < 32; ++s)
    v[s] = __ldcg(reinterpret_cast<const float4*>(a.pacc + (base + size_t(min(s, a.S - 1)) * H) * D) + lane);
  storeMerged(a, g, h, m, l, live, v);
}

// `early`: reads before the wait, and the next grid may be scheduled at
// once; otherwise wait first and let the next grid in only at the end (how
// strata's kernels start and end).
template <bool early>
__global__ void splitKernel(Args a) {
  if (early) launchDependents();
  splitPart<early>(a, blockIdx.y, blockIdx.x);
  if (!early) launchDependents();
}

template <bool early>
__global__ void combineKernel(Args a) {
  if (early) launchDependents();
  waitPrimary();
  mergeHead(a, blockIdx.x / H, blockIdx.x % H);
  if (!early) launchDependents();
}

__global__ void fusedKernel(Args a) {
  launchDependents();
  const int g = blockIdx.y, s = blockIdx.x;
  splitPart<true>(a, g, s);
  if (threadIdx.x >= 32) return;
  __syncwarp();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(a.arrive + g, 1u);
  }
  if (s >= H) return;
  if (threadIdx.x == 0)
    while (ldAcquire(a.arrive + g) < unsigned(a.S)) {
    }
  __syncwarp();
  mergeHead(a, g, s);
  __syncwarp();
  // The last of the H merging programs resets the counters for the next step.
  if (threadIdx.x == 0 && atomicAdd(a.depart + g, 1u) == H - 1) {
    a.arrive[g] = 0;
    a.depart[g] = 0;
    __threadfence();
  }
}

// The flagged form's merge: storeMerged on partials polled until no
// element is the sentinel, which the merge then writes back (the next
// step's split programs store only after their grid wait, so after this).
__device__ void pollAndMergeHead(const Args& a, int g, int h) {
  const int lane = threadIdx.x;
  const size_t base = size_t(g) * a.S * H + h;
  const bool live = lane < a.S;
  // One round of loads: this lane's split's m and l, and every pending
  // row's 4 columns; the check after it; again for what was not all there.
  float m = -INFINITY, l = 0.0f;
  bool mlPending = live;
  float4 v[32];  // rows from split S on stay 0 (weighted 0 in the sums)
#pragma unroll
  for (int s = 0; s < 32; ++s) v[s] = make_float4(0, 0, 0, 0);
  unsigned pending = a.S == 32 ? 0xffffffffu : (1u << a.S) - 1;
  for (bool first = true; pending || mlPending; first = false) {
    // Between rounds a pause, so the polls take little of the L2 from the
    // split programs' reads.
    if (!first) __nanosleep(kPollPauseNs);
    if (mlPending) m = ldRelaxed(a.pm + base + size_t(lane) * H), l = ldRelaxed(a.pl + base + size_t(lane) * H);
#pragma unroll
    for (int s = 0; s < 32; ++s)
      if (pending >> s & 1) v[s] = ldRelaxed4(a.pacc + (base + size_t(s) * H) * D + 4 * lane);
    if (mlPending && !isSentinel(m) && !isSentinel(l)) mlPending = false;
#pragma unroll
    for (int s = 0; s < 32; ++s)
      if ((pending >> s & 1) && !isSentinel(v[s].x) && !isSentinel(v[s].y) && !isSentinel(v[s].z) &&
          !isSentinel(v[s].w))
        pending &= ~(1u << s);
  }
  storeMerged(a, g, h, m, l, live, v);
  const float sentinel = __uint_as_float(kSentinel);
  for (int s = 0; s < a.S; ++s)
    reinterpret_cast<float4*>(a.pacc + (base + size_t(s) * H) * D)[lane] = make_float4(sentinel, sentinel, sentinel, sentinel);
  if (live) a.pm[base + size_t(lane) * H] = sentinel, a.pl[base + size_t(lane) * H] = sentinel;
}

__global__ void flaggedKernel(Args a) {
  const int g = blockIdx.y, s = blockIdx.x;
  if (s < a.S) {
    splitPart<false, true>(a, g, s);
  } else {
    waitPrimary();
    if (threadIdx.x < 32) pollAndMergeHead(a, g, s - a.S);
  }
  launchDependents();
}

__global__ void emptyKernel(Args) { launchDependents(); }

enum Mode { kEmpty, kSplit, kCombine, kSplitLate, kCombineLate, kFused, kFlagged };

static void launch(cudaStream_t st, void (*k)(Args), dim3 grid, int threads, const Args& a) {
  cudaLaunchConfig_t c{};
  c.gridDim = grid;
  c.blockDim = dim3(threads);
  c.stream = st;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  c.attrs = at;
  c.numAttrs = 1;
  CK(cudaLaunchKernelEx(&c, k, a));
}

static void step(cudaStream_t st, Mode m, const Args& a, int threads) {
  const dim3 grid(a.S, G);
  switch (m) {
    case kEmpty: launch(st, emptyKernel, dim3(1), 32, a); break;
    case kSplit: launch(st, splitKernel<true>, grid, threads, a); break;
    case kCombine:
      launch(st, splitKernel<true>, grid, threads, a);
      launch(st, combineKernel<true>, dim3(G * H), 32, a);
      break;
    case kSplitLate: launch(st, splitKernel<false>, grid, threads, a); break;
    case kCombineLate:
      launch(st, splitKernel<false>, grid, threads, a);
      launch(st, combineKernel<false>, dim3(G * H), 32, a);
      break;
    case kFused: launch(st, fusedKernel, grid, threads, a); break;
    case kFlagged: launch(st, flaggedKernel, dim3(a.S + H, G), threads, a); break;
  }
}

// Microseconds a step: N steps captured in one graph, best of `reps` replays.
static double timeSteps(Mode m, const Args& a, int threads) {
  constexpr int N = 64, reps = 30;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t gr;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < N; ++i) step(st, m, a, threads);
  CK(cudaStreamEndCapture(st, &gr));
  cudaGraphExec_t ex;
  CK(cudaGraphInstantiate(&ex, gr, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(ex, st));
  CK(cudaStreamSynchronize(st));
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ex, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CK(cudaGraphExecDestroy(ex));
  CK(cudaGraphDestroy(gr));
  CK(cudaStreamDestroy(st));
  return t[reps / 2] * 1e3 / N;
}

int main(int argc, char** argv) {
  std::vector<int> cfg;  // (MiB, splits, warps) triples
  bool paged = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--paged")
      paged = true;
    else
      cfg.push_back(std::atoi(argv[i]));
  if (cfg.empty()) cfg = {4, 16, 1, 4, 16, 4, 4, 32, 4, 16, 32, 1, 16, 32, 4, 16, 16, 4};
  if (cfg.size() % 3) {
    std::fprintf(stderr, "usage: bench_merge_floor [--paged] [bytes_mib splits warps]...\n");
    return 2;
  }
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t maxBytes = size_t(*std::max_element(cfg.begin(), cfg.end())) << 20;
  uint4* kv;
  CK(cudaMalloc(&kv, maxBytes * 2));
  CK(cudaMemset(kv, 1, maxBytes * 2));
  float *pacc, *pm, *pl, *out;
  CK(cudaMalloc(&pacc, size_t(G) * 64 * H * D * 4));
  CK(cudaMalloc(&pm, G * 64 * H * 4));
  CK(cudaMalloc(&pl, G * 64 * H * 4));
  CK(cudaMalloc(&out, G * H * D * 4));
  unsigned* counters;
  CK(cudaMalloc(&counters, 2 * G * 4));
  CK(cudaMemset(counters, 0, 2 * G * 4));
  int *table, *lens;
  CK(cudaMalloc(&table, maxBytes / 4096 * 4));
  CK(cudaMalloc(&lens, 4));
  const int allOfIt = 1 << 30;
  CK(cudaMemcpy(lens, &allOfIt, 4, cudaMemcpyHostToDevice));
  if (paged) std::printf("paged: a length, then a shuffled table of 4 KiB pages\n");
  std::printf("| MiB | splits | warps | empty us | split, late us | split+combine, late us | flagged us | combine costs, late | flagged costs | split us | split+combine us | fused us | combine costs | fused costs |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < cfg.size(); i += 3) {
    const size_t bytes = size_t(cfg[i]) << 20;
    const int S = cfg[i + 1], threads = 32 * cfg[i + 2];
    if (S > 32) {
      std::fprintf(stderr, "at most 32 splits\n");
      return 2;
    }
    Args a{kv, int(bytes / 16 / (G * S)), pacc, pm, pl, out, counters, counters + G, S, nullptr, nullptr};
    if (paged) {
      // The step's 4 KiB pages in a shuffled order; a length that keeps
      // every page (the load is what counts).
      std::vector<int> order(bytes / 4096);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937(7));
      CK(cudaMemcpy(table, order.data(), order.size() * 4, cudaMemcpyHostToDevice));
      a.table = table, a.lens = lens;
    }
    int perSm, perSmFlagged;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, fusedKernel, threads, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSmFlagged, flaggedKernel, threads, 0));
    const bool fusedOk = perSm * sms >= G * S, flaggedOk = perSmFlagged * sms >= G * (S + H);
    const double e = timeSteps(kEmpty, a, threads), sl = timeSteps(kSplitLate, a, threads),
                 cl = timeSteps(kCombineLate, a, threads), sp = timeSteps(kSplit, a, threads);
    const double co = timeSteps(kCombine, a, threads);
    std::vector<float> want(G * H * D), got(G * H * D);
    CK(cudaMemcpy(want.data(), out, want.size() * 4, cudaMemcpyDeviceToHost));
    auto check = [&](const char* what) {
      CK(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost));
      if (want != got) {
        std::fprintf(stderr, "%s and combine results differ (%d MiB, %d splits)\n", what, cfg[i], S);
        std::exit(1);
      }
    };
    CK(cudaMemset(out, 0, got.size() * 4));
    const double fu = fusedOk ? timeSteps(kFused, a, threads) : 0;
    if (fusedOk) check("fused");
    CK(cudaMemset(out, 0, got.size() * 4));
    // The flagged form's partials start as the sentinel; each step leaves them so.
    CK(cudaMemset(pacc, 0xff, size_t(G) * 64 * H * D * 4));
    CK(cudaMemset(pm, 0xff, G * 64 * H * 4));
    CK(cudaMemset(pl, 0xff, G * 64 * H * 4));
    const double fl = flaggedOk ? timeSteps(kFlagged, a, threads) : 0;
    if (flaggedOk) check("flagged");
    std::printf("| %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", cfg[i], S,
                cfg[i + 2], e, sl, cl, fl, cl - sl, flaggedOk ? fl - sl : 0.0, sp, co, fu, co - sp, fusedOk ? fu - sp : 0.0);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
