#include "codegen/targets/cuda/KernelSet.h"

#include "codegen/KernelSet.h"

#include "ops/abi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "codegen/Artifact.h"
#include "codegen/targets/cuda/Backend.h"
#include "codegen/targets/cuda/Ptxas.h"
#include "ops/error.h"

namespace strata::tile {

namespace fs = std::filesystem;

std::string CudaGemmVariant::suffix() const {
  return fmt::format("{}_{}{}{}{}", dtype, weightsNK ? "nk" : "kn", bias ? "_bias" : "", residual ? "_residual" : "",
                     swiglu ? "_swiglu" : "");
}

std::vector<GemmKernelSpec> cudaGemmKernels(const CudaGemmVariant& v, const GemmBlocking& decode,
                                            const GemmBlocking& medium, const GemmBlocking& prefill,
                                            const GemmBlocking& gemv) {
  struct Class {
    const char* name;
    int64_t rows, maxRows;
  };
  const Class classes[] = {{"decode", kCudaDecodeRows, kCudaDecodeRows},
                           {"medium", kCudaMediumRows, kCudaMediumRows},
                           {"prefill", kCudaPrefillRows, kCudaPrefillRows},
                           {"tall", kCudaTallRows, kCudaTallRows},
                           {"large", 2048, 0}};
  if (decode.gemv || medium.gemv || prefill.gemv)
    fail("a GEMV blocking (MAxRxKxWv) is for the GEMV kernels (--gemv-block), not the decode, medium or prefill "
         "classes");
  if (gemv.warps && !gemv.gemv) fail("the GEMV kernels take a GEMV blocking MAxRxKxWv (--gemv-block)");
  std::vector<GemmKernelSpec> set;
  for (const Class& c : classes) {
    // The tall class exists for the [N, K] blockings that differ there:
    // [K, N] kernels keep the prefill blocking up to kCudaTallRows rows, and
    // SwiGLU has one blocking from the prefill class up (the large class's
    // kernel serves 257-1024 rows alike).
    const bool tall = c.rows == kCudaTallRows;
    if (tall && (!v.weightsNK || v.swiglu)) continue;
    GemmKernelSpec s = cudaGemmSpec(v.dtype, v.weightsNK, c.rows);
    // SwiGLU keeps two accumulators: from the prefill class up, 128 x 64
    // blocks (64 x 32 per warp, twice: the registers of the plain large
    // kernel's 64 x 64). H200, K = 4096, N = 14336 (2026-11-21): M = 2048
    // 223 -> 324 TFLOP/s and M = 256 192 -> 258 against 64 x 64; 64 x 128
    // 256 / 239, 128 x 128 on 8 warps 239 / 205, 128 x 64 x 64 in 3 buffers
    // spills 44 KB.
    // With warpgroup dots ([N, K] weights), 128 x 128 x 64 on two
    // warpgroups in 3 buffers (two 64-register accumulators a thread; 144
    // KiB): H200, 2026-11-22, M = 256 / 2048: 443 / 521 TFLOP/s (64 x 128
    // in 4 buffers 324 / 367, 128 x 64 372 / 413, 64 x 64 344 / 391).
    // In 4 buffers (192 KiB) with each step's dots left in flight
    // (stagedBody): H100, 2026-11-24, M = 1024 / 2048: 427 / 884 ->
    // 366 / 741 us.
    if (v.swiglu && c.rows > kCudaMediumRows) {
      if (s.groupDot) s.blockM = 128, s.blockN = 128, s.blockK = 64, s.numWarps = 8, s.stages = 4, s.dotsInFlight = true;
      else s.blockM = 128, s.blockN = 64, s.blockK = 32, s.numWarps = 4, s.stages = 4;
    }
    // The decode class without SwiGLU, [N, K] weights: 8 buffers (7 K
    // steps of 8 KiB in flight) instead of 4. H100, 2026-11-23, weights
    // from HBM (docs/cuda.md of bd79745 "The GEMV form"), M = 8: 4096 x 6144 / 4096 x
    // 4096 / 4096 x 28672 / 14336 x 4096 22.6 / 16.2 / 92.9 / 48.0 ->
    // 21.8 / 14.9 / 88.6 / 44.7 us, residual at K = 4096 / 14336 16.5 /
    // 48.5 -> 15.3 / 45.2 (M = 2-16 alike); SwiGLU, two weights a step,
    // lost (91.7 -> 93.4).
    if (c.rows == kCudaDecodeRows && v.weightsNK && !v.swiglu) s.stages = 8;
    // The residual add in the prefill class without warpgroup dots: 64 x
    // 128 x 32 blocks in 4 buffers. H100, M = 256, N = 4096, K = 4096 /
    // 14336 (2026-11-22): 110 / 121 TFLOP/s on the plain prefill blocking
    // (64 x 128 x 64, 3 buffers) -> 158 / 176; 128 x 64 149 / 161. (With
    // them the plain blockings win: H200 M = 256 270 / 333 on 64 x 128,
    // M = 2048 437 / 560 on 128 x 256.)
    if (v.residual && !v.swiglu && !s.groupDot && c.rows > kCudaMediumRows && c.rows <= kCudaPrefillRows)
      s.blockM = 64, s.blockN = 128, s.blockK = 32, s.numWarps = 4, s.stages = 4;
    // A --prefill-block replaces both prefill blockings (prefill and large).
    // Warpgroup-dot blockings need [N, K] weights: [K, N] kernels keep
    // their defaults under them.
    const GemmBlocking& b = c.rows <= kCudaDecodeRows ? decode : c.rows <= kCudaMediumRows ? medium : prefill;
    // The class keeps its default blocking (none asked for): only then does
    // it get the measured special cases and variants below.
    const bool ownBlocking = !b.warps;
    if (b.warps && (!b.groupDot || v.weightsNK)) applyBlocking(s, b);
    // The medium class's SwiGLU kernel is built able to split K across
    // programs, though at Llama shapes it runs one split (its 448 programs
    // at N = 14336 fill the SMs; gemmKSplitCount): so built, the same
    // blocking ran faster on the H100 at every row count, 2026-11-23
    // (docs/cuda.md of bd79745 "K split across programs"), K = 4096, N = 14336, one
    // split: 32 / 64 / 96 / 128 rows 68.3 / 59.7 / 125.5 / 114.1 -> 63.5 /
    // 56.8 / 118.0 / 108.0 us (its registers, 2 programs an SM, against
    // the plain form's; not profiled further).
    if (v.swiglu && c.maxRows == kCudaMediumRows && ownBlocking && !s.tma) s.splitKPrograms = true;
    s.bias = v.bias, s.residual = v.residual, s.swiglu = v.swiglu;
    s.name = fmt::format("gemm_{}_{}", v.suffix(), c.name);
    s.maxRows = c.rows == kCudaPrefillRows && !v.weightsNK ? kCudaTallRows : c.maxRows;
    // SwiGLU with [N, K] weights takes the prefill class's 128 x 128
    // blocks from 65 rows: the medium class's 64-row blocks read the
    // weights twice there. H100, 2026-11-24 (docs/cuda.md of bd79745 "Deep and wide
    // GEMMs at 17-256 rows"), K = 4096, N = 14336, weights from HBM: 65 /
    // 96 / 128 rows 125 / 124 / 115 -> 104 / 105 / 93 us (the same blocks
    // built to split K; the prefill kernel is faster still).
    if (v.swiglu && v.weightsNK && c.maxRows == kCudaMediumRows && ownBlocking) s.maxRows = kCudaSplitKRows;
    set.push_back(s);
    // Column variants: plain and residual [N, K] GEMMs of a class's rows
    // (up to `rows`) and output columns get a blocking of their own (not
    // under a --medium-block / --prefill-block, which asks for one).
    auto variant = [&](const char* blocking, const char* suffix, int64_t rows, int64_t minCols, int64_t maxCols,
                       int64_t minDepth = 0, int64_t minRows = 0) {
      GemmKernelSpec x = s;
      applyBlocking(x, parseGemmBlocking(blocking, "column variant"));
      x.name = fmt::format("gemm_{}_{}_{}", v.suffix(), c.name, suffix);
      x.minCols = minCols, x.maxCols = maxCols, x.minDepth = minDepth;
      x.minRows = minRows, x.maxRows = rows;
      set.push_back(x);
    };
    const bool plainOrResidual = v.weightsNK && !v.swiglu && !v.bias;
    // The medium class up to kCudaSplitKRows rows at N <= 4096 splits K
    // across programs: 64-row blocks give only 128 programs there, one an
    // SM. H100, 2026-11-23 (docs/cuda.md of bd79745 "K split across programs"),
    // M = 32 / 64, N = 4096: 17.5 -> 15.7 / 18.7 -> 15.4 us at K = 4096,
    // 65.5 -> 48.6 / 54.5 -> 49.6 with the residual at K = 14336, in two
    // splits (gemmKSplitCount). Not past 64 rows, nor at wider N, nor with
    // SwiGLU: there the split kernel (2 programs an SM by registers, the
    // plain one more) was slower at every split count.
    if (c.maxRows == kCudaMediumRows && plainOrResidual && ownBlocking)
      variant("64x32x64x4gc@6+k", "splitk", kCudaSplitKRows, 0, 4096);
    // Deep K at 65-256 rows and N <= 4096 (the down projection): 64 x 128
    // blocks staged by TMA, their dots in flight, K split across programs
    // (gemmKSplitCount: 4 splits at 65-128 rows, 2-3 above). H100,
    // 2026-11-24 (docs/cuda.md of bd79745 "Deep and wide GEMMs at 17-256 rows"),
    // weights from HBM, K = 14336, N = 4096: 65 / 96 / 128 / 160 / 256 rows
    // 81 / 81 / 66 / 83 / 87 -> 57 / 58 / 59 / 63 / 66 us, with the
    // residual alike. At K = 4096 they lost (24.5 -> 25-29 us), so the
    // variant starts at K = 8192, between the two measured depths.
    const bool deepRows = c.maxRows == kCudaMediumRows || c.maxRows == kCudaPrefillRows;
    if (deepRows && plainOrResidual && ownBlocking) variant("64x128x64x4gf@4+k", "deep", c.maxRows, 0, 4096, kCudaDeepK);
    // Wide N at 17-128 rows (plain): the same 64 x 128 blocks, one split.
    // H100, the same session: 4096 x 28672 at 17 / 64 / 96 / 128 rows
    // 98 / 96 / 139 / 128 -> 86 / 87 / 99 / 99 us.
    if (c.maxRows == kCudaMediumRows && plainOrResidual && !v.residual && ownBlocking)
      variant("64x128x64x4gf@4", "wide", kCudaMediumRows, 16384, 0);
    // The medium class above the split-K variant's rows (65-128) at N <=
    // kCudaMediumUpperCols: 64 x 64 blocks staged by TMA with their dots in
    // flight, in 5 buffers. There the class's own kernel runs two 64-row
    // blocks, each reading the weights by cp.async. H100, 2026-11-24
    // (docs/cuda.md of bd79745 "The medium class on TMA with its dots in flight"),
    // K = 4096, weights from HBM: 96 rows N = 4096 / 6144 24.8 / 33.6 ->
    // 19.1 / 24.0 us, 128 rows 20.5 / 27.6 -> 19.2 / 24.4, residual 21.1 ->
    // 20.3; 2026-11-25, 65 / 80 rows N = 4096 24.1 / 24.3 -> 18.8 / 18.8.
    // At 17-64 rows the same blocks lose to the split-K variant at N = 4096
    // (16.4-17.6 -> 18.8-19.5 us) and tie the class's kernel at N = 6144
    // (22.1-25.0 -> 23.4-25.4), hence the lower row bound (min_rows).
    if (c.maxRows == kCudaMediumRows && plainOrResidual && ownBlocking)
      variant("64x64x64x4gf@5", "upper", kCudaMediumRows, 0, kCudaMediumUpperCols, 0, kCudaSplitKRows + 1);
    // The large class at 1025-1536 rows and N <= 4096: the tall class's
    // 128 x 128 blocks (more programs than 128 x 256 there). H100,
    // 2026-11-24 (docs/cuda.md of bd79745 "The large class's narrow variant"), K x N
    // 4096 x 4096 / 14336 x 4096 at 1152 / 1536 rows: 92 / 284 -> 79 / 244
    // and 95 / 288 -> 88 / 268 us, the residual alike; at 1792 rows and
    // at N = 6144 they lost. Since the same day in 5 buffers, as the tall
    // class (1152 / 1536 rows 4096 x 4096 73.0 / 77.8 -> 69.1 / 73.4 us,
    // 14336 x 4096 238 / 254 -> 224 / 242).
    if (c.maxRows == 0 && plainOrResidual && ownBlocking)
      variant("128x128x64x8gf@5", "narrow", kCudaLargeNarrowRows, 0, 4096);
    // The prefill class up to kCudaColumnVariantRows rows: at 256 rows the
    // class's 64 x 128 blocks give few programs at N = 4096 and take many
    // small steps at N = 28672. H100, 2026-11-23, M = 256 (docs/cuda.md of bd79745
    // "GEMM column variants of the prefill class"): 64 x 64 blocks 91.5 ->
    // 80 us at K = 14336, N = 4096 and 33.4 -> 28.0 with the residual at
    // K = 4096 (but 37 -> 50 at N = 6144); 128 x 128 on two warpgroups
    // 181 -> 157 us at N = 28672 (but 92 -> 107 at N = 4096), and with
    // their dots in flight and the refill after them 147 (2026-11-24).
    // At N <= 4096 the 64 x 64 blocks gave way to 64 x 128 blocks with
    // their dots in flight in 5 buffers (one program an SM, 96-128 of
    // them; 2026-11-24, docs/cuda.md of bd79745 "The prefill class's dots in
    // flight"): K = N = 4096 at 129 / 256 rows 24.4 / 24.3 -> 17.4 / 18.5
    // us, residual 25.3 -> 20.2 at 256; without the dots in flight the
    // same blocks took 25.1, and in 4 buffers 20.1 / 21.5.
    if (c.maxRows == kCudaPrefillRows && plainOrResidual && ownBlocking) {
      variant("64x128x64x4gf@5", "narrow", kCudaColumnVariantRows, 0, 4096);
      if (!v.residual) variant("128x128x64x8gf@4", "wide", kCudaColumnVariantRows, 16384, 0);
    }
  }
  // Few rows with [N, K] weights: the GEMV form, the rows of A against a
  // few weight rows a program (no dots), so a decode step streams each
  // weight row in long runs from many small programs. It is meant for as
  // many rows as its blocking takes a program (max_rows: 1 by default).
  if (v.weightsNK) {
    GemmKernelSpec s = cudaGemmSpec(v.dtype, true, 1);
    applyBlocking(s, gemv.warps ? gemv
                                : parseGemmBlocking(v.swiglu ? kCudaSwigluGemvBlocking : kCudaGemvBlocking,
                                                    "the GEMV blocking"));
    s.bias = v.bias, s.residual = v.residual, s.swiglu = v.swiglu;
    s.name = fmt::format("gemm_{}_gemv", v.suffix());
    s.maxRows = s.blockM;  // its rows of A a program
    set.push_back(s);
  }
  return set;
}

// The output rows from which the quantized GEMVs run one warp a program,
// and the depth from which the nibble forms' take two again.
constexpr int64_t kQuantGemvWideCols = 4096;
constexpr int64_t kQuantGemvDeepK = 8192;

std::vector<GemmKernelSpec> cudaQuantGemvKernels(const CudaGemmVariant& v, const abi::Int8BlockForm& form) {
  if (!v.weightsNK) fail("quantized GEMMs read [N, K] weights ({})", v.suffix());
  std::vector<GemmKernelSpec> set;
  auto spec = [&](const std::string& kind, int64_t maxRows, const char* blocking) {
    GemmKernelSpec q = cudaGemmSpec(v.dtype, true, 1);
    q.weightDtype = "i8";
    q.quantBlock = form.block, q.quantNibbles = form.nibbles, q.quantOffsets = form.offsets;
    q.quantSuper = form.superBlock;
    applyBlocking(q, parseGemmBlocking(blocking, "quantized GEMM"));
    q.bias = v.bias, q.residual = v.residual, q.swiglu = v.swiglu;
    q.name = fmt::format("gemm_{}_{}_{}", v.suffix(), kind, abi::int8FormName(form));
    q.maxRows = maxRows;
    return q;
  };
  // The GEMV's integer form (A quantized to i8, dp4a).
  auto integerGemv = [&](const std::string& kind, int64_t maxRows, const std::string& blocking) {
    GemmKernelSpec g = spec(kind, maxRows, blocking.c_str());
    g.int8Activations = true;
    return g;
  };
  // One row: 2 warps of 32 block rows a step, so K = 64 blocks (2048 values
  // of Q8_0 / Q4_K, 1024 of Q6_K) runs without a checked tail; 4 weight
  // rows a program.
  set.push_back(integerGemv("gemv", 1, fmt::format("1x4x{}x2v", 64 * form.block)));
  // From 4096 output rows: one warp a program (32 block rows a step), two
  // weight rows a program. H200, the Llama-3-8B shape's batch-1 step
  // (bench-model): one warp against two took Q4_K_M 3.30-3.43 -> 3.07-3.10
  // ms, Q8_0 3.35 -> 3.32-3.34 (2026-12-01, four weight rows); then 1 / 2
  // / 4 / 8 weight rows: Q8_0 3.15-3.24 / 2.91-2.92 / 3.18 / 3.36 ms,
  // Q4_K_M 2.97 / 2.81 / 2.86 (2026-12-01, two calls). Narrower outputs
  // (k / v, 1024 rows: 256 programs) keep two warps: ncu, each alone, 4.6
  // -> 5.6 us on one.
  set.push_back(integerGemv("gemv_wide", 1, fmt::format("1x2x{}x1v", 32 * form.block)));
  set.back().minCols = kQuantGemvWideCols;
  // Nibble forms, from K = 8192 (the down projection): two warps again,
  // each a half of the K step. H200, 2026-12-01, the Llama-3-8B shape's
  // batch-1 step, two rounds in one call: Q4_K_M 2.98 / 3.01 -> 2.93 /
  // 2.92 ms; for Q8_0 the same variant was slower (3.17 -> 3.24 / 3.41,
  // four warps 3.33 / 3.34), so its forms keep one warp.
  if (form.nibbles) {
    set.push_back(integerGemv("gemv_deep", 1, fmt::format("1x4x{}x2v", 64 * form.block)));
    set.back().minCols = kQuantGemvWideCols;
    set.back().minDepth = kQuantGemvDeepK;
  }
  // Up to 4 and 8 rows: the same integer form with the rows of A in one
  // program, so each weight block is read once for all of them.
  for (auto [rows, weightRows] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}})
    set.push_back(integerGemv(fmt::format("gemv_rows{}", rows), rows,
                              fmt::format("{}x{}x{}x2v", rows, weightRows, 64 * form.block)));
  // More rows: mma.sync dots on weight blocks widened into shared memory
  // (GemmKernel.cpp's dequantCopy), each weight read once per row block.
  // Decode batches up to 16 rows on 16 x 32 blocks over 2 warps (the
  // widened tiles take 16 weight rows a warp); more on 64 x 64 blocks over
  // 4 warps.
  set.push_back(spec("mma", kCudaDecodeRows, "16x32x64x2@4"));
  set.push_back(spec("mma_wide", 0, "64x64x64x4@3"));
  return set;
}

