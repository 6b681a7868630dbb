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

GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows) {
  const UArch& u = uarchFor(target);
  GemmKernelSpec s;
  s.weightsNK = weightsNK;
  s.packedB = true;
  s.numWarps = 1;
  // 6 rows x 4 vector registers: 24 accumulators, B's 4 vectors and a
  // broadcast A scalar fit the 32 AVX-512 registers; AVX2's 16 take 6 x 2
  // (12 + 2 + 1, by register count: no AVX2-only machine measured). Warps
  // on the CPU run one after another and would each re-read B, so one warp.
  // Measured 2026-11-21 on the dev Xeon, 128x2048x2048, one thread: [K, N]
  // weights read in place 13-20 GFLOP/s (rows 8 KiB apart alias in L1 and
  // defeat the prefetchers); panel-packed 56-72.
  s.blockN = (u.vectorBytes >= 64 ? 4 : 2) * u.vectorBytes / 4;
  const bool gemv = rows == 1;
  s.microM = gemv ? 1 : 6;
  s.blockM = s.microM;
  // K steps of 1 prefetching B ahead: B's K chunk outgrows L1 (and the
  // decode GEMV streams B from memory once) and the hardware prefetchers did
  // not keep the register blocks fed; with steps of 4 LLVM hoisted the next
  // step's B loads and spilled accumulators. Measured 2026-11-21 on the dev
  // Xeon, 2 threads: GEMV 0.92-0.98 of oneDNN -> 1.0-1.09 (16 rows ahead;
  // 32 and 64: 1.0).
  s.blockK = 1;
  s.prefetchK = 16;
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
    if (rows > 1 && rows <= kCpuSmallRows) s.prefetchNext = u.cacheLineBytes / 4;
  }
  s.name = gemv ? "gemv" : s.prefetchNext ? "gemm_small" : "gemm";
  return s;
}

