// The GEMM blockings each target picks by row class, and the tuning
// syntax that replaces them (codegen/GemmKernel.h).
#include "codegen/GemmKernel.h"

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include <vector>

#include "codegen/UArch.h"
#include "ops/error.h"

namespace strata::tile {

GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows, const std::string& weightDtype,
                           bool swiglu) {
  const UArch& u = uarchFor(target);
  GemmKernelSpec s;
  s.weightsNK = weightsNK;
  if (weightDtype != "f32") s.weightDtype = weightDtype;
  const int64_t bBytes = weightDtype == "f32" ? 4 : weightDtype == "i8" ? 1 : 2;
  s.packedB = true;
  s.numWarps = 1;
  // 6 rows x 4 vector registers: 24 accumulators, B's 4 vectors and a
  // broadcast A scalar fit the 32 AVX-512 registers; AVX2's 16 take 6 x 2
  // (12 + 2 + 1, by register count: no AVX2-only machine measured). Warps
  // on the CPU run one after another and would each re-read B, so one warp.
  // Measured 2026-11-21 on the dev Xeon, 128x2048x2048, one thread: [K, N]
  // weights read in place 13-20 GFLOP/s (rows 8 KiB apart alias in L1 and
  // defeat the prefetchers); panel-packed 56-72.
  // SwiGLU's two accumulator sets take the width of one: 6 x 2 x 2 on
  // AVX-512, 6 x 1 x 2 on AVX2. Measured 2026-11-29 on the EPYC (AVX2, 2
  // threads), a 124.7M Llama's 128-token prefill: at 6 x 2 x 2 the 24
  // accumulators spilled and the gate / up GEMM ran at 40 GFLOP/s against
  // the other GEMMs' 59-65.
  s.swiglu = swiglu;
  s.blockN = (u.vectorBytes >= 64 ? 4 : 2) / (swiglu ? 2 : 1) * u.vectorBytes / 4;
  const bool gemv = rows == 1;
  s.microM = gemv ? 1 : swiglu && u.vectorBytes < 64 ? 4 : 6;
  s.blockM = s.microM;
  // K steps of 1 prefetching B ahead: B's K chunk outgrows L1 (and the
  // decode GEMV streams B from memory once) and the hardware prefetchers did
  // not keep the register blocks fed; with steps of 4 LLVM hoisted the next
  // step's B loads and spilled accumulators. Measured 2026-11-21 on the dev
  // Xeon, 2 threads: GEMV 0.92-0.98 of oneDNN -> 1.0-1.09 (16 rows ahead;
  // 32 and 64: 1.0).
  s.blockK = 1;
  s.prefetchK = 16;
  // The same distance in bytes (1 KiB of an f32 panel) for narrower
  // weights: an i8 panel's 16 rows are 256 bytes, less than memory's
  // latency ahead. Measured 2026-11-29 on the EPYC, the 124.7M Llama's Q8_0
  // decode step: 13.9 -> 12.3 ms.
  if (gemv) s.prefetchK = 16 * 4 / bBytes;
  if (!gemv) {
    // K chunks of B take a quarter of L2 (AVX-512: 1024 rows x 64 floats,
    // 256 KiB) and the program's A rows of one chunk about half (rounded up
    // to whole register blocks: 132 rows, so M = 128 is one program per
    // panel and the threads split the panels), so both stay in L2 while a
    // chunk is reused by every register block; B prefetched 8 rows ahead.
    // Measured 2026-11-21 on the dev Xeon, 2 threads, geomean over bench
    // kernels' 9 shapes: 0.80 of oneDNN (steps of 4, 256-row chunks, 126
    // rows, no prefetch) -> 0.92-0.97 (a prefetch distance of 4 rows: 0.85,
    // 16: 0.92; chunks of 512: 0.94, 2048: 0.90; register blocks of 4 rows,
    // no remainder at M = 32 / 128: 0.90).
    s.prefetchK = 8;
    s.chunkK = u.l2Bytes / 4 / (s.blockN * 4);
    int64_t aRows = u.l2Bytes / 2 / (s.chunkK * 4);
    s.blockM = (aRows + s.microM - 1) / s.microM * s.microM;
    // A chunk's first register block reads B's chunk from memory; at one
    // core's memory bandwidth (18 GB/s here) it runs at half speed. With
    // few blocks per chunk that is a large share of the work, so programs
    // of few rows prefetch the next chunk into L2 over all their blocks
    // (one line per K step). Measured 2026-11-21 on the dev Xeon, 2 threads,
    // paired with the same kernel without it: M = 20 +7-19 %, 32 +5-12 %,
    // 64 +3-6 %, 96 +-1 %, 128 -1-5 % (every block's loop carries the
    // prefetch, and past M = 64 the chunk's first block is too small a
    // share to pay for it): hence a kernel of its own for M <= 64.
    if (rows > 1 && rows <= kCpuSmallRows) s.prefetchNext = u.cacheLineBytes / bBytes;
  }
  s.name = gemv ? "gemv" : s.prefetchNext ? "gemm_small" : "gemm";
  return s;
}