QuantizeRowsKernelSpec cudaQuantizeRowsSpec(const GemmKernelSpec& gemv, bool norm) {
  if (!gemv.int8Activations) fail("gemm {}: only the i8-activation GEMV quantizes its rows", gemv.name);
  QuantizeRowsKernelSpec q;
  q.name = fmt::format("{}quantize_rows_{}_q{}", norm ? "rmsnorm_" : "", gemv.dtype, gemv.quantBlock);
  q.dtype = gemv.dtype;
  q.block = gemv.quantBlock;
  q.numWarps = 4;
  q.norm = norm;
  return q;
}

std::vector<QuantizeRowsKernelSpec> cudaQuantizeRowsKernels(const std::vector<GemmKernelSpec>& gemms) {
  std::vector<QuantizeRowsKernelSpec> set;
  for (const GemmKernelSpec& g : gemms)
    if (g.int8Activations)
      for (bool norm : {false, true}) {
        QuantizeRowsKernelSpec q = cudaQuantizeRowsSpec(g, norm);
        if (std::ranges::none_of(set, [&](const QuantizeRowsKernelSpec& o) { return o.name == q.name; }))
          set.push_back(q);
      }
  return set;
}

std::vector<GemmKernelSpec> cudaGemmKernelSet(const GemmBlocking& decode, const GemmBlocking& medium,
                                              const GemmBlocking& prefill, const GemmBlocking& gemv) {
  std::vector<GemmKernelSpec> set;
  for (const char* dt : {"bf16", "f16"})
    for (CudaGemmVariant v : {CudaGemmVariant{dt, false}, CudaGemmVariant{dt, true},
                              CudaGemmVariant{dt, true, false, true}, CudaGemmVariant{dt, true, false, false, true},
                              CudaGemmVariant{dt, true, true}}) {
      auto k = cudaGemmKernels(v, decode, medium, prefill, gemv);
      set.insert(set.end(), k.begin(), k.end());
      if (!v.weightsNK) continue;
      for (const abi::Int8BlockForm& f : abi::gpuInt8Forms()) {
        auto q = cudaQuantGemvKernels(v, f);
        set.insert(set.end(), q.begin(), q.end());
      }
    }
  return set;
}