GemmKernelSpec cudaGemmSpec(const std::string& dtype, bool weightsNK, int64_t rows) {
  GemmKernelSpec s;
  s.dtype = dtype;
  s.weightsNK = weightsNK;
  s.tiling = "";  // assign-layouts' square warp grid
  // Measured on the H100 (docs/cuda.md, 2026-11-21 sweeps of staged
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
    // took 1-9 % off at 384-1024 rows (2026-11-24, docs/cuda.md "A fifth
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
  if (!shape.empty() && shape.back() == 'v') {
    // The GEMV form: MAxRxKxW.
    b.gemv = true;
    shape.pop_back();
    if (!readDims(shape, b) || b.m < 1 || b.m > 16 || b.n < 1 ||
        b.n > 16 || b.warps < 1 || b.warps > 32 || b.k % (32 * b.warps) != 0)
      fail("{} '{}': the GEMV form is MAxRxKxWv: MA (1 to 16) rows of A and R (1 to 16) weight rows a program, K "
           "steps of K elements over W warps (1 to 32; K a multiple of 32 x W), e.g. 1x2x2048x8v", what, text);
    return b;
  }
  if (shape.size() > 2 && shape.compare(shape.size() - 2, 2, "+k") == 0) {
    b.splitKPrograms = true;
    shape.resize(shape.size() - 2);
  }
  if (size_t colon = shape.find(':'); colon != std::string::npos) {
    std::string n = shape.substr(colon + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 2 ||
        (b.minBlocksPerSM = std::stoll(n)) < 1 || b.minBlocksPerSM > 32)
      fail("{} '{}': the programs an SM after : must be 1 to 32", what, text);
    shape.resize(colon);
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

namespace {

// Text pieces of one GEMM kernel; `ib` is " {in_bounds}" on the fast path.
struct GemmText {
  const GemmKernelSpec& s;
  std::string aT, bT, cT, aP, bP, hint;
  std::string cS;      // the C block in the storage type
  std::string cShape;  // "MxN" of the C block
  std::string zero = "%zero";      // the zero accumulators' SSA name
  StorageText st{s.dtype};

  // The attributes of a fast-path (`ib` non-empty) operand load: with 16-bit
  // storage and K a multiple of 4 (the fast path's condition then), the K
  // dim `kDim` of A ([M, K], 1) and of [N, K] weights viewed as [K, N] (0)
  // is contiguous in aligned runs of 4 — tile.load's `contiguous` promise
  // (blockK is a multiple of 16). kDim -1: none.
  std::string loadAttrs(const char* ib, int kDim) const {
    if (!*ib || kDim < 0 || !st.sixteenBit()) return ib;
    return fmt::format(" {{in_bounds, contiguous = {} : i64, run = 4 : i64}}", kDim);
  }

  // An interior block's access in aligned pairs where N is even (%nPairs:
  // the `contiguous` promise holds), else element by element: the store of
  // `v` through `ptr` (of block pointer type `bp`) and the load of `res`
  // (a `t` tile) from it.
  static std::string pairedStore(const std::string& ptr, const std::string& v, const std::string& bp) {
    return fmt::format(R"(    scf.if %nPairs {{
    tile.store {ptr}, {v} {{in_bounds, contiguous = 1 : i64}} : {bp}
    }} else {{
    tile.store {ptr}, {v} {{in_bounds}} : {bp}
    }}
)",
                       fmt::arg("ptr", ptr), fmt::arg("v", v), fmt::arg("bp", bp));
  }
  static std::string pairedLoad(const std::string& res, const std::string& ptr, const std::string& t,
                                const std::string& bp) {
    return fmt::format(R"(    {res} = scf.if %nPairs -> ({t}) {{
    {res}p = tile.load {ptr} {{in_bounds, contiguous = 1 : i64}} : {bp}
    scf.yield {res}p : {t}
    }} else {{
    {res}e = tile.load {ptr} {{in_bounds}} : {bp}
    scf.yield {res}e : {t}
    }}
)",
                       fmt::arg("res", res), fmt::arg("ptr", ptr), fmt::arg("t", t), fmt::arg("bp", bp));
  }

  // A K loop over [from, to) starting from the accumulators `inits`
  // (and block pointers `ptrs`); its results are `res`#0.. . `ib` marks the
  // loads in bounds, `bIb` B's alone (packed panels are whole up to K).
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, const char* ib, const char* bIb,
                    const std::string& nextLines = "") const {
    std::string iterArgs = fmt::format("%acc = {}, %pa = {}, %pb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP;
    std::string aib = loadAttrs(ib, 1), bib = loadAttrs(bIb, s.weightsNK && !s.packedB ? 0 : -1);
    std::string body = fmt::format(R"(    %x = tile.load %pa{aib} : {aP}
    %y = tile.load %pb{bib} : {bP}
    %d = tile.dot %x, %y, %acc{hint} : {aT} * {bT} -> {cT}
    %na = tile.advance %pa, [%c0, %bk] : {aP}
    %nb = tile.advance %pb, [%bk, %c0] : {bP}
)",
                                   fmt::arg("aib", aib), fmt::arg("bib", bib), fmt::arg("aP", aP), fmt::arg("bP", bP),
                                   fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT), fmt::arg("hint", hint));
    // Packed main loops: prefetch B (and b_up) prefetchK rows ahead.
    auto prefetch = [&](const char* ptr) {
      if (!s.packedB || !s.prefetchK) return std::string();
      return fmt::format("    %pf{p} = tile.advance %{p}, [%pfk, %c0] : {bP}\n    tile.prefetch %pf{p} : {bP}\n",
                         fmt::arg("p", ptr), fmt::arg("bP", bP));
    };
    body += prefetch("pb");
    std::string yields = "%d, %na, %nb";
    int n = 3;
    if (!nextLines.empty()) {
      // One cache line of the next K chunk per step, into L2 (see
      // GemmKernelSpec::prefetchNext).
      std::string lP = fmt::format("!tile.block_ptr<tensor<{}xf32>>", s.prefetchNext);
      body += fmt::format(R"(    %lk = arith.subi %k, {from} : index
    %lo = arith.muli %lk, %lw : index
    %la = arith.addi {start}, %lo : index
    %pl = tile.make_block_ptr %b, [%bTotal], [%c1], [%la] : !tile.ptr<f32> -> {lP}
    tile.prefetch %pl {{locality = 2 : i64}} : {lP}
)",
                          fmt::arg("from", from), fmt::arg("start", nextLines), fmt::arg("lP", lP));
    }
    if (s.swiglu) {
      body += prefetch("pb2");
      iterArgs += fmt::format(", %acc2 = {}, %pb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      body += fmt::format(R"(    %y2 = tile.load %pb2{ib} : {bP}
    %d2 = tile.dot %x, %y2, %acc2 : {aT} * {bT} -> {cT}
    %nb2 = tile.advance %pb2, [%bk, %c0] : {bP}
)",
                          fmt::arg("ib", bib), fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT),
                          fmt::arg("cT", cT));
      yields += ", %d2, %nb2";
      n = 5;
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %bk iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, n, from, to, iterArgs, types, body, yields, types);
  }

  // The store of C's block `v` (narrowed) by TMA where N % 8 = 0 (the
  // map's row pitch): as a dense block into the A stage buffer, which no
  // copy or dot reads any more once every warp has passed the barrier, and
  // out by one TMA store, which drops the rows and columns outside the map
  // (C [M, N]); else `otherwise`. (Two views of the one block: a view that a
  // TMA op reads serves copies only, isCopyPointer.)
  std::string tmaStore(const std::string& p, const std::string& v, const std::string& otherwise) const {
    return fmt::format(R"(    %{p}c8r = arith.remui %N, %c8 : index
    %{p}c8 = arith.cmpi eq, %{p}c8r, %c0 : index
    scf.if %{p}c8 {{
    tile.barrier
    %{p}cl = tile.make_block_ptr %sa, [%sbm, %sbn], [%sbn, %c1], [%c0, %c0] : !tile.ptr<{dt}> -> {bp}
    tile.store %{p}cl, {v} {{in_bounds, contiguous = 1 : i64}} : {bp}
    %{p}cw = tile.make_block_ptr %sa, [%sbm, %sbn], [%sbn, %c1], [%c0, %c0] : !tile.ptr<{dt}> -> {bp}
    tile.tma_store %cmap[%col, %row], %{p}cw : !tile.ptr<i8>, {bp}
    }} else {{
{otherwise}    }}
)",
                       fmt::arg("p", p), fmt::arg("dt", s.dtype), fmt::arg("bp", st.blockPtr(cShape)),
                       fmt::arg("v", v), fmt::arg("otherwise", otherwise));
  }

  // Bias / SwiGLU / residual on the accumulators `acc` (and `acc2`), then
  // the store. Names are prefixed with `p` (one set per path).
  // `viaTma` (a TMA kernel's staged path, after its drain: see
  // storesCByTma): C goes by TMA (tmaStore) from an interior block (`ib`
  // " {in_bounds}"), else in aligned pairs; and from a row-edge block (`ib`
  // empty: its columns inside N, rows past M, which the map drops), else
  // element by element, checked.
  std::string epilogue(const std::string& p, const std::string& acc, const std::string& acc2, const char* ib,
                       bool viaTma = false) const {
    std::string e, out = acc;
    auto addBias = [&](const char* buf, const std::string& in, const std::string& o) {
      e += fmt::format(R"(    %{o}p = tile.make_block_ptr {buf}, [%N], [%c1], [%col] : !tile.ptr<{dt}> -> !tile.block_ptr<tensor<{N}x{dt}>>
    %{o}v = tile.load %{o}p{ib} : !tile.block_ptr<tensor<{N}x{dt}>>
)",
                       fmt::arg("o", o), fmt::arg("buf", buf), fmt::arg("N", s.blockN), fmt::arg("dt", s.dtype),
                       fmt::arg("ib", ib));
      std::string v = st.widen(e, o + "w", "%" + o + "v", std::to_string(s.blockN));
      e += fmt::format(R"(    %{o}e = tile.expand_dims {v} {{axis = 0 : i64}} : tensor<{N}xf32> -> tensor<1x{N}xf32>
    %{o}b = tile.broadcast %{o}e : tensor<1x{N}xf32> -> {cT}
    %{o} = arith.addf {in}, %{o}b : {cT}
)",
                       fmt::arg("o", o), fmt::arg("v", v), fmt::arg("in", in), fmt::arg("N", s.blockN),
                       fmt::arg("cT", cT));
    };
    if (s.bias) {
      addBias("%bias", acc, p + "gate");
      out = "%" + p + "gate";
    }
    if (s.swiglu) {
      std::string up = acc2;
      if (s.bias) {
        addBias("%bias2", acc2, p + "up");
        up = "%" + p + "up";
      }
      e += fmt::format("    %{p}act = tile.silu {out} : {cT}\n    %{p}glu = arith.mulf %{p}act, {up} : {cT}\n",
                       fmt::arg("p", p), fmt::arg("out", out), fmt::arg("cT", cT), fmt::arg("up", up));
      out = "%" + p + "glu";
    }
    const bool pairs = *ib && st.sixteenBit();  // see the store below
    if (s.residual) {
      e += fmt::format("    %{p}rp = tile.make_block_ptr %res, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> "
                       "!tile.block_ptr<{cS}>\n",
                       fmt::arg("p", p), fmt::arg("cS", cS), fmt::arg("dt", s.dtype));
      if (pairs)
        e += pairedLoad("%" + p + "rv", "%" + p + "rp", cS, "!tile.block_ptr<" + cS + ">");
      else
        e += fmt::format("    %{p}rv = tile.load %{p}rp{ib} : !tile.block_ptr<{cS}>\n", fmt::arg("p", p),
                         fmt::arg("cS", cS), fmt::arg("ib", ib));
      std::string r = st.widen(e, p + "rw", "%" + p + "rv", cShape);
      e += fmt::format("    %{}res = arith.addf {}, {} : {}\n", p, out, r, cT);
      out = "%" + p + "res";
    }
    if (viaTma && !pairs) {
      const std::string v = st.narrow(e, p + "cv", out, cShape);
      return e + tmaStore(p, v, fmt::format("    tile.store %cp, {} : {}\n", v, st.blockPtr(cShape)));
    }
    if (!pairs) return e + st.store("%cp", out, cShape, ib);
    // Interior blocks with N even store C in aligned pairs (C and the
    // residual are 4-byte aligned: CudaKernelSet::launch): one 4-byte
    // store per accumulator pair instead of two 2-byte ones.
    const std::string v = st.narrow(e, p + "cv", out, cShape), paired = pairedStore("%cp", v, st.blockPtr(cShape));
    return e + (viaTma ? tmaStore(p, v, paired) : paired);
  }

  // The epilogue of a program, with K split across programs
  // (GemmKernelSpec::splitKPrograms): at one split the epilogue itself;
  // else this split's partials go to its workspace slices (slice `pk`, and
  // kSplits + pk for the up projection), the program arrives at its C
  // block's counter, and the last to arrive sums every split's slices in
  // split order and runs the epilogue on the sums.
  std::string finish(const std::string& p, const std::string& acc, const std::string& acc2, const char* ib,
                     bool viaTma = false) const {
    if (!s.splitKPrograms) return epilogue(p, acc, acc2, ib, viaTma);
    const int nb = s.swiglu ? 2 : 1;
    std::string stores, inits, types, loads, yields;
    // Block pointer `name` over workspace slice `slice` (rows slice M + row).
    auto slicePtr = [&](const std::string& name, const std::string& slice) {
      return fmt::format(R"(    {n}r = arith.muli {sl}, %M : index
    {n}o = arith.addi {n}r, %row : index
    {n}e = arith.addi {n}r, %M : index
    {n} = tile.make_block_ptr %ws, [{n}e, %N], [%N, %c1], [{n}o, %col] : !tile.ptr<f32> -> !tile.block_ptr<{cT}>
)",
                         fmt::arg("n", name), fmt::arg("sl", slice), fmt::arg("cT", cT));
    };
    // Interior blocks with N even move the f32 partials in 8-byte column
    // pairs (the workspace is 256-byte aligned: slice rows start at even
    // offsets), as the epilogue stores C.
    const bool pairs = *ib;
    for (int w = 0; w < nb; ++w) {
      const std::string n = fmt::format("%{}w{}", p, w), q = fmt::format("%{}q{}", p, w);
      const std::string bp = "!tile.block_ptr<" + cT + ">";
      stores += (w ? fmt::format("    {}s = arith.addi %pk, %kSplits : index\n", n) : "") +
                slicePtr(n, w ? n + "s" : "%pk");
      if (pairs)
        stores += pairedStore(n, w ? acc2 : acc, bp);
      else
        stores += fmt::format("    tile.store {}, {} : {}\n", n, w ? acc2 : acc, bp);
      inits += fmt::format("{}%{}a{} = %zero", w ? ", " : "", p, w);
      types += (w ? ", " : "") + cT;
      loads += (w ? fmt::format("    {}s = arith.addi %{}q, %kSplits : index\n", q, p) : "") +
               slicePtr(q, w ? q + "s" : "%" + p + "q");
      if (pairs)
        loads += pairedLoad(q + "v", q, cT, bp);
      else
        loads += fmt::format("    {}v = tile.load {} : {}\n", q, q, bp);
      loads += fmt::format("    {q}n = arith.addf %{p}a{w}, {q}v : {cT}\n", fmt::arg("q", q), fmt::arg("cT", cT),
                           fmt::arg("p", p), fmt::arg("w", w));
      yields += (w ? ", " : "") + q + "n";
    }
    return fmt::format(R"(    %{p}one = arith.cmpi eq, %kSplits, %c1 : index
    scf.if %{p}one {{
{single}    }} else {{
{stores}    %{p}ci0 = arith.muli %pm, %gridN : index
    %{p}ci = arith.addi %{p}ci0, %pn : index
    %{p}last = tile.arrive %ctr[%{p}ci] of %kSplits : !tile.ptr<i32>
    scf.if %{p}last {{
    %{p}m:{nb} = scf.for %{p}q = %c0 to %kSplits step %c1 iter_args({inits}) -> ({types}) {{
{loads}      scf.yield {yields} : {types}
    }}
{merged}    }}
    }}
)",
                       fmt::arg("p", p), fmt::arg("single", epilogue(p, acc, acc2, ib)), fmt::arg("stores", stores),
                       fmt::arg("nb", nb), fmt::arg("inits", inits), fmt::arg("types", types), fmt::arg("loads", loads),
                       fmt::arg("yields", yields),
                       fmt::arg("merged", epilogue(p + "k", "%" + p + "m#0", "%" + p + "m#1", ib)));
  }
};

}  // namespace

