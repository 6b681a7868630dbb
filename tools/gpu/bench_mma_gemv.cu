// Could batch 2-16 decode GEMMs read their weights as fast as the batch-1
// GEMV does? A stand-in kernel answers before the tile compiler is taught
// the form: the question behind docs/cuda.md's "A tensor-core GEMV for 2-16
// rows, measured on a stand-in".
//
// The GEMV form (M = 1) streams each weight row in 16-byte vectors a lane
// from many short programs. strata's decode class (2-16 rows) stages its
// operands through shared memory and reads them at 2.5-2.7 TB/s, and every
// unstaged mma blocking tried was slower (docs/cuda.md, "The decode
// class's blockings with weights from HBM"). This stand-in streams the
// weights like the GEMV and still uses the tensor cores: mma.m16n8k16 with
// K permuted so that a lane's 16-byte vector of 8 adjacent K elements holds
// its fragments of two mmas (slot 2t + j + 8h of mma c takes K position
// 8t + 4c + 2h + j of the 32-element chunk; A and B share the order, so the
// sum is unchanged). A lane (g = lane / 4, t = lane % 4) loads weight row
// n0 + g and A rows g and g + 8 (rows past M: zeros, no load) at K 8t.. of
// each chunk. A program has W warps over 8 NT weight rows; the warps take
// interleaved KW-element slices of K and sum their accumulators through
// shared memory at the end.
//
// Each case cycles its launches through copies of the weights (256 MiB in
// all), so they come from HBM as in a decode step (strata-gpu bench-gemm
// --cold-weights does the same), and is checked against a plain f32 kernel.
//
//   nvcc -O3 -arch=sm_90a -o bench_mma_gemv tools/gpu/bench_mma_gemv.cu
//   ./bench_mma_gemv [M...]
//
// An experiment's harness, not part of bench_all.py: prints one table.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

using bf16 = __nv_bfloat16;

__device__ __forceinline__ uint4 streamLoad(const bf16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// C [M, N] = A [M, K] x B [N, K]^T, M <= 16, K a multiple of W KW, N of 8 NT.
template <int NT, int KW, int W>
__global__ void __launch_bounds__(32 * W) mmaGemv(const bf16* A, const bf16* B, bf16* C, int M, int N, int K) {
  constexpr int CH = KW / 32;
  __shared__ float part[W][NT * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * 8 * NT;
  const bool lo = g < M, hi = g + 8 < M;
  const bf16* a0 = A + (size_t)(lo ? g : 0) * K + 8 * t;
  const bf16* a1 = A + (size_t)(hi ? g + 8 : 0) * K + 8 * t;
  const bf16* b[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) b[j] = B + (size_t)(n0 + 8 * j + g) * K + 8 * t;
  float acc[NT][4] = {};
  const uint4 zero = {0, 0, 0, 0};
  for (int k = warp * KW; k < K; k += W * KW) {
    uint4 bv[NT][CH], av[CH], ah[CH];
#pragma unroll
    for (int c = 0; c < CH; ++c) {
#pragma unroll
      for (int j = 0; j < NT; ++j) bv[j][c] = streamLoad(b[j] + k + 32 * c);
      av[c] = lo ? *reinterpret_cast<const uint4*>(a0 + k + 32 * c) : zero;
      ah[c] = hi ? *reinterpret_cast<const uint4*>(a1 + k + 32 * c) : zero;
    }
#pragma unroll
    for (int c = 0; c < CH; ++c)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma(acc[j], av[c].x, ah[c].x, av[c].y, ah[c].y, bv[j][c].x, bv[j][c].y);
        mma(acc[j], av[c].z, ah[c].z, av[c].w, ah[c].w, bv[j][c].z, bv[j][c].w);
      }
  }
  if (W > 1) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp][4 * j + e][lane] = acc[j][e];
    __syncthreads();
    if (warp) return;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = 0;
        for (int w = 0; w < W; ++w) s += part[w][4 * j + e][lane];
        acc[j][e] = s;
      }
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + 8 * j + 2 * t;
    if (lo) *reinterpret_cast<__nv_bfloat162*>(C + (size_t)g * N + n) = __floats2bfloat162_rn(acc[j][0], acc[j][1]);
    if (hi)
      *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(g + 8) * N + n) = __floats2bfloat162_rn(acc[j][2], acc[j][3]);
  }
}

__global__ void reference(const bf16* A, const bf16* B, float* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  float s = 0;
  for (int k = 0; k < K; ++k) s += __bfloat162float(A[(size_t)m * K + k]) * __bfloat162float(B[(size_t)n * K + k]);
  C[(size_t)m * N + n] = s;
}