GemmKernelSpec cudaGemmSpec(const std::string& dtype, bool weightsNK, int64_t rows) {
  GemmKernelSpec s;
  s.dtype = dtype;
  s.weightsNK = weightsNK;
  s.tiling = "";  // assign-layouts' square warp grid
  // Measured on the H100 (docs/cuda.md of bd79745, 2026-11-21 sweeps of staged
  // blockings, bf16 [N, K], Llama-3-8B shapes): operands staged through
  // shared memory by cp.async, 3-4 buffers deep, beat every blocking whose
  // lanes load their fragments from global memory (2 buffers lose to 3:
  // 130-142 vs 176-187 TFLOP/s at M = 2048 with 64 x 128 blocks). Decode
  // streams the weights once: 8 warps splitting K keep many copies in
  // flight (M = 1: 1.7-2.1 -> 2.1-2.7 TB/s, also at K = 14336, where a
  // 16-warp blocking was kept before). 4 warps on K steps of 128 with 4
  // buffers (more blocks per SM, the same bytes in flight per block) beat 8
  // warps on steps of 256 with 3: M = 16 27.7-36.4 -> 30.3-38.2 TFLOP/s,
  // M = 1 2.2-3.0 -> 2.3-3.0 TB/s (later sweep, same day).
  if (rows <= kCudaDecodeRows) {
    s.blockM = 16, s.blockN = 32, s.blockK = 128, s.numWarps = 4, s.stages = 4;
    s.tiling = "split_k";
  } else if (weightsNK && rows <= kCudaMediumRows) {
    // Warpgroup dots on 64 x 32 x 64 blocks in 6 buffers (memory-bound:
    // many small blocks, 36 KiB of weights in flight each). H200, M = 64
    // (2026-11-22): 69-94 TFLOP/s (mma.sync, below) -> 134-189; 64 x 64
    // x 64 in 4 buffers 111-211. Copies by cp.async: TMA (one thread
    // issuing 8 + 4 KiB boxes per K step) lost on the H100 (2026-11-22):
    // M = 64, N = 4096, K = 4096 / 14336 130 / 137 -> 96 / 105 TFLOP/s
    // (N = 6144 127 -> 124, 28672 150 -> 157).
    s.blockM = 64, s.blockN = 32, s.blockK = 64, s.numWarps = 4, s.stages = 6;
    s.tiling = "horizontal", s.groupDot = true;
  } else if (rows <= kCudaMediumRows) {
    // 64-row blocks of 32 columns, 4 warps splitting K steps of 128: at
    // M = 64 the square blockings leave most SMs idle (32 CTAs for
    // N = 4096). M = 64: 54-76 (unstaged) -> 66-86 TFLOP/s.
    s.blockM = 64, s.blockN = 32, s.blockK = 128, s.numWarps = 4, s.stages = 3;
    s.tiling = "split_k";
  } else if (weightsNK && rows <= kCudaPrefillRows) {
    // [N, K] weights (both dot operands K-major) from the prefill class up:
    // warpgroup dots (wgmma) on swizzled buffers. M = 256 on the H100
    // (2026-11-22): 144-197 (mma.sync, 64 x 128 x 64 in 3 buffers) ->
    // 261-310 TFLOP/s on one warpgroup of 64 x 128 x 64 in 4 buffers
    // (128 x 128 on 8 warps: 196-325, 64 x 256: 192-320). TMA copies
    // instead of cp.async (H100, 2026-11-22): 272 / 282 / 308 / 341 ->
    // 333 / 270 / 332 / 325 TFLOP/s at N = 6144 / 4096 / 28672 / 4096
    // (K = 14336). Each K step's dots left in flight (2026-11-24, M = 129
    // / 256, N = 6144): 30.9 / 29.3 -> 29.8 / 28.1 us.
    s.blockM = 64, s.blockN = 128, s.blockK = 64, s.numWarps = 4, s.stages = 4;
    s.tiling = "horizontal", s.groupDot = s.tma = s.dotsInFlight = true;
  } else if (weightsNK && rows <= kCudaTallRows) {
    // 257-1024 rows: 128 x 128 x 64 on two warpgroups in 4 buffers, each K
    // step's dots left in flight, beat the prefill blocking (H100,
    // 2026-11-24, M = 1024, N = 6144 / 4096 / 28672 / 4096 at K = 4096 /
    // 4096 / 4096 / 14336: 133 / 86 / 662 / 261 -> 115 / 76 / 523 / 221
    // us; residual 92 / 270 -> 82 / 227). With the refill after a step's
    // dots (stagedBody) it won from 512 rows too (the same day, M = 512 /
    // 768: 67 / 37 / 340 / 102 -> 63 / 34 / 248 / 91 and 107 / 65 / 502 /
    // 204 -> 93 / 59 / 354 / 173 us; at 256 rows it ties or loses but at
    // N = 28672 and K = 14336, where the prefill class's column variants
    // serve), and the large class's 128 x 256 blocks leave too few
    // programs here. A fifth buffer (160 KiB: still one program an SM)
    // took 1-9 % off at 384-1024 rows (2026-11-24, docs/cuda.md of bd79745 "A fifth
    // buffer for the one-program-an-SM classes"; a sixth gained no more).
    s.blockM = 128, s.blockN = 128, s.blockK = 64, s.numWarps = 8, s.stages = 5;
    s.tiling = "horizontal", s.groupDot = s.tma = s.dotsInFlight = true;
  } else if (weightsNK) {
    // M = 2048, H200 (2026-11-22): 128 x 256 x 64 on two warpgroups in 4
    // buffers (192 KiB) 477-581 TFLOP/s; 3 buffers 457-550, 128 x 128
    // 394-452, 64 x 256 393-462; mma.sync's best (128 x 128 x 32) 255-279
    // on the H100. TMA copies instead of cp.async (H100, 2026-11-22):
    // 468-571 -> 510-645 TFLOP/s (0.59-0.75 -> 0.64-0.84 of cuBLAS).
    // Each K step's dots left in flight (H100, 2026-11-24, M = 2048, N =
    // 6144 / 4096 / 28672 / 4096 at K = 4096 / 4096 / 4096 / 14336):
    // 200 / 133 / 900 / 372 -> 177 / 117 / 795 / 330 us.
    s.blockM = 128, s.blockN = 256, s.blockK = 64, s.numWarps = 8, s.stages = 4;
    s.tiling = "horizontal", s.groupDot = s.tma = s.dotsInFlight = true;
  } else if (rows <= kCudaTallRows) {
    // M = 256: 117-151 (64 x 128 x 32, 3 buffers) -> 144-197 TFLOP/s.
    s.blockM = 64, s.blockN = 128, s.blockK = 64, s.numWarps = 4, s.stages = 3;
  } else {
    // M = 2048: 176-187 (64 x 128 x 32, 3 buffers) -> 249-262 TFLOP/s
    // (64 x 64 warp tiles; 80 KiB of shared memory). At M = 256 these
    // blocks leave SMs idle (97-216).
    s.blockM = 128, s.blockN = 128, s.blockK = 32, s.numWarps = 4, s.stages = 4;
  }
  return s;
}

