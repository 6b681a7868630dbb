#include "runtime/gpu_kernels.h"

#include <array>

#include "ops/abi.h"
#include "ops/error.h"
#include "ops/tensor.h"

namespace strata::runtime {

namespace {


// One launch of kernel k (its function, threads and dynamic shared memory)
// over `grid` with its argument slots.
template <typename Kernel>
void launchOne(const Device& device, const Kernel& k, Dim3 grid, const abi::KernelArgs& args) {
  device.launch(k.function, {grid, {unsigned(k.threads), 1, 1}, unsigned(k.sharedBytes)}, args);
}

// Throws unless `p` is a device buffer aligned to `align` bytes (`kernel`
// and `what` name the launch and the buffer).
void checkBuffer(const std::string& kernel, const void* p, const char* what, uintptr_t align) {
  if (!p) fail("{}: the kernel needs the {} buffer", kernel, what);
  if (reinterpret_cast<uintptr_t>(p) % align) fail("{}: the {} buffer must be {}-byte aligned", kernel, what, align);
}


// A tensor map argument is a buffer of the map's bytes (CUtensorMap: 128).
constexpr int64_t kTensorMapBytes = 128;

}  // namespace

size_t GpuKernelSet::prepareWeightMaps(const std::string& dtype, bool weightsNK, const GemmEpilogue& epilogue,
                                        const void* w, int64_t N, int64_t K) const {
  // Weights TMA cannot map (or a driver without tensor maps) fail at the
  // launch that would read them, as without this call.
  if (!weightsNK || K % 8 || N <= 0 || reinterpret_cast<uintptr_t>(w) % 16) return 0;
  const size_t before = device_.tensorMapCount();
  for (const GpuGemmKernel& k : gemms_)
    if (k.tma && gemmServes(k, dtype, weightsNK, epilogue, N, K)) operandMap(k, w, N, K, k.blockN, "B");
  return device_.tensorMapCount() - before;
}

const void* GpuKernelSet::operandMap(const GpuGemmKernel& k, const void* p, int64_t rows, int64_t K, int64_t boxRows,
                                      const char* what) const {
  return device_.tensorMap({p, k.dtype == "bf16", rows, K, boxRows}, fmt::format("gemm {} ({})", k.name, what));
}

void GpuKernelSet::launch(const GpuGemmKernel& k, const GemmBuffers& bufs, int64_t M, int64_t N, int64_t K,
                           int64_t kSplits) const {
  if (M <= 0 || N <= 0 || K <= 0) fail("gemm {}: M, N, K must be positive, got {}, {}, {}", k.name, M, N, K);
  if (kSplits < 1 || (kSplits > 1 && !k.splitKPrograms))
    fail("gemm {}: {} K splits (the kernel {} split K across programs)", k.name, kSplits,
         k.splitKPrograms ? "can" : "cannot");
  // The kernel's signature (codegen/GemmKernel.h): (a, b, [b_up], c, [bias,
  // [bias_up]], [residual], M, N, K); buffer sizes are element counts.
  abi::KernelArgs args;
  // Buffers are read in 4-byte pairs; staged kernels copy 16-byte runs of
  // the operands (A, B) with cp.async.
  auto buffer = [&](const void* p, int64_t elements, const char* what, uintptr_t align = 4) {
    if (!p) fail("gemm {}: the kernel needs the {} buffer", k.name, what);
    if (reinterpret_cast<uintptr_t>(p) % align)
      fail("gemm {}: the {} buffer must be {}-byte aligned", k.name, what, align);
    args.buffer(p, elements);
  };
  // Staged copies and the GEMV form's vector loads take 16-byte runs.
  const uintptr_t operand = k.stages || k.gemv ? 16 : 4;
  if (k.int8Activations) {
    // (a: i8 [M, K], its scales, its block sums, b, ...): quantizeRows'.
    if (K % k.quant.block) fail("gemm {}: K = {} is not whole {}-value blocks", k.name, K, k.quant.block);
    buffer(bufs.a, M * K, "A (i8)", 16);
    buffer(bufs.aScales, M * K / k.quant.block, "A's block scales");
    buffer(bufs.aSums, M * K / k.quant.block, "A's block sums");
  } else {
    buffer(bufs.a, M * K, "A", operand);
  }
  if (k.quantized()) {
    // (a, b, b_scales, [b_offsets], [b_up, its scales, [its offsets]], ...):
    // the integers in 8-byte runs, K whole blocks of the form's.
    const abi::Int8BlockForm& f = k.quant;
    if (K % f.block) fail("gemm {}: K = {} is not whole {}-value blocks", k.name, K, f.block);
    const int64_t values = f.nibbles ? N * K / 2 : N * K, scales = N * K / (f.superBlock ? f.superBlock : f.block);
    auto weight = [&](const void* v, const void* sc, const void* off, const char* what) {
      buffer(v, values, what, 8);
      buffer(sc, scales, fmt::format("{} scales", what).c_str(), f.superBlock ? 2 : 4);
      if (f.offsets) buffer(off, scales, fmt::format("{} offsets", what).c_str(), f.superBlock ? 2 : 4);
    };
    weight(bufs.b, bufs.bScales, bufs.bOffsets, "B");
    if (k.swiglu) weight(bufs.bUp, bufs.bUpScales, bufs.bUpOffsets, "up-projection B");
  } else {
    buffer(bufs.b, K * N, "B", operand);
    if (k.swiglu) buffer(bufs.bUp, K * N, "up-projection B", operand);
  }
  buffer(bufs.c, M * N, "C");
  if (k.bias) buffer(bufs.bias, N, "bias");
  if (k.bias && k.swiglu) buffer(bufs.biasUp, N, "up-projection bias");
  if (k.residual) buffer(bufs.residual, M * N, "residual");
  args.index(M).index(N).index(K);
  if (k.tma) {
    // Tensor maps over A [M, K] and the [N, K] weights, boxes of the
    // block's rows; the kernel reads them only where K % 8 = 0 (its staged
    // path), so other shapes pass none.
    const bool bf16 = k.dtype == "bf16";
    auto map = [&](const void* p, int64_t rows, int64_t boxRows, const char* what) {
      if (K % 8) return args.buffer(nullptr, 0), void();
      args.buffer(operandMap(k, p, rows, K, boxRows, what), kTensorMapBytes);
    };
    if (bufs.aRows && bufs.aRows < M) fail("gemm {}: A's buffer holds {} rows, fewer than M = {}", k.name, bufs.aRows, M);
    map(bufs.a, gemmTmaRowsA(M, k.blockM, bufs.aRows), k.blockM, "A");
    map(bufs.b, N, k.blockN, "B");
    if (k.swiglu) map(bufs.bUp, N, k.blockN, "up-projection B");
    // C [M, N] as a panel map in boxes of the block (codegen
    // storesCByTma), read where N % 8 = 0 too, by interior blocks only
    // (none below a block's columns).
    if (k.tmaStore) {
      if (K % 8 || N % 8 || N < k.blockN) {
        args.buffer(nullptr, 0);
      } else {
        checkBuffer("gemm " + k.name, bufs.c, "C (stored by TMA)", 16);
        args.buffer(device_.tensorMap({bufs.c, bf16, M, N, k.blockM, 0, k.blockN / 64}, fmt::format("gemm {} (C)", k.name)),
                    kTensorMapBytes);
      }
    }
  }
  // (..., kSplits, ws, counters): one split touches neither buffer.
  if (k.splitKPrograms) {
    args.index(kSplits);
    if (kSplits > 1) {
      buffer(bufs.workspace, gemmWorkspaceBytes(k, M, N, kSplits) / 4, "split-K workspace");
      buffer(bufs.counters, gemmCounterBytes(k, M, N) / 4, "split-K counters");
    } else {
      args.buffer(nullptr, 0).buffer(nullptr, 0);
    }
  }
  const unsigned rowBlocks = unsigned((M + k.blockM - 1) / k.blockM), colBlocks = unsigned((N + k.blockN - 1) / k.blockN);
  if (k.gemv && rowBlocks > 65535)
    fail("gemm {}: the GEMV form takes at most 65535 blocks of {} rows, got {} rows", k.name, k.blockM, M);
  const Dim3 grid = k.gemv ? Dim3{colBlocks, rowBlocks, 1} : Dim3{rowBlocks, colBlocks, unsigned(kSplits)};
  launchOne(device_, k, grid, args);
}

void GpuKernelSet::quantizeRows(const GpuGemmKernel& k, const void* x, void* q, void* scales, void* sums, int64_t M,
                                int64_t K, const void* norm, float eps) const {
  const std::string what = "quantize_rows of gemm " + k.name;
  if (!k.int8Activations) fail("{}: the GEMM takes its A unquantized", what);
  if (norm && !k.normQuantizes) fail("{}: the kernel set has no RMSNorm form of it (compile the set again)", what);
  const int64_t Q = k.quant.block;
  if (M <= 0 || K <= 0 || K % Q || K % 16)
    fail("{}: M = {} and K = {} (K whole {}-value blocks, a multiple of 16)", what, M, K, Q);
  if (M > 65535) fail("{}: at most 65535 rows a launch, got {}", what, M);
  checkBuffer(what, x, "x", 16), checkBuffer(what, q, "q", 16);
  checkBuffer(what, scales, "scales", 4), checkBuffer(what, sums, "sums", 4);
  // (x, [w], q, scales, sums, M, K, [eps]): codegen/QuantizeKernel.h.
  abi::KernelArgs args;
  args.buffer(x, M * K);
  if (norm) {
    checkBuffer(what, norm, "norm weight", 16);
    args.buffer(norm, K);
  }
  args.buffer(q, M * K).buffer(scales, M * K / Q).buffer(sums, M * K / Q).index(M).index(K);
  if (norm) args.f32(eps);
  const int64_t programs = (K / Q + k.quantizeBlocks - 1) / k.quantizeBlocks;
  device_.launch(norm ? k.normQuantize : k.quantize,
                 {{unsigned(programs), unsigned(M), 1}, {unsigned(k.quantizeThreads), 1, 1}, 0}, args);
}

void GpuKernelSet::launch(const GpuAttentionKernel& k, const void* q, const void* kk, const void* v, void* o,
                           int64_t batch, int64_t S, int64_t T) const {
  if (batch <= 0 || S <= 0 || T <= 0)
    fail("attention {}: batch, S and T must be positive, got {}, {}, {}", k.name, batch, S, T);
  if (k.causal && S > T) fail("attention {}: causal attention needs S <= T (query i sits at T - S + i), got {} > {}", k.name, S, T);
  // (q, k, v, o, S, T): codegen/AttentionKernel.h, contiguous form.
  abi::KernelArgs args;
  auto buffer = [&](const void* p, int64_t elements, const char* what) {
    checkBuffer("attention " + k.name, p, what, 16);
    args.buffer(p, elements);
  };
  buffer(q, batch * k.heads * S * k.headDim, "q");
  buffer(kk, batch * k.kvHeads * T * k.headDim, "k");
  buffer(v, batch * k.kvHeads * T * k.headDim, "v");
  buffer(o, batch * k.heads * S * k.headDim, "o");
  args.index(S).index(T);
  if (k.tma) {
    // Tensor maps over q [batch heads, S, D] and k / v [batch kvHeads, T,
    // D]: one plane a head, so a box past its last row reads zeros.
    const bool bf16 = k.dtype == "bf16";
    auto map = [&](const void* p, int64_t planes, int64_t rows, int64_t boxRows, const char* what) {
      args.buffer(device_.tensorMap({p, bf16, rows, k.headDim, boxRows, planes},
                                    fmt::format("attention {} ({})", k.name, what)),
                  kTensorMapBytes);
    };
    map(q, batch * k.heads, S, k.blockM, "q");
    map(kk, batch * k.kvHeads, T, k.blockN, "k");
    map(v, batch * k.kvHeads, T, k.blockN, "v");
  }
  launchOne(device_, k, {unsigned((S + k.blockM - 1) / k.blockM), unsigned(k.heads), unsigned(batch)}, args);
}

void GpuKernelSet::launch(const GpuPagedDecodeKernel& k, const PagedDecodeBuffers& b, int64_t batch,
                           int64_t maxBlocks, int64_t numBlocks, int64_t splits) const {
  if (batch <= 0 || maxBlocks <= 0 || numBlocks <= 0 || splits <= 0)
    fail("paged decode {}: batch, max blocks, cache blocks and splits must be positive, got {}, {}, {}, {}", k.name,
         batch, maxBlocks, numBlocks, splits);
  auto need = [&](const void* p, const char* what, uintptr_t align) { checkBuffer("paged decode " + k.name, p, what, align); };
  // q and the cache are copied in 16-byte runs; the partials are f32.
  need(b.q, "q", 16), need(b.cache, "cache", 16), need(b.tables, "block table", 8), need(b.contextLens, "context length", 8);
  need(b.o, "o", 4), need(b.scratch, "scratch", 256);
  const int64_t rows = batch * k.heads, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  char* scratch = static_cast<char*>(b.scratch);
  auto round = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  void* po = scratch;
  void* pm = scratch + round(rows * splits * k.headDim * 4);
  void* pl = static_cast<char*>(pm) + round(rows * splits * 4);
  // (q, cache, po, pm, pl, o, tables, lens, max_blocks, cache_rows, splits).
  abi::KernelArgs args;
  args.buffer(b.q, rows * k.headDim).buffer(b.cache, cacheRows * k.headDim);
  args.buffer(po, rows * splits * k.headDim).buffer(pm, rows * splits).buffer(pl, rows * splits);
  args.buffer(b.o, rows * k.headDim).buffer(b.tables, batch * maxBlocks).buffer(b.contextLens, batch);
  args.index(maxBlocks).index(cacheRows).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(k.kvHeads), unsigned(batch)}, args);
  // The one program per head stored o.
  if (splits == 1) return;
  // (po, pm, pl, o, tokens, splits).
  abi::KernelArgs combine;
  combine.buffer(po, rows * splits * k.headDim).buffer(pm, rows * splits).buffer(pl, rows * splits);
  combine.buffer(b.o, rows * k.headDim).index(batch).index(splits);
  device_.launch(k.combine, {{unsigned(batch), unsigned(k.heads), 1}, {unsigned(k.combineThreads), 1, 1}, 0}, combine);
}