struct Shape {
  int K, N;
};

template <int NT, int KW, int W>
void run(const char* name, int M, const std::vector<Shape>& shapes, const bf16* A, const bf16* W0, size_t wElems,
         bf16* C, float* ref, std::vector<float>& out) {
  std::printf("%-14s M=%-2d", name, M);
  for (const Shape& s : shapes) {
    if (s.K % (W * KW) || s.N % (8 * NT)) {
      std::printf(" %9s", "-");
      continue;
    }
    const size_t per = (size_t)s.K * s.N, copies = std::max<size_t>(1, wElems / per);
    auto launch = [&](size_t r) {
      mmaGemv<NT, KW, W><<<s.N / (8 * NT), 32 * W>>>(A, W0 + (r % copies) * per, C, M, s.N, s.K);
    };
    // Correctness on copy 0.
    launch(0);
    reference<<<dim3((s.N + 255) / 256, M), 256>>>(A, W0, ref, M, s.N, s.K);
    CK(cudaDeviceSynchronize());
    std::vector<bf16> got((size_t)M * s.N);
    out.resize((size_t)M * s.N);
    CK(cudaMemcpy(got.data(), C, got.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data(), ref, out.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0, mag = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      err = std::max(err, (double)std::fabs(__bfloat162float(got[i]) - out[i]));
      mag = std::max(mag, (double)std::fabs(out[i]));
    }
    if (err > 2e-2 * mag) {
      std::printf("\nWRONG: %s M=%d K=%d N=%d max err %g of %g\n", name, M, s.K, s.N, err, mag);
      std::exit(2);
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = 1e30f;
    const int reps = 40;
    for (int round = 0; round < 3; ++round) {
      CK(cudaEventRecord(e0));
      for (int r = 0; r < reps; ++r) launch(round * reps + r + 1);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      best = std::min(best, ms * 1e3f / reps);
    }
    std::printf(" %9.1f", best);
  }
  std::printf("\n");
}

int main(int argc, char** argv) {
  std::vector<int> rows;
  for (int i = 1; i < argc; ++i) rows.push_back(std::atoi(argv[i]));
  if (rows.empty()) rows = {1, 2, 8, 16};
  const std::vector<Shape> shapes = {{4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}};
  const size_t wElems = (size_t)256 << 20 >> 1;  // 256 MiB of bf16
  bf16 *A, *W0, *C;
  float* ref;
  CK(cudaMalloc(&A, (size_t)16 * 14336 * 2));
  CK(cudaMalloc(&W0, wElems * 2));
  CK(cudaMalloc(&C, (size_t)16 * 28672 * 2));
  CK(cudaMalloc(&ref, (size_t)16 * 28672 * 4));
  {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<bf16> h((size_t)16 * 14336);
    for (auto& x : h) x = __float2bfloat16(u(rng));
    CK(cudaMemcpy(A, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    std::vector<bf16> w((size_t)1 << 24);
    for (auto& x : w) x = __float2bfloat16(u(rng));
    for (size_t off = 0; off < wElems; off += w.size())
      CK(cudaMemcpy(W0 + off, w.data(), std::min(w.size(), wElems - off) * 2, cudaMemcpyHostToDevice));
  }
  std::vector<float> out;
  std::printf("us, weights from HBM (K x N):  4096x6144 4096x4096 4096x28672 14336x4096\n");
  for (int M : rows) {
    run<1, 64, 4>("nt1 kw64 w4", M, shapes, A, W0, wElems, C, ref, out);
    run<1, 32, 8>("nt1 kw32 w8", M, shapes, A, W0, wElems, C, ref, out);
    run<1, 32, 4>("nt1 kw32 w4", M, shapes, A, W0, wElems, C, ref, out);
    run<1, 32, 16>("nt1 kw32 w16", M, shapes, A, W0, wElems, C, ref, out);
    run<1, 64, 8>("nt1 kw64 w8", M, shapes, A, W0, wElems, C, ref, out);
    run<1, 64, 16>("nt1 kw64 w16", M, shapes, A, W0, wElems, C, ref, out);
    run<2, 32, 8>("nt2 kw32 w8", M, shapes, A, W0, wElems, C, ref, out);
    run<2, 32, 16>("nt2 kw32 w16", M, shapes, A, W0, wElems, C, ref, out);
    run<4, 32, 8>("nt4 kw32 w8", M, shapes, A, W0, wElems, C, ref, out);
  }
  return 0;
}
