// Emits the workgroup-level tile IR of the attention region kernels
// (FlashAttention-2 forward; no MLIR here, the kernel is tile IR text).
//
// One program computes `blockM` query rows of one query head. It walks the
// keys in blocks of `blockN`: S = (q * scale * log2 e) k^T, an online softmax
// in base 2 (running max m, running sum l, rescale factor alpha =
// exp2(m_old - m_new)) and O += P V, dividing by l once at the end (delayed
// normalization). Key blocks that every row of the program sees entirely run
// a loop body without masks; only the blocks on the causal diagonal or the
// key boundary go through `tile.mask`. GQA reads KV head h / (heads /
// kvHeads) directly; repeated K/V is never materialized.
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

struct AttentionKernelSpec {
  std::string name = "attention";
  // Paged (ops::pagedAttention): q/o [T, heads * headDim] token-major over
  //   all sequences, the cache [num_blocks, 2, kvHeads, blockN, headDim] read
  //   through i64 block tables; query i of sequence n is at position
  //   context_lens[n] - q_len + i and sees keys up to it (always causal).
  //   Signature (q, cache, o: dtype; block_tables, seq_starts,
  //   context_lens: i64; max_blocks, cache_rows: index), grid
  //   ceil(max q_len / blockM) x heads x sequences.
  // Contiguous (ops::attention): q/o [B, heads, S, headDim], k/v [B, kvHeads,
  //   T, headDim]; causal puts query i at position T - S + i. With keyMask a
  //   [B, T] f32 mask (nonzero = keep) follows v; rows that see no key give 0.
  //   Signature (q, k, v: dtype, [mask: f32,] o: dtype; S, T: index), grid
  //   ceil(S / blockM) x heads x B.
  bool paged = true;
  bool causal = true;
  bool keyMask = false;
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  float scale = 1.f;
  int64_t blockM = 4;   // query rows per program
  int64_t blockN = 16;  // keys per step; paged: the cache's block size
  // Paged only, flash-decoding: the keys of each (query block, head) are
  // split over `kvSplits` programs (program id 0 = query block * kvSplits +
  // split). Each writes its unnormalized partial result instead of o:
  // po [T, heads, kvSplits, headDim], pm and pl (running max and sum)
  // [T, heads, kvSplits]; the combine kernel merges them into o.
  int64_t kvSplits = 1;
  // Storage type of q, k, v (the cache) and o: f32, f16 or bf16 (loads are
  // widened, the output narrowed; the arithmetic is f32). The key mask and
  // the split partials (po, pm, pl) are f32 either way.
  std::string dtype = "f32";
  // GPU form (stages >= 2; f16 / bf16, contiguous, no key mask or splits):
  // FlashAttention-2's split, each of `numWarps` warps takes blockM /
  // numWarps query rows (a multiple of 16), so a row's max and sum stay
  // within its warp. Q
  // is copied into workgroup-local memory once and held in registers; K
  // and V blocks are copied (tile.async_copy) `stages` - 1 blocks ahead of
  // the step that reads them. The dots take the storage type (f32
  // accumulate): S is scaled after q k^T and P narrowed to the storage
  // type for P V. The CPU form (stages 0) is one warp, f32 arithmetic.
  int64_t numWarps = 1;
  int64_t stages = 0;
  // Unstaged GPU form (stages 0, f16 / bf16; the xe target's, one sub-group
  // of block M 8): the GPU form's arithmetic (dots on the storage type with
  // f32 sums, S scaled after q k^T, P narrowed for P V) with Q, K^T and V
  // loaded straight from global memory instead of staged through local
  // memory: on Xe they are 2D block loads into the register file, which
  // holds a program's tiles (the ML-Triton paper's Xe FlashAttention).
  // Contiguous and paged (the CPU paged form's rows, no grouped heads).
  bool storageDots = false;
  // CPU paged form: the head dim is walked in loops over pieces of this
  // many columns (the target's f32 lanes: cpuAttentionSpec), S = q K^T
  // summed piece by piece and O += P V piece by piece with the accumulator
  // kept in the program's own output rows (o, or po with kvSplits > 1):
  // each step holds a [blockM, piece] slice of it, not [blockM, headDim],
  // which fits no CPU register file. 0: the whole head dim at once (the
  // contiguous CPU form ignores it).
  int64_t headPiece = 0;
  // GPU form: Q's fragments stay in registers across the key loop (else
  // each step reads them again from local memory: fewer registers live, for
  // blockings with 32 rows per warp).
  bool qInRegisters = true;
  // GPU form (contiguous or paged prefill): both dots on sm_90's warpgroup
  // MMA. blockM = 16 numWarps (numWarps a multiple of 4: each warpgroup
  // takes 64 query rows); Q, K and V staged in 128-byte swizzled buffers,
  // one per 64 columns of the head dim (a panel); S = Q K^T chained over
  // the panels with both operands in shared memory, O += P V per panel with
  // P in registers and V read N-major. qInRegisters does not apply (Q is
  // never in registers).
  bool groupDots = false;
  // Contiguous warpgroup-dot form: Q, K and V arrive by TMA (tile.tma_copy,
  // one thread a panel, completion on one mbarrier per stage) instead of
  // every thread's cp.async. The signature then ends with three tensor maps
  // (qmap, kmap, vmap: !tile.ptr<i8>, made by the runtime) over q [B heads,
  // S, headDim] and k / v [B kvHeads, T, headDim], 3-D so that a box past a
  // head's last row reads zeros, not the next head's rows; boxes of 64
  // head-dim columns by blockM (q) or blockN (k, v) rows.
  bool tma = false;
  // GPU form: blocks per SM the kernel asks room for (0: no request). ptxas
  // then caps the registers at what that many blocks leave each thread
  // (the function attribute tile.min_blocks_per_sm, PTX .minnctapersm).
  int64_t minBlocksPerSM = 0;
  // GPU decode form (stages >= 2 and paged): one new token per sequence,
  // one program per (KV split, KV head, sequence) of one warp whose 16 rows
  // hold the KV head's heads / kvHeads query heads (the rest are padding,
  // read as zero, never stored). The cache's block size is `pageSize`; a
  // step reads blockN / pageSize pages. The split count is an argument
  // (kvSplits stays 1); at one split the kernel divides by l and stores o
  // itself, otherwise it writes partials and the combine kernel follows.
  // Signature (q, cache: dtype; po, pm, pl: f32; o: dtype; block_tables,
  // context_lens: i64; max_blocks, cache_rows, splits: index), q and o [B,
  // heads * headDim]; partials po [B heads, splits headDim], pm and pl [B
  // heads, splits] (the combine kernel's layout, its signature then ends
  // with splits: index); grid splits x kvHeads x B.
  int64_t pageSize = 0;
  // GPU paged form: true is the decode form above; false the prefill form
  // (chunked prefill too): the CPU paged form's rows (query tokens of one
  // head, causal), signature and grid, with the GPU form's staging and
  // the pages copied one by one (no KV splits).
  bool decode = false;
  // CPU paged form, one query token a sequence (decode): program id 1 is
  // a KV head and the program's blockM = heads / kvHeads rows are that KV
  // head's query heads of the token (q / o viewed as [T heads, D]), so the
  // key blocks are read, and K^T formed, once per KV head instead of once
  // per query head. Grid 1 x kvHeads x sequences; no KV splits. The
  // runtime launches it only on steps whose sequences each have one new
  // token.
  bool groupHeads = false;
};