void GpuKernelSet::launch(const GpuPagedPrefillKernel& k, const PagedPrefillBuffers& b, int64_t sequences,
                           int64_t tokens, int64_t maxNew, int64_t maxBlocks, int64_t numBlocks) const {
  if (sequences <= 0 || tokens <= 0 || maxNew <= 0 || maxBlocks <= 0 || numBlocks <= 0)
    fail("paged prefill {}: sequences, tokens, max new tokens, max blocks and cache blocks must be positive, got {}, "
         "{}, {}, {}, {}",
         k.name, sequences, tokens, maxNew, maxBlocks, numBlocks);
  auto need = [&](const void* p, const char* what, uintptr_t align) { checkBuffer("paged prefill " + k.name, p, what, align); };
  need(b.q, "q", 16), need(b.cache, "cache", 16), need(b.tables, "block table", 8), need(b.starts, "sequence start", 8);
  need(b.contextLens, "context length", 8), need(b.o, "o", 4);
  const int64_t width = k.heads * k.headDim, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  // (q, cache, o, tables, starts, lens, max_blocks, cache_rows).
  abi::KernelArgs args;
  args.buffer(b.q, tokens * width).buffer(b.cache, cacheRows * k.headDim).buffer(b.o, tokens * width);
  args.buffer(b.tables, sequences * maxBlocks).buffer(b.starts, sequences + 1).buffer(b.contextLens, sequences);
  args.index(maxBlocks).index(cacheRows);
  launchOne(device_, k, {unsigned((maxNew + k.blockM - 1) / k.blockM), unsigned(k.heads), unsigned(sequences)}, args);
}

