// Emits the workgroup-level tile IR of a GEMM region kernel (no MLIR here:
// the kernel is tile IR text that CpuKernels / strata-opt take in).
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

// C[M, N] = A[M, K] x B, with B stored [K, N] (row-major) or, for Hugging
// Face Linear weights, [N, K] (weightsNK; read through a transposed view).
// Kernel signature: (a, b, c: buffers; M, N, K: index); grid
// ceil(M / blockM) x ceil(N / blockN). Ragged edges need nothing: block
// pointers read zeros and skip writes outside the arrays.
// Epilogues (ops::gemmRegion), applied to the f32 accumulator before the
// one store: `bias` adds a [N] vector per weight, `swiglu` takes two weights
// (gate, up) and stores silu(x W0 + b0) * (x W1 + b1), `residual` adds an
// [M, N] array last. Signature with them: (a, b, [b_up], c, [bias,
// [bias_up]], [residual]: buffers; M, N, K: index).
struct GemmKernelSpec {
  std::string name = "gemm";
  // Storage type of every buffer (f32, f16 or bf16); the dot accumulates in
  // f32 and the epilogue runs in f32 (loads widen, the store narrows).
  std::string dtype = "f32";
  // Packed (CPU) form only: the storage type of B (and b_up) when it is not
  // dtype: f16 / bf16 panels under f32 A, C and epilogue, each B block
  // widened in registers right after its load (the weights are never
  // widened in memory). Empty: dtype.
  std::string weightDtype;
  std::string bDtype() const { return weightDtype.empty() ? dtype : weightDtype; }
  // Packed form, weightDtype "i8" (llama.cpp's block-quantized weights,
  // abi::Int8BlockForm): the panels hold i8 integers in K pairs ([K / 2,
  // 2 blockN] a panel; nibbles: quantNibbles) and a buffer after each weight their f32 scales
  // ([K / quantBlock, blockN] a panel: b_scales, b2_scales), then with
  // quantOffsets their offsets (b_offsets, b2_offsets); A's rows are
  // quantized to i16 per block and multiplied by them in integer dots, the
  // scales and offsets applied once a block (GemmText::int8DotLoop;
  // abi::packInt8BlockPanels lays the panels out). K must be a multiple of
  // quantBlock.
  int64_t quantBlock = 32;
  bool quantOffsets = false;
  // With int8Blocks: 4-bit integers, a K pair per byte (abi::Int8BlockForm::
  // nibbles: [K / 2, blockN] bytes a panel), unpacked in registers into the
  // integer dot's i32 pairs.
  bool quantNibbles = false;
  // With int8Blocks: the scales (and offsets) as the file holds them
  // (abi::Int8BlockForm::superBlock): f16 rows, one per quantSuper K steps
  // and panel (bsc / boff: [K / quantSuper, blockN] a panel), times, with
  // quantSubScales, i8 rows per quantBlock (bss / bos: [K / quantBlock,
  // blockN] a panel), multiplied in the kernel (ggml's f32 products).
  // 0: f32 rows per quantBlock.
  int64_t quantSuper = 0;
  bool quantSubScales = false;
  bool int8Blocks() const { return weightDtype == "i8"; }
  // With int8Blocks, the GEMV form: A comes quantized to i8 in blocks of
  // quantBlock (QuantizeKernel.h: its quantize_rows kernel runs first), and
  // the blocks multiply in four-way byte dot products (GemvI8Kernel.cpp).
  // The signature's A is then three buffers: its i8 values [M, K], f32
  // scales and f32 block sums ([M, K / quantBlock] each).
  bool int8Activations = false;
  bool weightsNK = false;
  bool bias = false, swiglu = false, residual = false;
  // GELU's tanh form on the product (after the bias, before the residual);
  // with swiglu, on the gate instead of silu (GeGLU). The packed (CPU) and
  // GEMV forms only.
  bool gelu = false;
  int64_t blockM = 16, blockN = 16, blockK = 8, numWarps = 4;
  // B (and b_up) panel-packed (abi::packPanels) with panels of blockN
  // columns: program column block pn reads panel pn as a [K, blockN] array
  // with unit column stride; weightsNK then only says how it was packed.
  // Packed kernels (the CPU form, f32) step K by 1 (blockK = 1) and also
  // take the fields below.
  bool packedB = false;
  // Packed form: a program owns about blockM rows (the grid stays
  // ceil(M / blockM) x ceil(N / blockN); the kernel spreads M over that
  // many programs in whole register blocks, the first program taking the
  // remainder) and runs them as register blocks of microM rows. The
  // remainder (fewer than microM rows) runs as a whole block that reads
  // A rows past its own (not past M) with C's accesses masked to its rows,
  // so C must not alias A.
  int64_t microM = 0;
  // Packed form: K is walked in chunks of chunkK (a multiple of blockK) with
  // every register block of the program visited per chunk, so a chunk of
  // the B panel is read from memory once and then reused from cache; the
  // partial sums make a round trip through C between chunks. 0 (and with
  // swiglu, whose second partial sum has nowhere to go): the whole K per
  // register block.
  int64_t chunkK = 0;
  // Packed form: the main K loop prefetches B's (and b_up's) block this
  // many K rows ahead (0: no prefetch). B's K chunk outgrows L1 and the
  // hardware prefetchers do not keep up with a register block's B stream.
  int64_t prefetchK = 0;
  // Packed form with chunks: each register block's K loop also prefetches
  // one line (prefetchNext floats) of B's next chunk per step into L2, the
  // program's blocks splitting the chunk between them, so the chunk's first
  // block does not stream it from memory at one core's memory bandwidth
  // while the compute units wait. 0: off.
  int64_t prefetchNext = 0;
  // Grid form, 16-bit storage: 0 reads the dot operands straight from
  // global memory (each lane its fragments); n >= 2 stages the A and B
  // blocks through workgroup-local memory in n buffers filled by
  // tile.async_copy (cp.async on sm_90) n - 1 K steps ahead of the dots,
  // which read them with ldmatrix. Staged kernels need K % 8 = 0 (and N % 8
  // = 0 with [K, N] weights) and 16-byte aligned buffers; other shapes take
  // the unstaged path inside the same kernel. With swiglu both B operands
  // are staged.
  int64_t stages = 0;
  // Programs an SM the kernel must leave room for (blocking suffix ":B";
  // PTX .minnctapersm, so ptxas caps the registers to fit them); 0: no
  // request.
  int64_t minBlocksPerSM = 0;
  // Staged form on sm_90: the dots run on the warpgroup MMA (wgmma), reading
  // A and B from swizzled local buffers (tile.alloc's `swizzle`) instead of
  // registers. Needs [N, K] weights (both operands K-major), blockK = 64,
  // 16 rows per warp in the horizontal tiling (blockM = 16 x numWarps) and
  // staging.
  bool groupDot = false;
  // Warpgroup-dot kernels on sm_90: the staging copies are TMA box copies
  // (tile.tma_copy, one thread per K step, completion on one mbarrier per
  // stage) instead of every thread's 16-byte cp.async runs. The kernel then
  // takes one tensor map per operand after M, N, K: (..., M, N, K, a_map,
  // b_map, [b_up_map]) as !tile.ptr<i8>, each a 128-byte CUtensorMap in
  // global memory over the operand's [rows, K] storage (bf16 / f16, K
  // contiguous) with a box of 64 (K) x blockM (A) or blockN (B) and the
  // 128-byte swizzle; elements outside arrive as zeros, so ragged edges
  // take the same copies. Maps are read only on the staged path (K % 8 =
  // 0, operands 16-byte aligned); elsewhere they may be null.
  bool tma = false;
  // TMA warpgroup-dot kernels (blocking suffix "gf"): each K step's dots
  // stay in flight while the next step waits for its block and issues its
  // own (tile.group_dot_wait {pending = 1}), so the step's barrier does
  // not drain the tensor cores. A step refills after its dots and that
  // wait (the stage of step i - 1 is then free), so blocks are still
  // copied stages - 1 steps ahead. For two warpgroups a program (they meet
  // at every step's barrier and would drain at once): H100, 2026-11-24,
  // docs/cuda.md of bd79745 "Warpgroup dots left in flight".
  bool dotsInFlight = false;
  // Grid form: K is also split across programs, kSplits of them per C block
  // (a launch argument; the grid's third dim). Each walks its share of the
  // K blocks; with more than one split it stores its f32 partial C block
  // (two with swiglu) in the workspace and arrives at its C block's
  // counter (tile.arrive); the last to arrive sums the splits' partials in
  // split order (the same sums whatever the arrival order) and runs the
  // epilogue. Signature: (..., M, N, K, kSplits: index, ws: !tile.ptr<f32>,
  // counters: !tile.ptr<i32>): ws [kSplits (x 2 with swiglu), M, N],
  // counters [ceil(M / blockM) ceil(N / blockN)] zero before a launch and
  // left zero by it. Not with TMA copies.
  bool splitKPrograms = false;
  // GEMV form (no dots; codegen/GemvKernel.cpp): program (pn, pm)
  // computes C[pm blockM .. + blockM, pn blockN .. + blockN) from blockM
  // rows of A (rows past M clamped to M - 1: they store row M - 1's bits
  // again, so C must alias neither A nor the residual) and blockN rows of
  // [N, K] weights (weightsNK), walking K in [1, blockK] rows spread over
  // the warps (blockK a multiple of 32 x numWarps) with f32 sums, then one
  // reduction per C element. The grid form's signature; its grid is
  // (ceil(N / blockN), ceil(M / blockM)): the column blocks on x, which
  // holds lm_head's 128256 rows. Each lane holds its part of a [1, blockK]
  // row in 16-byte vectors, loaded whole where K is a multiple of them (A
  // and B 16-byte aligned); other K take a checked path of element loads.
  // Meant for one row (batch-1 decode; blockM = 1), right for any M.
  bool gemv = false;
  std::string tiling = "horizontal";  // the dot's tiling hint ("" = let assign-layouts choose)
  // GPU kernel sets: the most rows (M) this blocking is meant for (0: any);
  // recorded in kernels.json for the runtime's choice (GpuKernelSet::gemmFor).
  int64_t maxRows = 0;
  // GPU kernel sets: the output columns (N) this blocking is meant for
  // (0: no bound; kernels.json min_cols / max_cols). A kernel with a
  // column bound is a column variant: the runtime takes it only when N is
  // within it, and before the unbounded kernel of the same max_rows.
  int64_t minCols = 0, maxCols = 0;
  // GPU kernel sets: the least K this blocking is meant for (0: any;
  // kernels.json min_depth): a depth variant, taken like a column variant
  // only when K is at least this, and before a variant of fewer bounds.
  int64_t minDepth = 0;
  // GPU kernel sets: the least rows (M) this blocking is meant for (0: any;
  // kernels.json min_rows): a row variant, taken like a column variant only
  // when M is at least this, for the upper rows of a class whose lower rows
  // another blocking serves better.
  int64_t minRows = 0;
};