std::string gemmSignature(const GemmKernelSpec& s) {
  std::string args;
  auto buffer = [&](const char* name) { args += fmt::format("%{}: !tile.ptr<{}>, ", name, s.dtype); };
  buffer("a");
  buffer("b");
  if (s.swiglu) buffer("b2");
  buffer("c");
  if (s.bias) buffer("bias");
  if (s.bias && s.swiglu) buffer("bias2");
  if (s.residual) buffer("res");
  args += "%M: index, %N: index, %K: index";
  if (s.tma) args += s.swiglu ? ", %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>, %bmap2: !tile.ptr<i8>"
                              : ", %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>";
  if (storesCByTma(s)) args += ", %cmap: !tile.ptr<i8>";
  if (s.splitKPrograms) args += ", %kSplits: index, %ws: !tile.ptr<f32>, %ctr: !tile.ptr<i32>";
  return args;
}

namespace {

// The operand and C block types of a kernel (a register block's, in the
// packed form) for both forms.
GemmText gemmText(const GemmKernelSpec& s) {
  const int64_t M = s.microM ? s.microM : s.blockM, N = s.blockN, K = s.blockK;
  GemmText t{s, fmt::format("tensor<{}x{}x{}>", M, K, s.dtype), fmt::format("tensor<{}x{}x{}>", K, N, s.dtype),
             fmt::format("tensor<{}x{}xf32>", M, N), "", "",
             s.tiling.empty() ? "" : fmt::format(" {{tiling = \"{}\"}}", s.tiling),
             fmt::format("tensor<{}x{}x{}>", M, N, s.dtype), fmt::format("{}x{}", M, N)};
  t.aP = "!tile.block_ptr<" + t.aT + ">";
  t.bP = "!tile.block_ptr<" + t.bT + ">";
  return t;
}

// Grid form staged through workgroup-local memory (GemmKernelSpec::stages):
// the body of the branch taken when K (and N for [K, N] weights) is a
// multiple of 8. Local rows are padded by 8 elements (16 bytes), so the 8
// rows an ldmatrix reads fall in distinct banks. Buffer stage s holds A's
// rows [s BM, (s + 1) BM) of a [S BM, BK] array and B's block s of a
// [BK, S BN] ([N, K] weights: stored N-major, K contiguous) or [S BK, BN]
// ([K, N]) array. K block j is copied into stage j % S, S - 1 blocks ahead:
// at step i the wait leaves S - 2 groups in flight (block i has landed),
// the barrier makes it visible and frees the stage step i - 1 read, which
// then receives block i + S - 1.
// Warpgroup dots (GemmKernelSpec::groupDot) read swizzled buffers
// (tile.alloc's `swizzle`: rows of BK = 64 elements, no padding). With
// GemmKernelSpec::dotsInFlight (TMA copies) a step's dots stay in flight
// while the next step waits for its block and issues its own
// (tile.group_dot_wait {pending = 1}); a step issues its dots first, and
// once its wait has left one group in flight, the barrier frees the stage
// step i - 1 read and it receives block i + S - 1 (still S - 1 ahead).
std::string stagedBody(const GemmKernelSpec& s, const GemmText& t) {
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK, S = s.stages, P = s.groupDot ? K : K + 8, PN = N + 8;
  const bool inFlight = s.dotsInFlight;
  const int64_t ahead = S - 1;
  std::string dt = s.dtype;
  // Local array shapes and strides (constants defined below).
  std::string bLocal = s.weightsNK ? "[%sbk, %lbc], [%c1, %lp]" : "[%lbr, %sbn], [%lpn, %c1]";
  int64_t bSize = s.weightsNK ? S * N * P : S * K * PN;
  int bDim = s.weightsNK ? 0 : 1;
  // Local views of stage `st` (an index SSA name).
  auto aView = [&](const std::string& name, const std::string& st) {
    return fmt::format("    %{n}o = arith.muli {st}, %sbm : index\n"
                       "    %{n} = tile.make_block_ptr %sa, [%lar, %sbk], [%lp, %c1], [%{n}o, %c0] : !tile.ptr<{dt}> -> {aP}\n",
                       fmt::arg("n", name), fmt::arg("st", st), fmt::arg("dt", dt), fmt::arg("aP", t.aP));
  };
  // Local views of B operand `w` (0: b, 1: SwiGLU's b2; buffer %sb / %sb2).
  auto bView = [&](int w, const std::string& name, const std::string& st) {
    std::string off = s.weightsNK ? fmt::format("[%c0, %{}o]", name) : fmt::format("[%{}o, %c0]", name);
    return fmt::format("    %{n}o = arith.muli {st}, {step} : index\n"
                       "    %{n} = tile.make_block_ptr %sb{w}, {shape}, {off} : !tile.ptr<{dt}> -> {bP}\n",
                       fmt::arg("n", name), fmt::arg("st", st), fmt::arg("step", s.weightsNK ? "%sbn" : "%sbk"),
                       fmt::arg("w", w ? "2" : ""), fmt::arg("shape", bLocal), fmt::arg("off", off),
                       fmt::arg("dt", dt), fmt::arg("bP", t.bP));
  };
  const int nb = s.swiglu ? 2 : 1;  // B operands
  // Copies of K block `j` into stage `st`.
  // `ibA` / `ibB`: A's / B's copies lie inside their arrays (no bounds
  // arithmetic per run).
  // %{p}ko: the first K element of this program's K block `j` (its K
  // blocks start at %kbLo when K is split across programs).
  auto kOffset = [&](const std::string& p, const std::string& j) {
    return s.splitKPrograms ? fmt::format("    %{p}kj = arith.addi {j}, %kbLo : index\n"
                                          "    %{p}ko = arith.muli %{p}kj, %bk : index\n",
                                          fmt::arg("p", p), fmt::arg("j", j))
                            : fmt::format("    %{p}ko = arith.muli {j}, %bk : index\n", fmt::arg("p", p),
                                          fmt::arg("j", j));
  };
  auto copy = [&](const std::string& p, const std::string& j, const std::string& st, bool ibA, bool ibB) {
    std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
    std::string c = kOffset(p, j) +
                    fmt::format("    %{p}ga = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %{p}ko] : !tile.ptr<{dt}> -> {aP}\n"
                                "{la}    tile.async_copy %{p}la, %{p}ga {{contiguous = 1 : i64{ib}}} : {aP}\n",
                                fmt::arg("p", p), fmt::arg("j", j), fmt::arg("dt", dt), fmt::arg("aP", t.aP),
                                fmt::arg("ib", ibA ? ", in_bounds" : ""),
                                fmt::arg("la", aView(p + "la", st)));
    for (int w = 0; w < nb; ++w) {
      std::string q = p + (w ? "2" : "");
      c += fmt::format("    %{q}gb = tile.make_block_ptr %b{w}, [%K, %N], {bs}, [%{p}ko, %col] : !tile.ptr<{dt}> -> {bP}\n"
                       "{lb}    tile.async_copy %{q}lb, %{q}gb {{contiguous = {bd} : i64{ib}}} : {bP}\n",
                       fmt::arg("p", p), fmt::arg("q", q), fmt::arg("ib", ibB ? ", in_bounds" : ""), fmt::arg("w", w ? "2" : ""), fmt::arg("dt", dt),
                       fmt::arg("bP", t.bP), fmt::arg("bs", bStrides), fmt::arg("bd", bDim),
                       fmt::arg("lb", bView(w, q + "lb", st)));
    }
    return c;
  };
  std::string loads = fmt::format("{la}    %x = tile.load %ua {{in_bounds, contiguous = 1 : i64, run = 8 : i64}} : {aP}\n",
                                  fmt::arg("la", aView("ua", "%st")), fmt::arg("aP", t.aP));
  std::string swz = s.groupDot ? ", swizzle = 128 : i64" : "";
  std::string allocs = fmt::format("    %sa = tile.alloc {{size = {} : i64{}}} : !tile.ptr<{}>\n", S * M * P, swz, dt);
  std::string accs, types, yields;
  for (int w = 0; w < nb; ++w) {
    std::string q = w ? "2" : "";
    loads += fmt::format("{lb}    %y{q} = tile.load %ub{q} {{in_bounds, contiguous = {bd} : i64, run = 8 : i64}} : {bP}\n"
                         "    %d{q} = tile.dot %x, %y{q}, %acc{q}{hint} : {aT} * {bT} -> {cT}\n",
                         fmt::arg("lb", bView(w, "ub" + q, "%st")), fmt::arg("q", q), fmt::arg("bP", t.bP),
                         fmt::arg("bd", bDim), fmt::arg("hint", t.hint), fmt::arg("aT", t.aT), fmt::arg("bT", t.bT),
                         fmt::arg("cT", t.cT));
    allocs += fmt::format("    %sb{} = tile.alloc {{size = {} : i64{}}} : !tile.ptr<{}>\n", q, bSize, swz, dt);
    accs += fmt::format("{}%acc{} = %zero", w ? ", " : "", q);
    types += (w ? ", " : "") + t.cT;
    yields += fmt::format("{}%d{}", w ? ", " : "", q);
  }
  // The pipeline: S - 1 blocks copied ahead, then the K loop, each step
  // waiting for its block, freeing the stage the last step read (the
  // workgroup barrier) and refilling it with block i + S - 1. `copies(p,
  // j, st)` copies K block j into stage st; `open` starts a step (the wait
  // and anything before it), `close` ends a copy group, `after` follows a
  // step's copies.
  // `refillLast` (dots in flight): a step issues its dots first and
  // refills after its `tail` (the wait that leaves one group in flight,
  // so the stage step i - 1 read is free once every warp has passed it).
  using Copies = std::function<std::string(const std::string&, const std::string&, const std::string&)>;
  auto pipelineText = [&](const Copies& copies, const std::string& open, const std::string& close,
                          const std::string& after, const std::string& tail = "", const std::string& drain = "",
                          bool refillLast = false) {
    std::string refill = fmt::format(R"(    tile.barrier
    %j = arith.addi %i, %ns1 : index
    %jin = arith.cmpi slt, %j, %nk : index
    scf.if %jin {{
    %js = arith.remui %j, %ns : index
{lcopy}    }}
{close}{after})",
                                     fmt::arg("lcopy", copies("l", "%j", "%js")), fmt::arg("close", close),
                                     fmt::arg("after", after));
    return fmt::format(R"(    scf.for %s = %c0 to %ns1 step %c1 {{
    %pin = arith.cmpi slt, %s, %nk : index
    scf.if %pin {{
{pcopy}    }}
{close}    }}
    %sr:{nb} = scf.for %i = %c0 to %nk step %c1 iter_args({accs}) -> ({types}) {{
{open}{body}      scf.yield {yields} : {types}
    }}
{drain})",
                       fmt::arg("pcopy", copies("p", "%s", "%s")), fmt::arg("open", open), fmt::arg("close", close),
                       fmt::arg("body", refillLast ? loads + tail + refill : refill + loads + tail), fmt::arg("nb", nb),
                       fmt::arg("accs", accs), fmt::arg("types", types), fmt::arg("yields", yields),
                       fmt::arg("drain", drain));
  };
  // cp.async: commit groups; at step i the wait leaves S - 2 groups in
  // flight (block i has landed). `ibA` / `ibB`: A's / B's copies without
  // bounds arithmetic (when K is whole K blocks: A's for a program whose
  // rows lie inside M, B's for one whose columns lie inside N).
  auto pipeline = [&](bool ibA, bool ibB) {
    return pipelineText([&](const std::string& p, const std::string& j, const std::string& st) { return copy(p, j, st, ibA, ibB); },
                        fmt::format("    tile.async_wait {{pending = {} : i64}}\n", S - 2),
                        "    tile.async_commit\n", "    %st = arith.remui %i, %ns : index\n");
  };
  // TMA: stage st's copies are one arrival each on mbarrier st, whose
  // phase n holds K block n S + st, so step i waits for parity (i / S) mod
  // 2 of barrier i % S. Copies read zeros outside the arrays, so one
  // pipeline serves interior and edge programs.
  auto tmaCopy = [&](const std::string& p, const std::string& j, const std::string& st) {
    std::string c = kOffset(p, j) +
                    fmt::format("{la}"
                                "    tile.tma_copy %{p}la, %amap[%{p}ko, %row], %bars[{st}] : {aP}, !tile.ptr<i8>, !tile.ptr<i64>\n",
                                fmt::arg("p", p), fmt::arg("st", st), fmt::arg("aP", t.aP),
                                fmt::arg("la", aView(p + "la", st)));
    for (int w = 0; w < nb; ++w) {
      std::string q = p + (w ? "2" : "");
      c += fmt::format("{lb}    tile.tma_copy %{q}lb, %bmap{w}[%{p}ko, %col], %bars[{st}] : {bP}, !tile.ptr<i8>, !tile.ptr<i64>\n",
                       fmt::arg("lb", bView(w, q + "lb", st)), fmt::arg("q", q), fmt::arg("p", p),
                       fmt::arg("w", w ? "2" : ""), fmt::arg("st", st), fmt::arg("bP", t.bP));
    }
    return c;
  };
  auto tmaPipeline = [&]() {
    return fmt::format("    tile.mbarrier_init %bars {{arrivals = {} : i64}} : !tile.ptr<i64>\n", nb + 1) +
           pipelineText(tmaCopy,
                        "    %st = arith.remui %i, %ns : index\n    %round = arith.divui %i, %ns : index\n"
                        "    %parity = arith.remui %round, %c2 : index\n"
                        "    tile.mbarrier_wait %bars[%st], %parity : !tile.ptr<i64>\n",
                        "", "", inFlight ? "    tile.group_dot_wait {pending = 1 : i64}\n" : "",
                        inFlight ? "    tile.group_dot_wait {pending = 0 : i64}\n" : "", inFlight);
  };
  std::string acc2 = s.swiglu ? "%sr#1" : "";
  std::string consts = fmt::format(R"(    %sbm = arith.constant {BM} : index
    %sbn = arith.constant {BN} : index
    %sbk = arith.constant {BK} : index
    %lar = arith.constant {LAR} : index
    %lbc = arith.constant {LBC} : index
    %lbr = arith.constant {LBR} : index
    %lp = arith.constant {P} : index
    %lpn = arith.constant {PN} : index
    %ns = arith.constant {S} : index
    %ns1 = arith.constant {S1} : index
{nk})",
                                   fmt::arg("BM", M), fmt::arg("BN", N), fmt::arg("BK", K),
                     fmt::arg("LAR", S * M), fmt::arg("LBC", S * N), fmt::arg("LBR", S * K), fmt::arg("P", P),
                                   fmt::arg("PN", PN), fmt::arg("S", S), fmt::arg("S1", ahead),
                                   // K blocks: all of them, or this program's share.
                                   fmt::arg("nk", s.splitKPrograms ? "    %nk = arith.addi %nkS, %c0 : index\n"
                                                                   : "    %bk1 = arith.subi %bk, %c1 : index\n"
                                                                     "    %kb0 = arith.addi %K, %bk1 : index\n"
                                                                     "    %nk = arith.divui %kb0, %bk : index\n"));
  std::string fast = t.finish("sf", "%sr#0", acc2, " {in_bounds}", storesCByTma(s)),
              edge = t.finish("se", "%sr#0", acc2, "");
  if (s.tma) {
    // Kernels that store C by TMA store a row-edge block's (columns inside
    // N: every program where M is below one block) by TMA too, the map
    // dropping its rows past M: stored element by element, checked, a
    // 128 x 128 SwiGLU at 96-112 rows trailed 128 rows by 3-6 us with
    // every row of A loaded (H100, 2026-11-25, docs/cuda.md "Padded
    // activations and row-edge TMA stores").
    if (storesCByTma(s))
      edge = fmt::format("    scf.if %colsIn {{\n{}    }} else {{\n{}    }}\n",
                         t.finish("sw", "%sr#0", acc2, "", true), edge);
    return fmt::format(R"({allocs}    %bars = tile.alloc {{size = {S} : i64}} : !tile.ptr<i64>
    %c2 = arith.constant 2 : index
{consts}{pipeline}    scf.if %interior {{
{fast}    }} else {{
{edge}    }}
)",
                       fmt::arg("allocs", allocs), fmt::arg("S", S), fmt::arg("consts", consts),
                       fmt::arg("pipeline", tmaPipeline()), fmt::arg("fast", fast), fmt::arg("edge", edge));
  }
  // Three pipelines: every copy unchecked (interior programs, K whole),
  // only A's checked (columns inside N, rows not: every program when M is
  // below the block's rows, as at decode; K whole), all checked.
  return fmt::format(R"({allocs}{consts}    %kbr = arith.remui %K, %bk : index
    %kwhole = arith.cmpi eq, %kbr, %c0 : index
    %full = arith.andi %interior, %kwhole : i1
    %colsWhole = arith.andi %colsIn, %kwhole : i1
    scf.if %full {{
{inside}{fast}    }} else {{
    scf.if %colsWhole {{
{rowEdge}{edge}    }} else {{
{checked}    scf.if %interior {{
{fast}    }} else {{
{edge}    }}
    }}
    }}
)",
                     fmt::arg("allocs", allocs), fmt::arg("consts", consts), fmt::arg("inside", pipeline(true, true)),
                     fmt::arg("rowEdge", pipeline(false, true)), fmt::arg("checked", pipeline(false, false)),
                     fmt::arg("fast", fast), fmt::arg("edge", edge));
}