void GpuKernelSet::launch(const GpuGatherRowsKernel& k, const void* table, void* out, const void* ids,
                           int64_t tokens, int64_t rows, int64_t width, const void* scales, const void* offsets) const {
  if (tokens <= 0 || rows <= 0 || width <= 0)
    fail("gather_rows {}: tokens, rows and width must be positive, got {}, {}, {}", k.name, tokens, rows, width);
  const std::string what = "gather_rows " + k.name;
  const abi::Int8BlockForm& q = k.quant;
  if (q.block && (width % q.block || !scales || (q.offsets && !offsets)))
    fail("{}: a row of {} values is not whole blocks of {}, or the scales{} are missing", what, width, q.block,
         q.offsets ? " or offsets" : "");
  checkBuffer(what, table, "table", q.block ? 8 : 2), checkBuffer(what, out, "out", 2), checkBuffer(what, ids, "ids", 8);
  // (table, out, ids, tokens, rows, width[, scales[, offsets]]):
  // codegen/DataMovementKernels.h.
  abi::KernelArgs args;
  args.buffer(table, q.block ? rows * (q.nibbles ? width / 2 : width) : rows * width)
      .buffer(out, tokens * width)
      .buffer(ids, tokens)
      .index(tokens)
      .index(rows)
      .index(width);
  if (q.block) {
    const int64_t scaleBytes = q.superBlock ? 2 : 4;
    checkBuffer(what, scales, "scales", scaleBytes);
    args.buffer(scales, rows * (width / q.block));
    if (q.offsets) checkBuffer(what, offsets, "offsets", scaleBytes), args.buffer(offsets, rows * (width / q.block));
  }
  launchOne(device_, k, {unsigned(tokens), unsigned((width + k.blockN - 1) / k.blockN), 1}, args);
}