RmsNormKernelSpec cudaRmsNormSpec(const std::string& dtype) {
  // A row over 8 warps, 16 elements per lane: a hidden size up to 4096 is
  // one step, all its loads in flight at once. One warp with 32 per lane
  // (the earlier form) took 7.0 us a row on the H200 at hidden 4096, bf16
  // (2026-11-21; 9.7 with 8 per lane); a decode step runs 65 of them.
  // Each lane's 16 elements come as 16-byte vectors where the row allows
  // (RmsNormKernelSpec::laneVector).
  return {fmt::format("rms_norm_{}", dtype), 8 * 32 * 16, dtype, 8, dtype == "f32" ? 4 : 8};
}

std::vector<RmsNormKernelSpec> cudaRmsNormKernelSet() {
  std::vector<RmsNormKernelSpec> set;
  for (const char* dt : {"f32", "bf16", "f16"}) set.push_back(cudaRmsNormSpec(dt));
  return set;
}

ArgmaxKernelSpec cudaArgmaxSpec(const std::string& dtype) { return {fmt::format("argmax_{}", dtype), 32 * 32, dtype}; }

void cudaElementwiseBlocking(ElementwiseKernelSpec& s) {
  s.numWarps = 1, s.blockN = 32;
  for (int64_t block = 8 * 32 * 8; block >= 32; block /= 2)
    if (s.cols % block == 0) {
      s.numWarps = std::min<int64_t>(8, block / 32), s.blockN = block;
      return;
    }
}