// Register-blocked defaults for a CPU uArch row, reading panel-packed
// weights (packedB) four vector registers wide, for problems of at most
// `rows` rows (0: any). M >= 2: register blocks of 6 rows x 4 vectors, K
// chunks and rows per program sized by the row's L2; up to kCpuSmallRows
// rows ("gemm_small") the K loops also prefetch B's next chunk
// (prefetchNext). M = 1 (decode, a GEMV that streams the weights once):
// 1 row x 4 vectors, so no FMAs are spent on rows that do not exist.
// weightDtype f16 / bf16: B stays in that type (16-bit panels, widened in
// registers; GemmKernelSpec::weightDtype); i8: i8 panels and f32 scales
// (GemmKernelSpec::int8Blocks). `swiglu`: two weights summed
// into two accumulator sets, so the register block is half as wide.
constexpr int64_t kCpuSmallRows = 64;
GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows = 0,
                           const std::string& weightDtype = "f32", bool swiglu = false);

std::string emitGemmKernel(const GemmKernelSpec& spec);
// The GEMV form's kernel (GemmKernelSpec::gemv), which emitGemmKernel
// returns for such specs.
std::string emitGemvKernel(const GemmKernelSpec& spec);
// The quantized GEMV's integer form (GemmKernelSpec::int8Activations),
// which emitGemvKernel calls for it.
std::string emitInt8ActivationGemvKernel(const GemmKernelSpec& spec);
// The kernel parameters every GEMM form shares (GemmKernelSpec's
// contract), as tile IR function arguments.
std::string gemmSignature(const GemmKernelSpec& spec);
// Whether a TMA kernel's interior blocks store C by TMA (tile.tma_store
// from the A stage buffer, which the drained pipeline no longer needs, and
// which holds a [blockM, blockN] block: blockN whole 64-column panels, at
// most stages x blockK): then its signature ends its tensor maps with
// %cmap, a panel map over C [M, N] in boxes of the block (null where
// N % 8 != 0 or K % 8 != 0: those take the pairs). Not with K split
// across programs, whose last program sums partials. The stores of 4-byte
// pairs it replaces cost the large kernel 15-17 % at K = 4096 (H100,
// 2026-11-24, docs/cuda.md of bd79745 "Where the gap is: C's stores").
inline bool storesCByTma(const GemmKernelSpec& s) {
  return s.tma && !s.splitKPrograms && s.blockN % 64 == 0 && s.blockN <= s.stages * s.blockK;
}