void GpuKernelSet::launch(const GpuKvWriteKernel& k, void* cache, const void* kk, const void* v, const void* slots,
                           int64_t tokens, int64_t numBlocks) const {
  if (tokens <= 0 || numBlocks <= 0)
    fail("kv_write {}: tokens and cache blocks must be positive, got {}, {}", k.name, tokens, numBlocks);
  const std::string what = "kv_write " + k.name;
  checkBuffer(what, cache, "cache", 2), checkBuffer(what, kk, "k", 2), checkBuffer(what, v, "v", 2);
  checkBuffer(what, slots, "slots", 8);
  const int64_t width = k.kvHeads * k.headDim, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  // (cache, k, v, slots, tokens, cache_rows).
  abi::KernelArgs args;
  args.buffer(cache, cacheRows * k.headDim).buffer(kk, tokens * width).buffer(v, tokens * width).buffer(slots, tokens);
  args.index(tokens).index(cacheRows);
  launchOne(device_, k, {unsigned(tokens), unsigned(k.kvHeads), 1}, args);
}

void GpuKernelSet::launch(const GpuRopeKvWriteKernel& k, const RopeKvWriteBuffers& b, int64_t tokens,
                           int64_t tableRows, int64_t numBlocks) const {
  if (tokens <= 0 || tableRows <= 0 || numBlocks <= 0)
    fail("rope_kv_write {}: tokens, table rows and cache blocks must be positive, got {}, {}, {}", k.name, tokens,
         tableRows, numBlocks);
  const std::string what = "rope_kv_write " + k.name;
  checkBuffer(what, b.q, "q", 8), checkBuffer(what, b.k, "k", 8), checkBuffer(what, b.v, "v", 8);
  checkBuffer(what, b.y, "y", 8), checkBuffer(what, b.cache, "cache", 8);
  checkBuffer(what, b.cos, "cos", 16), checkBuffer(what, b.sin, "sin", 16);
  checkBuffer(what, b.positions, "positions", 8), checkBuffer(what, b.slots, "slots", 8);
  const int64_t qWidth = k.heads * k.headDim, kvWidth = k.kvHeads * k.headDim, half = k.headDim / 2;
  // (q, k, v, y, cache, cos, sin, positions, slots, tokens, table_rows,
  // cache_blocks): codegen/NormRopeKernels.h.
  abi::KernelArgs args;
  args.buffer(b.q, tokens * qWidth).buffer(b.k, tokens * kvWidth).buffer(b.v, tokens * kvWidth);
  args.buffer(b.y, tokens * qWidth).buffer(b.cache, numBlocks * 2 * kvWidth * k.pageSize);
  args.buffer(b.cos, tableRows * half).buffer(b.sin, tableRows * half);
  args.buffer(b.positions, tokens).buffer(b.slots, tokens);
  args.index(tokens).index(tableRows).index(numBlocks);
  launchOne(device_, k, {unsigned(tokens), unsigned((k.heads + k.kvHeads) / k.headsPerProgram), 1}, args);
}