std::vector<ArgmaxKernelSpec> cudaArgmaxKernelSet() {
  return {cudaArgmaxSpec("bf16"), cudaArgmaxSpec("f16"), cudaArgmaxSpec("f32")};
}

// 64 candidates cover HF's default top-k (50) and, for a trained model's
// peaked distributions, the usual top-p nucleus; a draw the candidates do
// not settle takes the whole row (runtime/sampler.h).
TopKKernelSpec cudaTopKSpec(const std::string& dtype) { return {fmt::format("topk_{}", dtype), 32 * 32, 64, dtype}; }

std::vector<TopKKernelSpec> cudaTopKKernelSet() { return {cudaTopKSpec("bf16"), cudaTopKSpec("f16"), cudaTopKSpec("f32")}; }

std::vector<RepetitionPenaltyKernelSpec> cudaRepetitionPenaltyKernelSet() { return {{"repetition_penalty_f32"}}; }

RopeKernelSpec cudaRopeSpec(int64_t heads, int64_t headDim, const std::string& dtype) {
  RopeKernelSpec s{fmt::format("rope_{}_h{}_d{}", dtype, heads, headDim), heads, headDim, dtype};
  // Up to 8 heads a program (the most of 8, 4, 2, 1 that divides the
  // heads) in lane vectors of 4 elements (8-byte x, 16-byte cos / sin
  // accesses) instead of one head a warp in element accesses: H100,
  // 2026-11-24 (docs/cuda.md of bd79745 "RoPE on the GPU").
  while (heads % (s.headsPerProgram * 2) == 0 && s.headsPerProgram < 8) s.headsPerProgram *= 2;
  if ((headDim / 2) % 4 == 0) s.laneVector = 4;
  return s;
}