// Blocking for the host CPU: one warp (a warp's rows are one register block
// on the CPU), blockM query rows; decode (q_len 1) uses blockM = 1 (the
// model planner then groups a KV head's query heads: groupHeads). `lanes`:
// the target's f32 lanes a vector register (UArch::vectorBytes / 4), the
// head-dim piece (headPiece) where it divides the head dim.
AttentionKernelSpec cpuAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, float scale, int64_t blockN,
                                     int64_t queryRows, int64_t lanes = 8);
// The CPU decode form with a KV head's query heads as its rows.
AttentionKernelSpec cpuGroupedDecodeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, float scale, int64_t blockN,
                                         int64_t lanes = 8);

// Blocking for sm_90 (the GPU form, contiguous): warpgroup dots, 16 query
// rows a warp, key blocks of 64, K / V copied one block ahead (2 buffers);
// 128 rows on 8 warps (2 blocks per SM), or 64 rows on 4 warps at head dim
// 64. `fewPrograms` gives the 64-row variant of a
// 128-row kernel (name suffix "_m64") for grids too small to fill the GPU
// with 128-row programs; the runtime picks it (runtime/gpu_kernels.h,
// attentionFor). 64-row kernels ask the blocks per SM shared memory holds:
// 4 at head dim 64, 2 at 128.
AttentionKernelSpec cudaAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, bool causal,
                                      const std::string& dtype, bool fewPrograms = false);
// Whether a kernel set holding `main` (a cudaAttentionSpec) also gets its
// fewPrograms variant: main has 128 rows on warpgroup dots.
bool hasFewProgramsVariant(const AttentionKernelSpec& main);

// Replaces the GPU form's blocking with `text`: "MxNxW@S" (block M query
// rows, N keys per step, W warps, S buffers), a trailing "q" reading Q from
// local memory in every step (qInRegisters = false), e.g. 128x64x4@2q, or
// a trailing "g" for warpgroup dots (groupDots), e.g. 128x64x8@2g, then
// optionally ":B" for minBlocksPerSM = B (128x64x8@2g:3).
// Throws strata::Error naming `what` (an option) on malformed text.
void applyAttentionBlocking(AttentionKernelSpec& s, const std::string& text, const std::string& what);

// The sm_90 paged decode kernel: 16 rows on one warp, 32 keys (pages of
// `pageSize`; a page when larger) per step, 3 buffers.
// The sm_90 paged prefill kernel: cudaAttentionSpec's blocking (causal)
// over pages of `pageSize`; `fewPrograms` its 64-row variant ("_m64", for
// grids too small to fill the GPU with 128-row programs: short prompts;
// the runtime picks it, runtime/gpu_kernels.h, pagedPrefillFor).
AttentionKernelSpec cudaPagedPrefillSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                         const std::string& dtype, bool fewPrograms = false);
AttentionKernelSpec cudaPagedDecodeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                        const std::string& dtype);

// Throws strata::Error on an inconsistent spec (heads % kvHeads, sizes <= 0,
// keyMask on the paged form).
std::string emitAttentionKernel(const AttentionKernelSpec& spec);

// Splits the GPU decode form's combine merges a step (one wait for the
// partials each): a launch of S splits waits ceil(S / this) times
// (kernels.json "combine_splits_per_step"; the runtime's split count
// weighs it).
constexpr int64_t kCombineSplitsPerStep = 16;

// `<name>_combine(po, pm, pl: f32, o: dtype; tokens: index)`, grid tokens x heads
// (one warp each; the GPU form walks the splits in a loop instead of a dot):
// o = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s with M = max_s m_s (a
// split that saw no key has m = -inf and weighs nothing).
std::string emitAttentionCombineKernel(const AttentionKernelSpec& spec);

}  // namespace strata::tile