void GpuKernelSet::launch(const GpuArgmaxKernel& k, const void* x, void* max, void* index, int64_t rows, int64_t n,
                           int64_t chunk, int64_t splits) const {
  if (rows <= 0 || n <= 0 || splits <= 0 || chunk <= 0 || chunk % k.blockN || splits * chunk < n ||
      (splits - 1) * chunk >= n)
    fail("argmax {}: {} rows of {} in {} splits of {} (splits of whole {}-column blocks covering each row)", k.name,
         rows, n, splits, chunk, k.blockN);
  const std::string what = "argmax " + k.name;
  checkBuffer(what, x, "x", 2), checkBuffer(what, max, "max", 4), checkBuffer(what, index, "index", 4);
  // (x, max, index, rows, n, chunk, splits).
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(max, rows * splits).buffer(index, rows * splits);
  args.index(rows).index(n).index(chunk).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(rows), 1}, args);
}

void GpuKernelSet::launch(const GpuTopKKernel& k, const void* x, void* value, void* index, void* mass,
                           const void* scale, int64_t rows, int64_t n) const {
  if (rows <= 0 || n <= 0) fail("topk {}: {} rows of {} (both must be positive)", k.name, rows, n);
  const std::string what = "topk " + k.name;
  checkBuffer(what, x, "x", 2), checkBuffer(what, value, "value", 4), checkBuffer(what, index, "index", 4);
  checkBuffer(what, mass, "mass", 4), checkBuffer(what, scale, "scale", 4);
  const int64_t splits = k.splits(n);
  // (x, value, index, mass, scale, rows, n, splits).
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(value, rows * splits * k.candidates).buffer(index, rows * splits * k.candidates);
  args.buffer(mass, rows * splits).buffer(scale, rows).index(rows).index(n).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(rows), 1}, args);
}

