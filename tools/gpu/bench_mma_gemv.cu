// Could batch 2-16 decode GEMMs read their weights as fast as the batch-1
// GEMV does? A stand-in kernel answers before the tile compiler is taught
// the form: the question behind docs/cuda.md's "A tensor-core GEMV for 2-16
// rows, measured on a stand-in first".
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
// each chunk; with MT m-tiles (17-32 rows) also rows 16 + g and 24 + g. A
// program has W warps over 8 NT weight rows; the warps take interleaved
// KW-element slices of K and sum their accumulators through shared memory
// at the end.
//
// Each case cycles its launches through copies of the weights (256 MiB in
// all), so they come from HBM as in a decode step (strata-gpu bench-gemm
// --cold-weights does the same), and is checked against a plain f32 kernel.
//
//   nvcc -O3 -arch=sm_90a -o bench_mma_gemv tools/gpu/bench_mma_gemv.cu
//   ./bench_mma_gemv [M...]   (M up to 32)
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

#include "cuda_check.h"

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

// C [M, N] = A [M, K] x B [N, K]^T, M <= 16 MT, K a multiple of W KW, N of
// 8 NT. m-tile i holds A rows 16 i + g and 16 i + g + 8.
template <int NT, int KW, int W, int MT>
__global__ void __launch_bounds__(32 * W) mmaGemv(const bf16* A, const bf16* B, bf16* C, int M, int N, int K) {
  constexpr int CH = KW / 32;
  __shared__ float part[W > 1 ? W : 1][MT * NT * 4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * 8 * NT;
  bool in[MT][2];
  const bf16* a[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * i + 8 * h + g;
      in[i][h] = row < M;
      a[i][h] = A + (size_t)(in[i][h] ? row : 0) * K + 8 * t;
    }
  const bf16* b[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) b[j] = B + (size_t)(n0 + 8 * j + g) * K + 8 * t;
  float acc[MT][NT][4] = {};
  const uint4 zero = {0, 0, 0, 0};
  for (int k = warp * KW; k < K; k += W * KW) {
    uint4 bv[NT][CH], av[MT][2][CH];
#pragma unroll
    for (int c = 0; c < CH; ++c) {
#pragma unroll
      for (int j = 0; j < NT; ++j) bv[j][c] = streamLoad(b[j] + k + 32 * c);
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[i][h][c] = in[i][h] ? *reinterpret_cast<const uint4*>(a[i][h] + k + 32 * c) : zero;
    }
#pragma unroll
    for (int c = 0; c < CH; ++c)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 &lo = av[i][0][c], &hi = av[i][1][c], &w = bv[j][c];
          mma(acc[i][j], lo.x, hi.x, lo.y, hi.y, w.x, w.y);
          mma(acc[i][j], lo.z, hi.z, lo.w, hi.w, w.z, w.w);
        }
  }
  if (W > 1) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) part[warp][(i * NT + j) * 4 + e][lane] = acc[i][j][e];
    __syncthreads();
    if (warp) return;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float s = 0;
          for (int w = 0; w < W; ++w) s += part[w][(i * NT + j) * 4 + e][lane];
          acc[i][j][e] = s;
        }
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int n = n0 + 8 * j + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (in[i][h])
          *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(16 * i + 8 * h + g) * N + n) =
              __floats2bfloat162_rn(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
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

template <int NT, int KW, int W, int MT = 1>
void run(const char* name, int M, const std::vector<Shape>& shapes, const bf16* A, const bf16* W0, size_t wElems,
         bf16* C, float* ref, std::vector<float>& out) {
  std::printf("%-18s M=%-2d", name, M);
  for (const Shape& s : shapes) {
    if (s.K % (W * KW) || s.N % (8 * NT)) {
      std::printf(" %9s", "-");
      continue;
    }
    const size_t per = (size_t)s.K * s.N, copies = std::max<size_t>(1, wElems / per);
    auto launch = [&](size_t r) {
      mmaGemv<NT, KW, W, MT><<<s.N / (8 * NT), 32 * W>>>(A, W0 + (r % copies) * per, C, M, s.N, s.K);
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
  CK(cudaMalloc(&A, (size_t)32 * 14336 * 2));
  CK(cudaMalloc(&W0, wElems * 2));
  CK(cudaMalloc(&C, (size_t)32 * 28672 * 2));
  CK(cudaMalloc(&ref, (size_t)32 * 28672 * 4));
  {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<bf16> h((size_t)32 * 14336);
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
    if (M <= 16) {
      run<1, 64, 4>("nt1 kw64 w4", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 64, 8>("nt1 kw64 w8", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 32, 8>("nt1 kw32 w8", M, shapes, A, W0, wElems, C, ref, out);
    } else {
      run<1, 64, 4, 2>("nt1 kw64 w4 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 64, 8, 2>("nt1 kw64 w8 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 32, 8, 2>("nt1 kw32 w8 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 32, 4, 2>("nt1 kw32 w4 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<1, 64, 16, 2>("nt1 kw64 w16 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<2, 32, 8, 2>("nt2 kw32 w8 mt2", M, shapes, A, W0, wElems, C, ref, out);
      run<2, 64, 4, 2>("nt2 kw64 w4 mt2", M, shapes, A, W0, wElems, C, ref, out);
    }
  }
  return 0;
}