// Blocking for the sm_90 kernels (f16/bf16 storage), every one staged
// through shared memory (cp.async; TMA for the prefill and large
// warpgroup-dot kernels, GemmKernelSpec::tma). Decode (rows <= kCudaDecodeRows):
// mma.sync on 16 x 32 blocks, K steps of 128 split over 4 warps (split_k),
// so the weights stream once with many copies in flight, 4 buffers. From
// the medium class up, [N, K] weights run warpgroup dots (groupDot):
// medium (<= kCudaMediumRows) 64 x 32 x 64 blocks on one warpgroup in 6
// buffers, prefill (<= kCudaPrefillRows) 64 x 128 x 64 in 4, tall (<=
// kCudaTallRows) 128 x 128 x 64 on two warpgroups in 4 and large 128 x 256
// x 64 on two warpgroups in 4, both with each K step's dots left in flight. [K, N] weights stay on mma.sync with
// ldmatrix: medium 64 x 32 blocks, K steps of 128 split over 4 warps, 3
// buffers; prefill 64 x 128 x 64, 4 warps in assign-layouts' square grid,
// 3 buffers; large 128 x 128 x 32, 4 warps, 4 buffers.
constexpr int64_t kCudaDecodeRows = 16, kCudaMediumRows = 128, kCudaPrefillRows = 256, kCudaTallRows = 1024;
// One row with [N, K] weights (batch-1 decode) takes the GEMV form
// (GemmKernelSpec::gemv) with this blocking (cudaGemmKernels' "gemv" class,
// max_rows 1): one weight row a program, K steps of 1024 over 4 warps (one
// 16-byte vector a lane). H100, 2026-11-23, weights read from HBM
// (bench-gemm --cold-weights), K x N 4096 x 6144 / 4096 x 4096 / 4096 x
// 28672 / 14336 x 4096: 20.5 / 15.2 / 87.7 / 46.7 us on the decode class's
// mma kernel -> 19.0 / 13.2 / 76.0 / 42.0 (SwiGLU 91.5 -> 77.7); 2 rows a
// program 19.4 / 13.8 / 78.4 / 41.5 (SwiGLU 81.2), 2048-element steps on
// 8 warps 21.1 / 14.7 / 86.8 / 42.2, 4 rows or 2 vectors a lane slower
// still (docs/cuda.md of bd79745 "The GEMV form"). H200, 2026-12-01,
// bench-gemm --cold-weights: two weight rows a program took the plain and
// residual GEMVs 3-10 % faster (down 34.9 -> 31.6 us, N = 28672 67.3 ->
// 60.5: 3.49 -> 3.88 TB/s) and SwiGLU's 7 % slower (62.2 -> 66.8), so
// SwiGLU keeps one (kCudaSwigluGemvBlocking).
constexpr const char* kCudaGemvBlocking = "1x2x1024x4v";
constexpr const char* kCudaSwigluGemvBlocking = "1x1x1024x4v";
// The prefill class's column variants (cudaGemmKernels) are meant for up to
// this many rows: measured better at 256 rows, worse at 512-1024 (H100,
// 2026-11-23: Llama-3-8B TTFT at 512 / 1024 tokens 17.8 / 35.0 -> 21.3 /
// 40.3 ms with the narrow one up to 1024 rows).
constexpr int64_t kCudaColumnVariantRows = 256;
// The medium class's split-K column variant (cudaGemmKernels) is meant for
// up to this many rows: one row of 64-row blocks.
constexpr int64_t kCudaSplitKRows = 64;
// The medium class's upper variant (64 x 64 TMA blocks, codegen/targets/cuda/KernelSet.cpp)
// is meant for its rows above the split-K variant's, up to N = this.
constexpr int64_t kCudaMediumUpperCols = 6144;
// The least K of the deep variants of the medium and prefill classes
// (GemmKernelSpec::minDepth; codegen/targets/cuda/KernelSet.cpp).
constexpr int64_t kCudaDeepK = 8192;
// The large class's narrow variant (the tall class's 128 x 128 blocks at
// N <= 4096) is meant for up to this many rows (codegen/targets/cuda/KernelSet.cpp).
constexpr int64_t kCudaLargeNarrowRows = 1536;
GemmKernelSpec cudaGemmSpec(const std::string& dtype, bool weightsNK, int64_t rows);