// CPU form: panel-packed weights, programs of several register blocks, K
// walked in chunks (see GemmKernelSpec::microM / chunkK).
std::string emitPackedGemm(const GemmKernelSpec& s) {
  if (s.dtype != "f32") fail("gemm kernel: panel-packed (CPU) kernels are f32 only (got {})", s.dtype);
  if (s.microM <= 0 || s.blockM % s.microM != 0 || s.blockK != 1)
    fail("gemm kernel: program rows {} must be whole register blocks of {} rows, and K steps 1 (got {})", s.blockM,
         s.microM, s.blockK);
  // 6-row register blocks (t6), and 4-row blocks (t4) for remainders of 2
  // and 4 rows (8 rows as two 4-row blocks instead of a 6-row block and a
  // cut 6-row block). The lambdas below emit for the block shape *cur.
  GemmText t6 = gemmText(s);
  GemmKernelSpec s4 = s;
  s4.microM = 4;
  GemmText t4 = gemmText(s4);
  t4.zero = "%zero4";
  const bool small = s.microM == 6;
  const GemmText* cur = &t6;
  const char* ib = " {in_bounds}";
  std::vector<std::string> ptrs = {"%ap", "%bp", "%bp2"};
  // The register block's pointers %ap, %bp (%bp2), %cp at rows %row, K
  // offset `k`: B is program column block pn's panel, rows [pn K, pn K + K)
  // of a [panels K, blockN] array (zero-padded: no column edge); C's view
  // has `cRows` rows.
  auto blockPtrs = [&](const char* k, const char* cRows = "%M") {
    std::string p = fmt::format(R"(    %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, {k}] : !tile.ptr<f32> -> {aP}
    %bo = arith.addi %koff, {k} : index
    %bp = tile.make_block_ptr %b, [%kend, %bn], [%bn, %c1], [%bo, %c0] : !tile.ptr<f32> -> {bP}
    %cp = tile.make_block_ptr %c, [{cRows}, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<{cS}>
)",
                                fmt::arg("k", k), fmt::arg("aP", cur->aP), fmt::arg("bP", cur->bP),
                                fmt::arg("cRows", cRows), fmt::arg("cS", cur->cS));
    if (s.swiglu)
      p += fmt::format(
          "    %bp2 = tile.make_block_ptr %b2, [%kend, %bn], [%bn, %c1], [%bo, %c0] : !tile.ptr<f32> -> {}\n",
          cur->bP);
    return p;
  };
  // The whole K of one register block from zeros, then the epilogue. `aIb`
  // marks A's loads in bounds (all but a remainder's masked rows), `cIb`
  // C's (and bias / residual) accesses. K steps of 1 never cross K, so B's
  // loads are always whole.
  auto wholeK = [&](const std::string& p, const char* aIb, const char* cIb) {
    return cur->kLoop("%" + p, "%c0", "%K", {cur->zero, cur->zero}, ptrs, aIb, ib) +
           cur->epilogue(p, "%" + p + "#0", "%" + p + "#3", cIb);
  };
  // One chunk [%kc, %kce) of one register block, from zeros (the first
  // chunk) or from the partial sums stored in C; the last chunk runs the
  // epilogue, the others store the partial sums.
  auto chunk = [&](const std::string& p, const std::string& init, const char* aIb, const char* cIb) {
    std::string lines, start;
    if (s.prefetchNext) {
      // This block's share of the next chunk's lines (a contiguous run:
      // the hardware prefetchers follow it too): blocks start (row - r0) *
      // kcs / microM lines in (6-row blocks tile the chunk), capped so every
      // block prefetches inside the next chunk; blocks past the cap
      // prefetch lines already in L2 (measured cheaper than a second loop
      // without prefetches, whose extra live registers spilled; lines one
      // per B row, strided, lost 5 %; 2026-11-21).
      start = fmt::format(R"(    %{p}o = arith.subi %row, %r0 : index
    %{p}ol = arith.muli %{p}o, %linesPerRow : index
    %{p}oc = arith.minsi %{p}ol, %lastLines : index
    %{p}of = arith.muli %{p}oc, %lw : index
    %{p}ls = arith.addi %nextBase, %{p}of : index
)",
                          fmt::arg("p", p));
      lines = "%" + p + "ls";
    }
    return start + cur->kLoop("%" + p, "%kc", "%kce", {init}, ptrs, aIb, ib, lines) +
           fmt::format("      scf.if %last {{\n{}      }} else {{\n        tile.store %cp, %{}#0{} : !tile.block_ptr<{}>\n      }}\n",
                       cur->epilogue(p, "%" + p + "#0", "", cIb), p, cIb, cur->cS);
  };
  // The program's rows [r0, r1): a remainder of fewer than microM rows
  // first, then whole register blocks. The remainder is a whole block at
  // r0 whose C view ends at its last row, so the rows it shares with the
  // next block are computed but neither read nor written (C's accesses are
  // masked, A's loads are not); only with M < microM are A's rows masked.
  // With 6-row blocks (`small`), a remainder of 4 rows runs as one 4-row
  // block and one of 2 rows (after at least one 6-row block) as two: no
  // rows computed for nothing (%use4; the 6-row blocks then start at
  // %fullStart). `work(p, aIb, cIb)` is one block's work at %row, `pre(cIb)`
  // what comes before it (both for the block shape *cur).
  auto rows = [&](const char* k, const std::function<std::string(const std::string&, const char*, const char*)>& work,
                  const std::string& p, const std::function<std::string(const char*)>& pre, const char* cIb) {
    std::string cut = fmt::format(R"(  scf.if %hasRem {{
    %row = arith.addi %r0, %c0 : index
{remPtrs}{preRem}    scf.if %aWhole {{
{remWhole}    }} else {{
{remMasked}    }}
  }}
)",
                                  fmt::arg("remPtrs", blockPtrs(k, "%remEnd")), fmt::arg("preRem", pre("")),
                                  fmt::arg("remWhole", work(p + "r", ib, "")),
                                  fmt::arg("remMasked", work(p + "m", "", "")));
    std::string full = fmt::format(R"(  scf.for %rb = %c0 to %nfullE step %c1 {{
    %rbo = arith.muli %rb, %mr : index
    %row = arith.addi %fullStart, %rbo : index
{ptrs}{pre}{work}  }}
)",
                                   fmt::arg("ptrs", blockPtrs(k)), fmt::arg("pre", pre(cIb)),
                                   fmt::arg("work", work(p, ib, cIb)));
    if (!small) return cut + full;
    cur = &t4;
    std::string quads = fmt::format(R"(  scf.if %use4 {{
  scf.for %q = %c0 to %n4 step %c1 {{
    %qo = arith.muli %q, %c4 : index
    %row = arith.addi %r0, %qo : index
{ptrs}{pre}{work}  }}
  }} else {{
{cut}  }}
)",
                                    fmt::arg("ptrs", blockPtrs(k)), fmt::arg("pre", pre(cIb)),
                                    fmt::arg("work", work(p + "q", ib, cIb)), fmt::arg("cut", cut));
    cur = &t6;
    return quads + full;
  };
  auto none = [](const char*) { return std::string(); };
  auto body = [&](const char* cIb) {
    if (s.chunkK && !s.swiglu) {
      // Per chunk, every block of the program (first from zeros, later from
      // the partial sums in C).
      std::string fromZero = rows("%kc", [&](const std::string& p, const char* a, const char* c) {
        return chunk(p, cur->zero, a, c);
      }, "g", none, cIb);
      std::string fromC = rows("%kc", [&](const std::string& p, const char* a, const char* c) {
        return chunk(p, "%cv", a, c);
      }, "h", [&](const char* c) {
        return fmt::format("    %cv = tile.load %cp{} : !tile.block_ptr<{}>\n", c, cur->cS);
      }, cIb);
      std::string next;
      if (s.prefetchNext)
        next = "    %nextRow = arith.addi %koff, %kce : index\n"
               "    %nextBase = arith.muli %nextRow, %bn : index\n";
      return fmt::format(R"(  scf.for %kc = %c0 to %K step %kcs {{
    %kce0 = arith.addi %kc, %kcs : index
    %kce = arith.minsi %kce0, %K : index
{next})",
                         fmt::arg("next", next)) + fmt::format(R"(    %first = arith.cmpi eq, %kc, %c0 : index
    %last = arith.cmpi eq, %kce, %K : index
    scf.if %first {{
{fromZero}    }} else {{
{fromC}    }}
  }}
)",
                         fmt::arg("fromZero", fromZero), fmt::arg("fromC", fromC));
    }
    return rows("%c0", [&](const std::string& p, const char* a, const char* c) { return wholeK(p, a, c); }, "w", none,
                cIb);
  };

  // Where the 6-row blocks start and how many there are (after 4-row
  // blocks or a cut block, see `rows`).
  std::string blocks = small ? fmt::format(R"(  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero4 = arith.constant dense<0.0> : {cT4}
  %rem4 = arith.cmpi eq, %rem, %c4 : index
  %rem2 = arith.cmpi eq, %rem, %c2 : index
  %hasFull = arith.cmpi sgt, %nfull, %c0 : index
  %split2 = arith.andi %rem2, %hasFull : i1
  %use4 = arith.ori %rem4, %split2 : i1
  %n4 = arith.select %split2, %c2, %c1 : index
  %q4 = arith.muli %n4, %c4 : index
  %quadEnd = arith.addi %r0, %q4 : index
  %fullStart = arith.select %use4, %quadEnd, %remEnd : index
  %nfullLess = arith.subi %nfull, %c1 : index
  %nfullE = arith.select %split2, %nfullLess, %nfull : index
)",
                                           fmt::arg("cT4", t4.cT))
                             : "  %fullStart = arith.addi %remEnd, %c0 : index\n"
                               "  %nfullE = arith.addi %nfull, %c0 : index\n";
  // Next-chunk prefetch: a chunk has kcs * bn / lw lines of lw floats.
  std::string nextConsts;
  if (s.prefetchNext) {
    int64_t lines = s.chunkK * s.blockN / s.prefetchNext;
    nextConsts = fmt::format(R"(  %lw = arith.constant {LW} : index
  %linesPerRow = arith.constant {LPR} : index
  %lastLines = arith.constant {LAST} : index
  %bTotal = arith.muli %kend, %bn : index
)",
                             fmt::arg("LW", s.prefetchNext), fmt::arg("LPR", s.chunkK / s.microM),
                             fmt::arg("LAST", std::max<int64_t>(0, lines - s.chunkK)));
  }
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %mr = arith.constant {MR} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %kcs = arith.constant {KC} : index
  %pfk = arith.constant {PFK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %mr1 = arith.subi %mr, %c1 : index
  %mbs0 = arith.addi %M, %mr1 : index
  %mBlocks = arith.divui %mbs0, %mr : index
  %bm1 = arith.subi %bm, %c1 : index
  %np0 = arith.addi %M, %bm1 : index
  %nprog = arith.divui %np0, %bm : index
  %np1 = arith.subi %nprog, %c1 : index
  %per0 = arith.addi %mBlocks, %np1 : index
  %perBlocks = arith.divui %per0, %nprog : index
  %per = arith.muli %perBlocks, %mr : index
  %after = arith.subi %np1, %pm : index
  %back = arith.muli %after, %per : index
  %r1 = arith.subi %M, %back : index
  %r0u = arith.subi %r1, %per : index
  %r0 = arith.maxsi %r0u, %c0 : index
  %nrows0 = arith.subi %r1, %r0 : index
  %nrows = arith.maxsi %nrows0, %c0 : index
  %nfull = arith.divui %nrows, %mr : index
  %done = arith.muli %nfull, %mr : index
  %rem = arith.subi %nrows, %done : index
  %hasRem = arith.cmpi sgt, %rem, %c0 : index
  %remEnd = arith.addi %r0, %rem : index
  %aWhole = arith.cmpi sge, %M, %mr : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %koff = arith.muli %pn, %K : index
  %kend = arith.addi %koff, %K : index
{nextConsts}  %zero = arith.constant dense<0.0> : {cT}
{blocks}  scf.if %colsIn {{
{inside}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("BM", s.blockM),
                     fmt::arg("MR", s.microM), fmt::arg("BN", s.blockN), fmt::arg("BK", s.blockK),
                     fmt::arg("KC", s.chunkK ? s.chunkK : s.blockK), fmt::arg("PFK", s.prefetchK), fmt::arg("cT", t6.cT),
                     fmt::arg("blocks", blocks), fmt::arg("inside", body(ib)), fmt::arg("edge", body("")),
                     fmt::arg("nextConsts", nextConsts));
}

}  // namespace