RopeKernelSpec cudaJoinedRopeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, const std::string& dtype) {
  RopeKernelSpec s = cudaRopeSpec(std::gcd(heads, kvHeads), headDim, dtype);
  s.name = fmt::format("rope_{}_h{}k{}_d{}", dtype, heads, kvHeads, headDim);
  s.heads = heads;
  s.kvHeads = kvHeads;
  return s;
}

RopeKvWriteKernelSpec cudaRopeKvWriteSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                          const std::string& dtype) {
  const RopeKernelSpec r = cudaJoinedRopeSpec(heads, kvHeads, headDim, dtype);
  RopeKvWriteKernelSpec s{fmt::format("rope_kv_write_{}_h{}k{}_d{}_p{}", dtype, heads, kvHeads, headDim, pageSize),
                          heads, kvHeads, headDim, pageSize, dtype};
  s.headsPerProgram = r.headsPerProgram;
  s.laneVector = r.laneVector;
  return s;
}

std::vector<RopeKernelSpec> cudaRopeKernelSet() {
  std::vector<RopeKernelSpec> set;
  for (const char* dt : {"bf16", "f16"}) {
    for (int64_t heads : {32, 8}) set.push_back(cudaRopeSpec(heads, 128, dt));
    set.push_back(cudaJoinedRopeSpec(32, 8, 128, dt));
  }
  return set;
}