// A block shape for cudaGemmSpec's kernels: "MxNxKxW" (block M, N, K, warps).
// With M = 16 (one fragment row) the warps go side by side along N, else in
// assign-layouts' square grid; with a trailing "s" (splitK) the warps split
// K instead (the dot's split_k tiling: each warp walks K / W of every K
// block for the whole C block, summed across warps after the K loop); a
// final "@S" stages operands through shared memory in S buffers
// (GemmKernelSpec::stages; without it, none); a trailing "g" (before @S)
// runs the dots on the warpgroup MMA (GemmKernelSpec::groupDot) with TMA
// copies ("gc": with cp.async copies instead); a final "+k" splits K across
// programs too (GemmKernelSpec::splitKPrograms). "MAxRxKxWv" is the GEMV
// form (GemmKernelSpec::gemv): MA rows of A and R weight rows a program, K
// steps of K elements over W warps.
struct GemmBlocking {
  int64_t m = 0, n = 0, k = 0, warps = 0, stages = 0, minBlocksPerSM = 0;
  bool splitK = false, groupDot = false, tma = false, dotsInFlight = false, splitKPrograms = false, gemv = false;
};
// Parses "MxNxKxW[s]"; throws naming `what` when malformed or not made of
// whole mma fragments (M and K multiples of 16, N of 8 per warp; split K:
// N of 8, K of 16 per warp).
GemmBlocking parseGemmBlocking(const std::string& text, const std::string& what);
void applyBlocking(GemmKernelSpec& s, const GemmBlocking& b);

}  // namespace strata::tile