void GpuKernelSet::launch(const GpuRepetitionPenaltyKernel& k, void* x, const void* entries, const void* penalty,
                           int64_t rows, int64_t n, int64_t count) const {
  if (rows <= 0 || n <= 0 || count <= 0)
    fail("repetition_penalty {}: {} rows of {} and {} entries (all must be positive)", k.name, rows, n, count);
  const std::string what = "repetition_penalty " + k.name;
  checkBuffer(what, x, "x", 4), checkBuffer(what, entries, "entries", 8), checkBuffer(what, penalty, "penalty", 4);
  // (x, entries, penalty, rows, n, count): codegen/PenaltyKernel.h.
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(entries, 2 * count).buffer(penalty, rows).index(rows).index(n).index(count);
  launchOne(device_, k, {unsigned(count), 1, 1}, args);
}

void GpuKernelSet::launch(const GpuElementwiseKernel& k, const std::vector<std::pair<const void*, int64_t>>& buffers,
                           int64_t rows) const {
  if (rows <= 0) fail("elementwise {}: {} rows (must be positive)", k.name, rows);
  // (operands..., outputs..., rows): codegen/ElementwiseKernel.h.
  abi::KernelArgs args;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].first) fail("elementwise {}: buffer #{} is null", k.name, i);
    args.buffer(buffers[i].first, buffers[i].second);
  }
  args.index(rows);
  launchOne(device_, k, {unsigned(rows), 1, 1}, args);
}