std::vector<AttentionKernelSpec> cudaAttentionKernelSet(const std::string& blocking) {
  std::vector<AttentionKernelSpec> set;
  struct Heads {
    int64_t heads, kvHeads, headDim;
  };
  for (const char* dt : {"bf16", "f16"})
    for (Heads h : {Heads{32, 32, 64}, Heads{32, 32, 128}, Heads{32, 8, 128}})
      for (bool causal : {true, false}) {
        set.push_back(cudaAttentionSpec(h.heads, h.kvHeads, h.headDim, causal, dt));
        if (!blocking.empty())
          applyAttentionBlocking(set.back(), blocking, "--attention-block");
        else if (hasFewProgramsVariant(set.back()))
          set.push_back(cudaAttentionSpec(h.heads, h.kvHeads, h.headDim, causal, dt, true));
      }
  return set;
}

// A --paged-decode-block blocking (NxS[xW]) applied to a decode spec.
void applyPagedDecodeBlocking(AttentionKernelSpec& s, const std::string& blocking) {
  if (blocking.empty()) return;
  long n = 0, stages = 0, warps = 1;
  int used = 0, usedW = 0;
  int got = std::sscanf(blocking.c_str(), "%ldx%ld%nx%ld%n", &n, &stages, &used, &warps, &usedW);
  if (got == 3) used = usedW;
  if (got < 2 || used != (int)blocking.size() || n <= 0 || stages < 2 || warps <= 0)
    fail("--paged-decode-block '{}': expected NxS[xW] (N keys per step, whole pages; S >= 2 buffers; W warps "
         "sharing a step's keys, default 1), e.g. 32x3 or 128x2x4",
         blocking);
  s.blockN = n, s.stages = stages, s.numWarps = warps;
}

std::vector<AttentionKernelSpec> cudaPagedDecodeKernelSet(const std::string& blocking) {
  std::vector<AttentionKernelSpec> set;
  for (const char* dt : {"bf16", "f16"}) {
    set.push_back(cudaPagedDecodeSpec(32, 8, 128, 16, dt));
    applyPagedDecodeBlocking(set.back(), blocking);
  }
  return set;
}

std::vector<AttentionKernelSpec> cudaPagedPrefillKernelSet() {
  std::vector<AttentionKernelSpec> set;
  for (const char* dt : {"bf16", "f16"}) {
    set.push_back(cudaPagedPrefillSpec(32, 8, 128, 16, dt));
    if (hasFewProgramsVariant(set.back())) set.push_back(cudaPagedPrefillSpec(32, 8, 128, 16, dt, true));
  }
  return set;
}

GatherRowsKernelSpec cudaGatherRowsSpec(const std::string& dtype, const std::string& outDtype) {
  const std::string name = outDtype.empty() || outDtype == dtype ? fmt::format("gather_rows_{}", dtype)
                                                                  : fmt::format("gather_rows_{}_to_{}", dtype, outDtype);
  return {name, 8 * 32, dtype, outDtype == dtype ? "" : outDtype};
}