void applyBlocking(GemmKernelSpec& s, const GemmBlocking& b) {
  s.blockM = b.m, s.blockN = b.n, s.blockK = b.k, s.numWarps = b.warps;
  s.tiling = b.splitK ? "split_k" : b.groupDot ? "horizontal" : b.m <= 16 ? "vertical" : "";
  s.stages = b.stages;
  s.minBlocksPerSM = b.minBlocksPerSM;
  s.groupDot = b.groupDot;
  s.tma = b.tma;
  s.dotsInFlight = b.dotsInFlight;
  s.splitKPrograms = b.splitKPrograms;
  s.gemv = b.gemv;
  if (b.gemv) s.tiling = "";
}

namespace {

// Reads "MxNxKxW" (the whole of `shape`) into b's m, n, k and warps.
bool readDims(const std::string& shape, GemmBlocking& b) {
  char x1 = 0, x2 = 0, x3 = 0;
  int used = 0;
  return std::sscanf(shape.c_str(), "%ld%c%ld%c%ld%c%ld%n", &b.m, &x1, &b.n, &x2, &b.k, &x3, &b.warps, &used) == 7 &&
         x1 == 'x' && x2 == 'x' && x3 == 'x' && used == (int)shape.size();
}

}  // namespace

GemmBlocking parseGemmBlocking(const std::string& text, const std::string& what) {
  GemmBlocking b;
  std::string shape = text;
  if (size_t colon = shape.find(':'); colon != std::string::npos) {
    std::string n = shape.substr(colon + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 2 ||
        (b.minBlocksPerSM = std::stoll(n)) < 1 || b.minBlocksPerSM > 32)
      fail("{} '{}': the programs an SM after : must be 1 to 32", what, text);
    shape.resize(colon);
  }
  if (!shape.empty() && shape.back() == 'v') {
    // The GEMV form: MAxRxKxW.
    b.gemv = true;
    shape.pop_back();
    if (!readDims(shape, b) || b.m < 1 || b.m > 16 || b.n < 1 ||
        b.n > 16 || b.warps < 1 || b.warps > 32 || b.k % (32 * b.warps) != 0)
      fail("{} '{}': the GEMV form is MAxRxKxWv: MA (1 to 16) rows of A and R (1 to 16) weight rows a program, K "
           "steps of K elements over W warps (1 to 32; K a multiple of 32 x W), e.g. 1x2x2048x8v, optionally :B for "
           "room for B programs an SM (1x4x2048x2v:12)", what, text);
    return b;
  }
  if (shape.size() > 2 && shape.compare(shape.size() - 2, 2, "+k") == 0) {
    b.splitKPrograms = true;
    shape.resize(shape.size() - 2);
  }
  if (size_t at = shape.find('@'); at != std::string::npos) {
    std::string n = shape.substr(at + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || (b.stages = std::stoll(n)) == 1 ||
        b.stages > 8)
      fail("{} '{}': the stage count after @ must be 0 (no staging) or 2 to 8", what, text);
    shape.resize(at);
  }
  bool cpAsync = false;
  if (shape.size() >= 2 && shape.compare(shape.size() - 2, 2, "gc") == 0) {
    cpAsync = true;
    shape.pop_back();
  } else if (shape.size() >= 2 && shape.compare(shape.size() - 2, 2, "gf") == 0) {
    b.dotsInFlight = true;
    shape.pop_back();
  }
  if (!shape.empty() && shape.back() == 'g') {
    b.groupDot = true;
    b.tma = !cpAsync;
    shape.pop_back();
  }
  if (!shape.empty() && shape.back() == 's') {
    b.splitK = true;
    shape.pop_back();
  }
  if (!readDims(shape, b))
    fail("{} '{}': expected MxNxKxW (block M, N, K and warps) with an optional s (warps split K), g (warpgroup "
         "dots, TMA copies), gf (the same with each K step's dots left in flight) or gc (warpgroup dots, cp.async "
         "copies), @S (S stages through shared memory) and +k (K split across programs too), e.g. 16x64x32x4, "
         "16x32x256x8s, 64x128x32x4@3, 128x128x64x8g@4, 128x256x64x8gf@4, 128x128x64x8gf@3:2 (:B room for B "
         "programs an SM) or 128x32x64x8gc@4+k", what, text);
  if (b.groupDot) {
    if (b.splitK || b.warps % 4 != 0 || b.m != 16 * b.warps || b.k != 64 || b.n % 8 != 0 || b.n > 256 ||
        b.stages < 2)
      fail("{} '{}': warpgroup dots (g) take 16 rows per warp (M = 16 x warps, warps a multiple of 4), K = 64 (one "
           "128-byte swizzled row), N a multiple of 8 up to 256 and staging (@2 or more)", what, text);
    return b;
  }
  bool pow2 = b.warps > 0 && (b.warps & (b.warps - 1)) == 0;
  bool rowsOk = b.m >= 16 && b.m % 16 == 0, kOk = b.k >= 16 && b.k % 16 == 0;
  if (b.splitK) {
    if (!rowsOk || !pow2 || b.warps > 32 || b.n % 8 != 0 || b.k % (16 * b.warps) != 0)
      fail("{} '{}': with warps splitting K, M must be a multiple of 16, N of 8, K of 16 x warps and warps a power "
           "of two up to 32", what, text);
    return b;
  }
  bool splitOk = pow2 && (b.m > 16 || b.n % (8 * b.warps) == 0);
  if (!rowsOk || !kOk || !pow2 || b.warps > 32 || !splitOk)
    fail("{} '{}': M and K must be multiples of 16 and warps a power of two up to 32 (with M = 16, splitting N into "
         "8-column warp tiles)", what, text);
  return b;
}

}  // namespace strata::tile