std::string emitGemmKernel(const GemmKernelSpec& s) {
  StorageText{s.dtype}.check("gemm");
  if (s.packedB) return emitPackedGemm(s);
  if (s.gemv) return emitGemvKernel(s);
  // B's view is [K, N] either way; for [N, K] storage it is transposed
  // (strides [1, K]).
  std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK;
  GemmText t = gemmText(s);
  std::string args = gemmSignature(s);

  std::vector<std::string> zeros = {"%zero", "%zero"}, ptrs = {"%ap", "%bp", "%bp2"};
  const char* kStart = s.splitKPrograms ? "%klo" : "%c0";
  std::string b2 = s.swiglu ? fmt::format("  %bp2 = tile.make_block_ptr %b2, [%K, %N], {}, [{}, %col] : !tile.ptr<{}> -> {}\n",
                                          bStrides, kStart, s.dtype, t.bP)
                            : "";
  // Interior programs (the whole C block inside C) run the full K blocks
  // without bounds checks, then the K tail checked; programs whose columns
  // are inside but rows are not (every decode program when M < blockM)
  // check only A's loads and C's accesses in the full K blocks; the other
  // edge programs check everything. Ragged shapes thus cost checks only
  // where they are ragged.
  const char* ib = " {in_bounds}";
  // The K range the loops walk: all of K, or this program's share of the K
  // blocks (K split across programs: [%klo, %khi); %kfullS: where its whole
  // blocks end).
  const bool split = s.splitKPrograms;
  const char *kFrom = split ? "%klo" : "%c0", *kTo = split ? "%khi" : "%K", *kWhole = split ? "%kfullS" : "%kfull";
  std::string fast = t.kLoop("%f", kFrom, kWhole, zeros, ptrs, ib, ib) +
                     t.kLoop("%ft", kWhole, kTo, {"%f#0", "%f#3"}, {"%f#1", "%f#2", "%f#4"}, "", "") +
                     t.finish("f", "%ft#0", "%ft#3", " {in_bounds}");
  std::string rowEdge = t.kLoop("%r", kFrom, kWhole, zeros, ptrs, "", ib) +
                        t.kLoop("%rt", kWhole, kTo, {"%r#0", "%r#3"}, {"%r#1", "%r#2", "%r#4"}, "", "") +
                        t.finish("r", "%rt#0", "%rt#3", "");
  std::string edge = t.kLoop("%e", kFrom, kTo, zeros, ptrs, "", "") + t.finish("e", "%e#0", "%e#3", "");
  // 16-bit storage: the fast path's 4-element loads along K need K % 4 = 0.
  std::string kEven = t.st.sixteenBit() ? R"(  %c4 = arith.constant 4 : index
  %kRem = arith.remui %K, %c4 : index
  %kEven = arith.cmpi eq, %kRem, %c0 : index
  %fast = arith.andi %interior, %kEven : i1
  %colsFast = arith.andi %colsIn, %kEven : i1
)"
                                     : "  %colsFast = arith.andi %colsIn, %colsIn : i1\n";

  // K split across programs: program (pm, pn, pk) takes K [klo, khi),
  // whole K blocks ([kbLo, kbLo + nkS)), ceil(K blocks / kSplits) each (the
  // last ones fewer or none); %gridN numbers the C blocks for the counters.
  const std::string kSplitRange = R"(  %pk = tile.program_id 2
  %bkm1 = arith.subi %bk, %c1 : index
  %kbAll0 = arith.addi %K, %bkm1 : index
  %kbAll = arith.divui %kbAll0, %bk : index
)" + splitShare("k", "%kbAll", "%kSplits", "%pk", "%bk", "%K") +
                                  R"(  %kbLo = arith.divui %klo, %bk : index
  %kSpan = arith.subi %khi, %klo : index
  %kSpanUp = arith.addi %kSpan, %bkm1 : index
  %nkS = arith.divui %kSpanUp, %bk : index
  %kfullS0 = arith.minui %kfull, %khi : index
  %kfullS = arith.maxui %kfullS0, %klo : index
  %bnm1 = arith.subi %bn, %c1 : index
  %gridN0 = arith.addi %N, %bnm1 : index
  %gridN = arith.divui %gridN0, %bn : index
)";
  // Staged kernels take the unstaged body only where the copies' 16-byte
  // runs would not be aligned.
  std::string body = fmt::format(R"(  scf.if {fastCond} {{
{fast}  }} else {{
  scf.if %colsFast {{
{rowEdge}  }} else {{
{edge}  }}
  }}
)",
                                 fmt::arg("fastCond", t.st.sixteenBit() ? "%fast" : "%interior"),
                                 fmt::arg("fast", fast), fmt::arg("rowEdge", rowEdge), fmt::arg("edge", edge));
  if (s.stages) {
    if (!t.st.sixteenBit() || s.stages < 2)
      fail("gemm '{}': staging through local memory takes 16-bit storage and at least 2 stages", s.name);
    if (s.groupDot && (!s.weightsNK || s.blockK != 64 || s.numWarps % 4 != 0 ||
                       s.blockM != 16 * s.numWarps || s.tiling != "horizontal"))
      fail("gemm '{}': warpgroup dots take [N, K] weights, K blocks of 64 and 16 rows per warp in the horizontal "
           "tiling", s.name);
    if (s.tma && (!s.groupDot || s.blockM > 256 || s.blockN > 256))
      fail("gemm '{}': TMA copies stage warpgroup-dot operands in boxes of at most 256 rows", s.name);
    if (s.dotsInFlight && !s.tma)
      fail("gemm '{}': dots left in flight take TMA copies (cp.async waits for its copies by count)", s.name);
    // 16-byte runs: K (and N with [K, N] weights) a multiple of 8.
    std::string aligned = "  %c8 = arith.constant 8 : index\n  %k8r = arith.remui %K, %c8 : index\n";
    aligned += s.weightsNK ? "  %staged = arith.cmpi eq, %k8r, %c0 : index\n"
                           : "  %n8r = arith.remui %N, %c8 : index\n  %kn8 = arith.ori %k8r, %n8r : index\n"
                             "  %staged = arith.cmpi eq, %kn8, %c0 : index\n";
    body = aligned + "  scf.if %staged {\n" + stagedBody(s, t) + "  } else {\n" + body + "  }\n";
  }

  // The program's rows [row, row + BM). With TMA, a last row block that
  // would reach past M (M >= BM) moves up to end at M: TMA fills a box's
  // rows outside A with zeros at about the cost of loading them (H100,
  // 2026-11-23: K = 14336, N = 4096, 105 us at 129 rows against 81 at
  // 192; docs/cuda.md "The prefill class at 129-256 rows"), so the block
  // reads only rows of A and is interior. Rows it shares with the block
  // before are computed by both programs with the same instructions on
  // the same inputs and stored twice with the same bits (C aliases
  // neither A nor the residual).
  const std::string rows = s.tma ? R"(  %row0 = arith.muli %pm, %bm : index
  %rowEnd0 = arith.addi %row0, %bm : index
  %past = arith.cmpi sgt, %rowEnd0, %M : index
  %lastRow = arith.subi %M, %bm : index
  %fits = arith.cmpi sge, %lastRow, %c0 : index
  %shift = arith.andi %past, %fits : i1
  %row = arith.select %shift, %lastRow, %row0 : index
)"
                                 : "  %row = arith.muli %pm, %bm : index\n";
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64{minBlocks}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
{rows}  %rowEnd = arith.addi %row, %bm : index
  %rowsIn = arith.cmpi sle, %rowEnd, %M : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %interior = arith.andi %rowsIn, %colsIn : i1
  %cpair = arith.constant 2 : index
  %npr = arith.remui %N, %cpair : index
  %nPairs = arith.cmpi eq, %npr, %c0 : index
{kEven}  %kblocks = arith.divui %K, %bk : index
  %kfull = arith.muli %kblocks, %bk : index
{kRange}  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, {kStart}] : !tile.ptr<{dt}> -> {aP}
  %bp = tile.make_block_ptr %b, [%K, %N], {bStrides}, [{kStart}, %col] : !tile.ptr<{dt}> -> {bP}
{b2}  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> !tile.block_ptr<{cS}>
  %zero = arith.constant dense<0.0> : {cT}
{body}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("W", s.numWarps),
                     fmt::arg("minBlocks", s.minBlocksPerSM
                                               ? fmt::format(", tile.min_blocks_per_sm = {} : i64", s.minBlocksPerSM)
                                               : std::string()),
                     fmt::arg("BM", M),
                     fmt::arg("BN", N), fmt::arg("BK", K), fmt::arg("aP", t.aP), fmt::arg("bP", t.bP),
                     fmt::arg("bStrides", bStrides), fmt::arg("b2", b2), fmt::arg("cT", t.cT), fmt::arg("cS", t.cS),
                     fmt::arg("dt", s.dtype), fmt::arg("kEven", kEven), fmt::arg("body", body),
                     fmt::arg("kStart", kStart), fmt::arg("kRange", split ? kSplitRange : std::string()),
                     fmt::arg("rows", rows));
}

}  // namespace strata::tile