GatherRowsKernelSpec cudaQuantGatherRowsSpec(const abi::Int8BlockForm& form, const std::string& outDtype) {
  GatherRowsKernelSpec s;
  s.name = fmt::format("gather_rows_{}_to_{}", abi::int8FormName(form), outDtype);
  s.dtype = "i8";
  s.outDtype = outDtype;
  s.quantBlock = form.block, s.quantSuper = form.superBlock;
  s.quantNibbles = form.nibbles, s.quantOffsets = form.offsets;
  // One warp, 8 bytes of integers a lane: 256 bytes of block rows a program.
  s.blockN = 256 / (form.nibbles ? form.block / 2 : form.block) * form.block;
  return s;
}

std::vector<GatherRowsKernelSpec> cudaGatherRowsKernelSet() {
  std::vector<GatherRowsKernelSpec> set;
  for (const char* dt : {"bf16", "f16"}) set.push_back(cudaGatherRowsSpec(dt));
  for (const char* dt : {"bf16", "f16"}) set.push_back(cudaGatherRowsSpec(dt, "f32"));
  for (const char* dt : {"bf16", "f16"})
    for (const abi::Int8BlockForm& f : abi::gpuInt8Forms()) set.push_back(cudaQuantGatherRowsSpec(f, dt));
  return set;
}

std::vector<KvWriteKernelSpec> cudaKvWriteKernelSet() {
  std::vector<KvWriteKernelSpec> set;
  for (const char* dt : {"bf16", "f16"}) set.push_back({fmt::format("kv_write_{}_kv8_d128_p16", dt), 8, 128, 16, dt});
  return set;
}

std::vector<RopeKvWriteKernelSpec> cudaRopeKvWriteKernelSet() {
  return {cudaRopeKvWriteSpec(32, 8, 128, 16, "bf16"), cudaRopeKvWriteSpec(32, 8, 128, 16, "f16")};
}