void GpuKernelSet::launch(const GpuRmsNormKernel& k, const void* x, const void* w, void* y, int64_t rows,
                           int64_t hidden, float eps) const {
  if (rows <= 0 || hidden <= 0) fail("rms_norm {}: rows and hidden must be positive, got {}, {}", k.name, rows, hidden);
  if (!x || !w || !y) fail("rms_norm {}: x, w and y must be device buffers", k.name);
  if (k.laneVector > 1 && hidden % k.laneVector == 0) {
    const uintptr_t align = k.laneVector * ops::dtypeSize(ops::parseDType(k.dtype));
    for (auto [p, what] : {std::pair<const void*, const char*>{x, "x"}, {w, "w"}, {y, "y"}})
      if (reinterpret_cast<uintptr_t>(p) % align)
        fail("rms_norm {}: the {} buffer must be {}-byte aligned (rows of {} elements load as {}-element vectors)",
             k.name, what, align, hidden, k.laneVector);
  }
  // (x, w, y, rows, hidden, eps): codegen/NormRopeKernels.h.
  abi::KernelArgs args;
  args.buffer(x, rows * hidden).buffer(w, hidden).buffer(y, rows * hidden).index(rows).index(hidden).f32(eps);
  launchOne(device_, k, {unsigned(rows), 1, 1}, args);
}

void GpuKernelSet::launch(const GpuRopeKernel& k, const void* x, void* y, const void* cos, const void* sin,
                           const void* positions, int64_t tokens, int64_t tableRows, int64_t kAt) const {
  if (tokens <= 0 || tableRows <= 0)
    fail("rope {}: tokens and table rows must be positive, got {}, {}", k.name, tokens, tableRows);
  if (!x || !y || !cos || !sin || !positions) fail("rope {}: x, y, cos, sin and positions must be device buffers", k.name);
  if (kAt < 0) kAt = tokens * k.heads;
  if (k.kvHeads && kAt < tokens * k.heads)
    fail("rope {}: the k heads start at head row {}, inside the {} tokens' q heads", k.name, kAt, tokens);
  // (x, y, cos, sin, positions, tokens, table_rows[, k_at]): codegen/NormRopeKernels.h.
  const int64_t heads = k.heads + k.kvHeads, half = k.headDim / 2;
  const int64_t elements = (k.kvHeads ? kAt + tokens * k.kvHeads : tokens * k.heads) * k.headDim;
  abi::KernelArgs args;
  args.buffer(x, elements).buffer(y, elements).buffer(cos, tableRows * half).buffer(sin, tableRows * half);
  args.buffer(positions, tokens).index(tokens).index(tableRows);
  if (k.kvHeads) args.index(kAt);
  launchOne(device_, k, {unsigned(tokens), unsigned(heads / k.headsPerProgram), 1}, args);
}


}  // namespace strata::runtime