namespace {

// Writes the set's kernels.mlir, kernels.ptx and kernels.json into `d`
// (kernels.json last: the set is complete).
void writeCudaKernelFiles(const KernelSetSpec& set, const std::string& target, const fs::path& d) {
  // One unit per kernel (a paged decode kernel with its combine), compiled
  // on every hardware thread, the costliest first (`startOrder` below).
  std::vector<std::string> units;
  std::vector<int64_t> cost;
  auto add = [&](std::string unit, int64_t unitCost) {
    units.push_back(std::move(unit));
    cost.push_back(unitCost);
  };
  forEachKernelText(set, add);
  const std::vector<QuantizeRowsKernelSpec> quantizes = cudaQuantizeRowsKernels(set.gemms);
  for (const QuantizeRowsKernelSpec& q : quantizes) add(emitQuantizeRowsKernel(q), 0);
  // The order the units start in. A unit's compile and ptxas time grow with
  // its accumulators, which the warp-level dots and the epilogue unroll
  // over: `cost` is their elements a program (block rows x columns; SwiGLU
  // keeps two, a residual epilogue loads a third operand; attention S and
  // O), 0 for the kernels without dots. On the tiny-llama set the four
  // costliest by this count (128 x 256 large, 128 x 128 SwiGLU) are the four
  // slowest to assemble (3.9-4.9 s of 43.7 s for the 46 kernels on one
  // thread); the last of them to finish bounds the set's compile, so they
  // start first.
  std::vector<size_t> startOrder(units.size());
  std::iota(startOrder.begin(), startOrder.end(), 0);
  std::stable_sort(startOrder.begin(), startOrder.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  // The tile IR first: a compile that fails leaves the IR it failed on.
  std::string ir;
  for (const std::string& u : units) ir += u;
  writeText(d / "kernels.mlir", ir);
  // Machine code beside the PTX when ptxas is here: the runtime loads it
  // instead of JIT-compiling the PTX. Each unit's module is assembled into
  // kernels.<unit>.cubin on the thread that compiled it, as soon as it is
  // compiled, so ptxas overlaps the other units' compiles instead of
  // running over the whole set at the end. The manifest names the files, so
  // cubins left from an earlier set are never loaded; they are removed,
  // with the earlier manifest (its presence says a set is complete) and any
  // unit's PTX a failed assembly kept.
  std::error_code ec;
  fs::remove(d / "kernels.json", ec);
  for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
    const std::string f = e.path().filename().string();
    const bool unitFile = f.ends_with(".cubin") || (f.ends_with(".ptx") && f != "kernels.ptx");
    if (f.starts_with("kernels.") && unitFile) fs::remove(e.path(), ec);
  }
  const std::optional<std::string> ptxas = findPtxas();
  if (ptxas) std::fprintf(stderr, "compiling %zu kernels, each assembled by %s\n", units.size(), ptxas->c_str());
  auto cubinFile = [](size_t unit) { return fmt::format("kernels.{}.cubin", unit); };
  // A unit's PTX is ptxas's input and removed once assembled; a unit ptxas
  // rejects keeps it, for the lines its message names.
  auto assemble = [&](size_t unit, const CudaModule& u) {
    const fs::path ptx = d / fmt::format("kernels.{}.ptx", unit);
    writeText(ptx, u.ptx);
    try {
      assembleCubin(*ptxas, ptx.string(), u.chip, (d / cubinFile(unit)).string());
    } catch (const Error& e) {
      fail("kernel {} (its PTX is kept in {}): {}", u.kernels.empty() ? "?" : u.kernels[0].name, ptx.string(), e.what());
    }
    std::error_code ignored;
    fs::remove(ptx, ignored);
  };
  const auto start = std::chrono::steady_clock::now();
  size_t reported = 0;  // tenths of the set
  CudaModule m = compileCuda(
      units, target, 0,
      [&](size_t done, size_t total) {
        if (done * 10 / total == reported && done != total) return;
        reported = done * 10 / total;
        std::fprintf(stderr, "  %zu / %zu kernels compiled (%.1f s)\n", done, total,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      },
      ptxas ? std::function<void(size_t, const CudaModule&)>(assemble) : nullptr, startOrder);
  // The fields every kind shares (what the runtime launches with), then the
  // kind's own.
  auto entry = [&](const char* kind, const std::string& name, const std::string& dtype, const nlohmann::json& own) {
    for (const CudaKernelInfo& k : m.kernels)
      if (k.name == name) {
        nlohmann::json e = {{"kind", kind}, {"name", name}, {"threads", k.threads}, {"shared_bytes", k.sharedBytes},
                            {"dtype", dtype}};
        if (ptxas) e["cubin"] = k.unit;  // its module: the manifest's cubin.files[unit]
        e.update(own);
        return e;
      }
    fail("cuda backend: kernel {} missing from the compiled module", name);
  };
  nlohmann::json kernels = kernelManifestEntries(set, entry);
  // The i8-activation GEMVs name their quantize_rows kernels (with and
  // without the RMSNorm prologue) and how those launch.
  for (size_t i = 0; i < set.gemms.size(); ++i) {
    if (!set.gemms[i].int8Activations) continue;
    const QuantizeRowsKernelSpec q = cudaQuantizeRowsSpec(set.gemms[i], false), qn = cudaQuantizeRowsSpec(set.gemms[i], true);
    const nlohmann::json e = entry("quantize_rows", q.name, q.dtype, nlohmann::json::object()),
                         en = entry("quantize_rows", qn.name, qn.dtype, nlohmann::json::object());
    if (e["threads"] != en["threads"] || q.blocksPerProgram() != qn.blocksPerProgram())
      fail("cuda backend: {} and {} launch alike", q.name, qn.name);
    kernels[i].update({{"int8_activations", true}, {"quantize", q.name}, {"norm_quantize", qn.name},
                       {"quantize_threads", e["threads"]}, {"quantize_blocks", q.blocksPerProgram()}});
  }
  for (const QuantizeRowsKernelSpec& q : quantizes)
    kernels.push_back(entry("quantize_rows", q.name, q.dtype, {{"block", q.block}, {"norm", q.norm}}));
  writeText(d / "kernels.ptx", m.ptx);
  // Every kernel waits for the previous grid at entry (codegen/targets/cuda/Backend.cpp), so
  // the runtime may launch it programmatically.
  nlohmann::json manifest = {
      {"format", kArtifactFormat}, {"target", target}, {"griddepcontrol_wait", true}, {"kernels", kernels}};
  if (ptxas) {
    nlohmann::json files = nlohmann::json::array();
    for (size_t u = 0; u < units.size(); ++u) files.push_back(cubinFile(u));
    manifest["cubin"] = {{"files", files}, {"chip", m.chip}};
  }
  writeText(d / "kernels.json", manifest.dump(1));  // last: the set is complete
}

}  // namespace

void writeCudaKernels(const KernelSetSpec& set, const std::string& target, const std::string& dir) {
  writeCudaKernelFiles(set, target, outputDir(dir, "kernels.json"));
}

void writeCudaArtifact(const ops::GraphDef& regions, const KernelSetSpec& set, const std::string& arch,
                       const std::string& dtype, int64_t pageSize, const std::string& dir,
                       const nlohmann::json& extraMeta) {
  fs::path d = outputDir(dir, "plan.json");
  std::error_code ec;
  fs::remove(d / "plan.json", ec);  // the artifact is incomplete until plan.json is written again
  ops::GraphDef g = regions;
  for (const auto& [k, v] : extraMeta.items()) g.meta[k] = v;
  g.meta["kernels"] = {{"target", "cuda:" + arch}, {"block_size", pageSize}, {"dtype", dtype}};
  g.meta["artifact"] = {{"format", kArtifactFormat}, {"kernels", "kernels.json"}};
  writeCudaKernelFiles(set, arch, d);
  writeText(d / "plan.json", ops::toJson(g).dump(1));  // last: a plan.json means the artifact is complete
}

}  // namespace strata::tile
