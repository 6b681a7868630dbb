// A GPU kernel set (`strata compile-kernels`, or the kernels of an artifact
// from `strata compile --target cuda:...`; codegen/Artifact.h: kernels.json
// and the binaries it names) loaded on a device (runtime/device.h), with the
// kernels described by kind, the choice of a kernel for a shape, and the
// launcher that passes the kernel ABI (ops/abi.h). Written against the
// device interface alone: what only one target has (TMA tensor maps,
// early launches) is the device's (Device::tensorMap,
// Device::allowEarlyLaunch). Runtime only: no LLVM on the GPU machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/abi.h"
#include "runtime/device.h"

namespace strata::runtime {

struct GpuGemmKernel {
  std::string name, dtype;  // dtype: storage type of every buffer (bf16, f16)
  bool weightsNK = false, bias = false, residual = false, swiglu = false;
  int64_t blockM = 0, blockN = 0, blockK = 0, threads = 0;
  int64_t sharedBytes = 0;  // dynamic shared memory per block (kernels.json shared_bytes)
  int64_t maxRows = 0;  // the most rows its blocking is meant for (0: any)
  // The output columns (N) it is meant for (0: no bound): a column variant
  // of its row class (kernels.json min_cols / max_cols).
  int64_t minCols = 0, maxCols = 0;
  // The least K it is meant for (0: any; kernels.json min_depth): a depth
  // variant.
  int64_t minDepth = 0;
  // The least rows (M) it is meant for (0: any; kernels.json min_rows): a
  // row variant for the upper rows of its class.
  int64_t minRows = 0;
  int64_t stages = 0;   // shared-memory buffers of A and B (0: not staged); staged: A, B 16-byte aligned
  bool tma = false;     // stages A and B with TMA copies: takes their tensor maps (codegen/GemmKernel.h)
  // Stores C by TMA (kernels.json tma_store; codegen storesCByTma): takes a
  // map over C after A's and B's.
  bool tmaStore = false;
  // K may be split across programs (kernels.json split_k_programs): the
  // kernel takes the split count, a workspace and arrival counters
  // (GemmBuffers).
  bool splitKPrograms = false;
  // The GEMV form (kernels.json gemv; codegen/GemmKernel.h): its grid is
  // (N blocks, M blocks), the N blocks on x, which holds more than 65535.
  bool gemv = false;
  // Block-quantized weights (kernels.json quant_*; a GEMV form): the
  // weights' GPU form (abi::gpuInt8Form), block 0 for weights in dtype.
  abi::Int8BlockForm quant{0};
  bool quantized() const { return quant.block > 0; }
  // The integer form of a quantized GEMV (kernels.json int8_activations;
  // codegen GemmKernelSpec::int8Activations): it takes A quantized to i8 a
  // block (GemmBuffers::a, aScales, aSums), which its quantize_rows kernel
  // (kernels.json quantize, quantize_threads, quantize_blocks: blocks of
  // quant.block values a program) makes (GpuKernelSet::quantizeRows).
  bool int8Activations = false;
  KernelHandle quantize;
  // The same with the RMSNorm prologue (kernels.json norm_quantize; sets
  // compiled before 2026-12-01 have none: normQuantizes false).
  KernelHandle normQuantize;
  bool normQuantizes = false;
  int64_t quantizeThreads = 0, quantizeBlocks = 0;
  // Programs one SM holds at once (the driver's occupancy calculator at
  // load; set only for kernels that split K across programs).
  int64_t residentPerSm = 1;
  KernelHandle function;
};

// The programs (C blocks) of an M x N GEMM by kernel `k`, one K split each.
int64_t gemmProgramCount(const GpuGemmKernel& k, int64_t M, int64_t N);
// The rows of a TMA GEMM's tensor map over A [M, K] in boxes of `blockM`
// rows, where A's buffer holds `heldRows` rows (at least M; 0: just M):
// M rounded up to whole blocks, or as many rows as the buffer holds if
// fewer. Rows past M are computed from whatever the buffer holds there and
// never stored (a row of C depends on its row of A alone; the stores stop
// at M), and a map that covers them spares TMA its zero fill, which costs
// about a load per K step in the last row block's programs (docs/cuda.md of bd79745
// "Padded activations and row-edge TMA stores").
int64_t gemmTmaRowsA(int64_t M, int64_t blockM, int64_t heldRows);
// The K splits of an M x N x K GEMM by kernel `k` (1 unless it splits K
// across programs) on a GPU of `multiprocessors` SMs, beside `alongside`
// programs of GEMMs launched with it (siblings: q / k / v): the most
// splits (at most 8, each walking at least 16 K blocks) for which its and
// its siblings' programs, split alike, all run at once (k.residentPerSm a
// SM). Fitted on the H100 (2026-11-23, docs/cuda.md of bd79745
// "K split across programs"): at 128 programs of 2 a SM, 2 splits beat 1
// and 4 by 10-26%; at 192 programs one split is best. Pure, so its choices
// are tested without a GPU.
int64_t gemmKSplitCount(const GpuGemmKernel& k, int64_t multiprocessors, int64_t M, int64_t N, int64_t K,
                        int64_t alongside = 0);

struct GpuRmsNormKernel {
  std::string name, dtype;  // dtype: storage type of x, w and y (f32, bf16, f16)
  int64_t blockN = 0, threads = 0, sharedBytes = 0;
  // Contiguous elements a lane loads as one vector (kernels.json
  // lane_vector; 0: none): with hidden a multiple of it, x, w and y must be
  // aligned to it.
  int64_t laneVector = 0;
  KernelHandle function;
};

struct GpuRopeKernel {
  std::string name, dtype;  // dtype: storage type of x and y (bf16, f16); cos / sin are f32
  int64_t heads = 0, headDim = 0, threads = 0, sharedBytes = 0;
  // > 0: the k heads rotated in the same launch, after all tokens' q heads
  // (codegen/NormRopeKernels.h).
  int64_t kvHeads = 0;
  int64_t headsPerProgram = 1;  // grid tokens x ((heads + kvHeads) / headsPerProgram)
  KernelHandle function;
};

// FlashAttention-2 forward (codegen/AttentionKernel.h, GPU form): q / o [B,
// heads, S, headDim], k / v [B, kvHeads, T, headDim]; causal puts query i at
// position T - S + i. Scale, heads and head dim are compiled in.
struct GpuAttentionKernel {
  std::string name, dtype;  // dtype: storage type of q, k, v and o (bf16, f16)
  int64_t heads = 0, kvHeads = 0, headDim = 0, blockM = 0, blockN = 0, threads = 0, sharedBytes = 0;
  bool causal = false;
  bool tma = false;  // copies Q, K and V by TMA: takes their tensor maps (codegen/AttentionKernel.h)
  float scale = 0;
  KernelHandle function;
};

// Paged decode attention (codegen/AttentionKernel.h, GPU decode form): one
// new token per sequence, the KV cache [num_blocks, 2, kvHeads, pageSize,
// headDim] read through block tables, keys split over `splits` programs per
// (sequence, KV head) and merged by the combine kernel.
struct GpuPagedDecodeKernel {
  std::string name, dtype;  // dtype: storage type of q, the cache and o (bf16, f16)
  int64_t heads = 0, kvHeads = 0, headDim = 0, pageSize = 0, blockN = 0, threads = 0, sharedBytes = 0;
  int64_t combineThreads = 0;
  // The combine waits for the partials once per this many splits (0: a
  // set from before 2026-11-23 that does not say).
  int64_t combineSplitsPerStep = 0;
  float scale = 0;
  KernelHandle function, combine;
};

// The split count of a paged decode step for `batch` sequences of at most
// `maxContext` tokens, by kernel `k` on a GPU of `multiprocessors` SMs with
// `sharedPerSm` bytes of shared memory each: the count that minimizes
// waves x (keys per split + a fixed cost per program) plus the combine's
// cost when it runs (its launch, and one wait per combineSplitsPerStep
// splits), where a wave is as many programs as the SMs hold at once (by
// shared memory, at most two each) and each split keeps at least one step
// of keys. Pure, so its choices are tested without a GPU.
int64_t pagedDecodeSplitCount(const GpuPagedDecodeKernel& k, int64_t multiprocessors, int64_t sharedPerSm,
                              int64_t batch, int64_t maxContext);

// Paged prefill attention (codegen/AttentionKernel.h, GPU paged prefill
// form): sequences with any number of new tokens (chunked prefill),
// causal over their context in the paged cache.
struct GpuPagedPrefillKernel {
  std::string name, dtype;
  int64_t heads = 0, kvHeads = 0, headDim = 0, pageSize = 0, blockM = 0, threads = 0, sharedBytes = 0;
  float scale = 0;
  KernelHandle function;
};

// Device buffers of one paged prefill step: q / o [tokens, heads *
// headDim] over all sequences, sequence n owning tokens [starts[n],
// starts[n + 1]) with context_lens[n] tokens in the cache (its new ones
// included), block tables [sequences, maxBlocks] (all i64 on the device).
struct PagedPrefillBuffers {
  const void *q = nullptr, *cache = nullptr, *tables = nullptr, *starts = nullptr, *contextLens = nullptr;
  void* o = nullptr;
};

// Device buffers of one paged decode step: q / o [batch, heads * headDim],
// the cache, block tables [batch, maxBlocks] and context lengths [batch]
// (i64), and f32 scratch for the split partials
// (GpuKernelSet::pagedDecodeScratchBytes).
struct PagedDecodeBuffers {
  const void *q = nullptr, *cache = nullptr, *tables = nullptr, *contextLens = nullptr;
  void *o = nullptr, *scratch = nullptr;
};

// Row gather (embedding lookup): out[t, :] = table[ids[t], :], converted
// to outDtype when it differs (the f32 copies of rows a repetition penalty
// changes).
struct GpuGatherRowsKernel {
  std::string name, dtype, outDtype;  // kernels.json "out_dtype" (older sets: dtype)
  int64_t blockN = 0, threads = 0, sharedBytes = 0;
  // A block-quantized table's gather (kernels.json quant_*, dtype i8):
  // its GPU form (abi::gpuInt8Form); block 0 for a plain one.
  abi::Int8BlockForm quant{0};
  KernelHandle function;
};

// Paged KV write: token t's k and v rows [kvHeads * headDim] into cache
// slot slots[t] of [num_blocks, 2, kvHeads, pageSize, headDim].
struct GpuKvWriteKernel {
  std::string name, dtype;
  int64_t kvHeads = 0, headDim = 0, pageSize = 0, threads = 0, sharedBytes = 0;
  KernelHandle function;
};

// region.rope_kv_write (codegen/NormRopeKernels.h): q [tokens, heads *
// headDim] rotated into y, k rotated and v written at slots[t] of the
// cache [num_blocks, 2, kvHeads, pageSize, headDim], one launch.
struct GpuRopeKvWriteKernel {
  std::string name, dtype;
  int64_t heads = 0, kvHeads = 0, headDim = 0, pageSize = 0, threads = 0, sharedBytes = 0;
  int64_t headsPerProgram = 1;  // grid tokens x ((heads + kvHeads) / headsPerProgram)
  KernelHandle function;
};

// Greedy sampling's device half (codegen/GreedyKernel.h).
struct GpuArgmaxKernel {
  std::string name, dtype;  // dtype: storage type of the logits
  int64_t blockN = 0, threads = 0, sharedBytes = 0;
  KernelHandle function;
};

// Sampling's device half (codegen/TopKKernel.h): per split of blockN
// columns, the `candidates` largest values and the split's softmax mass.
struct GpuTopKKernel {
  std::string name, dtype;  // dtype: storage type of the logits
  int64_t blockN = 0, candidates = 0, threads = 0, sharedBytes = 0;
  KernelHandle function;
  int64_t splits(int64_t n) const { return (n + blockN - 1) / blockN; }
};

// The repetition penalty on f32 rows (codegen/PenaltyKernel.h): listed
// entries (row, column) of x divided by their row's penalty when positive,
// else multiplied by it.
struct GpuRepetitionPenaltyKernel {
  std::string name, dtype;  // dtype: f32
  int64_t threads = 0, sharedBytes = 0;
  KernelHandle function;
};

// A fused elementwise region's kernel (codegen/ElementwiseKernel.h): one
// block per row of a [rows, cols] space, every buffer of the storage type.
struct GpuElementwiseKernel {
  std::string name, dtype;
  int64_t blockN = 0, cols = 0, threads = 0, sharedBytes = 0;
  KernelHandle function;
};

// A GEMM kernel's epilogue (codegen/GemmKernel.h).
struct GemmEpilogue {
  bool bias = false, residual = false, swiglu = false;
  // The weights' block-quantized GPU form (abi::gpuInt8Form; block 0: the
  // weights are in the activations' dtype). Not an epilogue, but what
  // else besides dtype and layout picks the kernel.
  abi::Int8BlockForm quant{0};
};

// Whether `g` is a kernel for `dtype`, the weight layout and the epilogue,
// whose column and depth bounds hold N = `cols` and K = `depth` (a bound
// on an unknown value, 0, does not hold).
bool gemmServes(const GpuGemmKernel& g, const std::string& dtype, bool weightsNK, const GemmEpilogue& e, int64_t cols,
                int64_t depth);

// The kernel of `gemms` for `dtype`, weight layout and epilogue meant for
// M = `rows`: the smallest max_rows >= rows (0 counts as unbounded) of the
// kernels whose column bounds hold `cols` (N), whose depth bound holds
// `depth` (K) (a variant with such a bound is skipped when the value is 0,
// unknown) and whose min_rows is at most `rows`; at equal max_rows the
// variant of higher-ranked bounds first (depth over columns over rows:
// depth and columns, then columns and rows, then columns, then none).
// Null when none holds. Pure, so the choice is tested without a GPU.
const GpuGemmKernel* chooseGemm(const std::vector<GpuGemmKernel>& gemms, const std::string& dtype, bool weightsNK,
                                 int64_t rows, const GemmEpilogue& epilogue = {}, int64_t cols = 0,
                                 int64_t depth = 0);

// Device buffers of one GEMM launch (null where the kernel takes none):
// C[M, N] = epilogue(A[M, K] x B), B [K, N] or [N, K] as the kernel says.
struct GemmBuffers {
  const void *a = nullptr, *b = nullptr, *bUp = nullptr;
  void* c = nullptr;
  const void *bias = nullptr, *biasUp = nullptr, *residual = nullptr;
  // K split across programs (more than one split only): f32 partials
  // (GpuKernelSet::gemmWorkspaceBytes) and i32 arrival counters, one per
  // C block (gemmCounterBytes), zero before the launch (a zeroed
  // allocation) and left zero by it. GEMMs running at once need their own.
  void *workspace = nullptr, *counters = nullptr;
  // The rows A's buffer holds, at least M (0: M): TMA kernels read the
  // ones past M rather than zero-fill them (gemmTmaRowsA).
  int64_t aRows = 0;
  // Quantized weights' scales and offsets (f16 or f32, as the form says;
  // offsets only where it has them), for B and the up projection.
  const void *bScales = nullptr, *bOffsets = nullptr, *bUpScales = nullptr, *bUpOffsets = nullptr;
  // An i8-activation GEMV's A (GpuGemmKernel::int8Activations): `a` holds
  // its i8 values [M, K], these its f32 block scales and block sums [M, K
  // / quant.block] (GpuKernelSet::quantizeRows writes all three).
  const void *aScales = nullptr, *aSums = nullptr;
};

class GpuKernelSet {
 public:
  // Reads DIR/kernels.json and loads DIR/kernels.ptx; throws strata::Error
  // naming the file when either is missing or malformed.
  static std::unique_ptr<GpuKernelSet> load(const Device& device, const std::string& dir);
  // The target DIR/kernels.json names ("sm_90"), without loading the set.
  static std::string manifestTarget(const std::string& dir);

  const std::string& target() const { return target_; }
  const std::vector<GpuGemmKernel>& gemms() const { return gemms_; }
  const GpuGemmKernel& gemm(const std::string& name) const;  // throws when absent
  // chooseGemm's kernel in this set; throws when the set has none.
  const GpuGemmKernel& gemmFor(const std::string& dtype, bool weightsNK, int64_t rows,
                                const GemmEpilogue& epilogue = {}, int64_t cols = 0, int64_t depth = 0) const;
  const std::vector<GpuRmsNormKernel>& rmsNorms() const { return norms_; }
  const std::vector<GpuRopeKernel>& ropes() const { return ropes_; }
  const std::vector<GpuAttentionKernel>& attentions() const { return attentions_; }
  // The attention kernel for these heads, head dim, dtype and masking; of
  // those (they differ in query block, blockM) the one for `batch` x `S`
  // queries: the largest block whose grid of ceil(S / blockM) x heads x
  // batch programs still gives every SM 4 with the causal mask (its
  // programs differ in length, and more of them balance the SMs) or 2
  // without, else the smallest (a shallower grid leaves SMs idle for much
  // of the kernel: H100, docs/cuda.md of bd79745 "FlashAttention-2 on the GPU").
  // Throws when the set has none.
  const GpuAttentionKernel& attentionFor(const std::string& dtype, int64_t heads, int64_t kvHeads, int64_t headDim,
                                          bool causal, int64_t batch, int64_t S) const;
  const std::vector<GpuPagedDecodeKernel>& pagedDecodes() const { return pagedDecodes_; }
  const std::vector<GpuPagedPrefillKernel>& pagedPrefills() const { return pagedPrefills_; }
  // The paged prefill kernel for these heads, head dim, page, scale and
  // dtype; of those (a 128-row kernel and its 64-row variant) the one for
  // `sequences` x `maxNew` new tokens, picked by grid size as attentionFor
  // picks a causal kernel (a 512-token prompt: 64 rows, 1.3x the TFLOP/s
  // of 128 on the H100; from 8k tokens 128 rows, 1.2x). Throws when the set
  // has none.
  const GpuPagedPrefillKernel& pagedPrefillFor(const std::string& dtype, int64_t heads, int64_t kvHeads,
                                                int64_t headDim, int64_t pageSize, float scale, int64_t sequences,
                                                int64_t maxNew) const;
  const std::vector<GpuGatherRowsKernel>& gathers() const { return gathers_; }
  const std::vector<GpuKvWriteKernel>& kvWrites() const { return kvWrites_; }
  // Empty in sets compiled before 2026-12-01 or for graphs without the
  // fusion.
  const std::vector<GpuRopeKvWriteKernel>& ropeKvWrites() const { return ropeKvWrites_; }
  const std::vector<GpuArgmaxKernel>& argmaxes() const { return argmaxes_; }
  const std::vector<GpuTopKKernel>& topks() const { return topks_; }
  // Empty for sets compiled before 2026-11-23.
  const std::vector<GpuRepetitionPenaltyKernel>& penalties() const { return penalties_; }
  // The elementwise kernel called `name`; throws when absent.
  const GpuElementwiseKernel& elementwise(const std::string& name) const;
  // Bytes of scratch a paged decode step of `batch` sequences in `splits`
  // splits needs.
  static int64_t pagedDecodeScratchBytes(const GpuPagedDecodeKernel& k, int64_t batch, int64_t splits);
  // pagedDecodeSplitCount on this device.
  int64_t pagedDecodeSplits(const GpuPagedDecodeKernel& k, int64_t batch, int64_t maxContext) const;

  // Makes the tensor maps over weights `w` (N x K, [N, K] as weightsNK
  // says) that this set's TMA GEMMs for `dtype` and `epilogue` would read
  // them through, one per block width among those whose column and depth
  // bounds hold, as a launch would on first use (the same key). A model
  // does this for its weights at load: a prompt whose length first takes a
  // kernel class then makes only its activations' maps. Returns the maps
  // made (none for [K, N] weights, which TMA kernels do not read, nor for
  // weights TMA cannot map: K % 8 != 0, not 16-byte aligned).
  size_t prepareWeightMaps(const std::string& dtype, bool weightsNK, const GemmEpilogue& epilogue, const void* w,
                           int64_t N, int64_t K) const;
  // Tensor maps made so far on the device (Device::tensorMapCount).
  size_t tensorMapCount() const { return device_.tensorMapCount(); }

  // Enqueues one launch (grid ceil(M / blockM) x ceil(N / blockN) x
  // kSplits); throws when a buffer the kernel needs is null or M, N, K is
  // not positive.
  // kSplits > 1 (a kernel with splitKPrograms) splits K across programs:
  // then buffers.workspace and buffers.counters are required.
  void launch(const GpuGemmKernel& k, const GemmBuffers& buffers, int64_t M, int64_t N, int64_t K,
              int64_t kSplits = 1) const;
  // Quantizes A's rows (x: [M, K] in k.dtype) for the i8-activation GEMV
  // `k`: q [M, K] i8 (16-byte aligned), scales and sums [M, K / block] f32.
  // With `norm` (a [K] weight in k.dtype; k.normQuantizes): the rows
  // RMS-normalized by it with `eps` first (codegen/QuantizeKernel.h).
  // Throws unless K is whole blocks.
  void quantizeRows(const GpuGemmKernel& k, const void* x, void* q, void* scales, void* sums, int64_t M, int64_t K,
                    const void* norm = nullptr, float eps = 0) const;
  // gemmKSplitCount on this device.
  int64_t gemmKSplits(const GpuGemmKernel& k, int64_t M, int64_t N, int64_t K, int64_t alongside = 0) const;
  static int64_t gemmWorkspaceBytes(const GpuGemmKernel& k, int64_t M, int64_t N, int64_t kSplits);
  static int64_t gemmCounterBytes(const GpuGemmKernel& k, int64_t M, int64_t N);
  // y[rows, hidden] = rmsnorm(x) * w, one block per row; throws
  // on a null buffer or a non-positive size.
  void launch(const GpuRmsNormKernel& k, const void* x, const void* w, void* y, int64_t rows, int64_t hidden,
              float eps) const;
  // Rotate-half RoPE of `tokens` rows of heads x headDim (codegen/
  // NormRopeKernels.h): y = rope(x) at each token's position (i64, device)
  // from the [tableRows, headDim / 2] f32 cos / sin tables; y may be x.
  // With KV heads (a joined kernel), x and y hold the tokens' q heads from
  // 0 and their k heads from head row `kAt` (>= tokens x heads; -1: right
  // after the q heads). One block of one warp per token and head group;
  // throws on a null buffer or a bad size.
  void launch(const GpuRopeKernel& k, const void* x, void* y, const void* cos, const void* sin, const void* positions,
              int64_t tokens, int64_t tableRows, int64_t kAt = -1) const;
  // o = softmax(q k^T scale [+ causal mask]) v for `batch` sequences of S
  // queries over T keys (S <= T when causal), grid ceil(S / blockM) x heads
  // x batch; buffers 16-byte aligned (the kernel copies 16-byte runs);
  // throws on a null or misaligned buffer, a non-positive size, or S > T
  // with a causal kernel.
  void launch(const GpuAttentionKernel& k, const void* q, const void* kk, const void* v, void* o, int64_t batch,
              int64_t S, int64_t T) const;
  // One decode step: the split kernel (grid splits x kvHeads x batch) and
  // its combine (batch x heads); with one split the kernel stores o itself
  // and no combine runs. Every context length must be in [1,
  // maxBlocks pageSize] (the kernel reads the lengths on the device, so
  // the caller guarantees it); throws on a null or misaligned buffer or a
  // non-positive size.
  void launch(const GpuPagedDecodeKernel& k, const PagedDecodeBuffers& b, int64_t batch, int64_t maxBlocks,
              int64_t numBlocks, int64_t splits) const;
  // One prefill step of `sequences` sequences over `tokens` new tokens, the
  // longest with `maxNew` (grid ceil(maxNew / blockM) x heads x
  // sequences). Each sequence's new tokens must fit its context (starts and
  // lengths are read on the device); throws on a null or misaligned buffer
  // or a non-positive size.
  void launch(const GpuPagedPrefillKernel& k, const PagedPrefillBuffers& b, int64_t sequences, int64_t tokens,
              int64_t maxNew, int64_t maxBlocks, int64_t numBlocks) const;
  // out[tokens, width] = table[ids[t]] for a [rows, width] table; ids (i64,
  // device) must lie in [0, rows) (read on the device: the caller checks).
  // A quantized gather (k.quant) reads the table's integers and widens
  // them with `scales` (and `offsets` where the form has them), [rows,
  // width / block] each (codegen/DataMovementKernels.h).
  void launch(const GpuGatherRowsKernel& k, const void* table, void* out, const void* ids, int64_t tokens,
              int64_t rows, int64_t width, const void* scales = nullptr, const void* offsets = nullptr) const;
  // k / v [tokens, kvHeads * headDim] into the cache at slots (i64, device,
  // each >= 0 and < numBlocks * pageSize: the caller checks).
  void launch(const GpuKvWriteKernel& k, void* cache, const void* kk, const void* v, const void* slots,
              int64_t tokens, int64_t numBlocks) const;
  // q, k, v rows of `tokens` tokens: q rotated into y, k rotated and v into
  // the cache at slots; cos / sin [tableRows, headDim / 2] f32, positions
  // and slots i64 (device; slots each < numBlocks * pageSize: the caller
  // checks).
  struct RopeKvWriteBuffers {
    const void *q = nullptr, *k = nullptr, *v = nullptr;
    void *y = nullptr, *cache = nullptr;
    const void *cos = nullptr, *sin = nullptr, *positions = nullptr, *slots = nullptr;
  };
  void launch(const GpuRopeKvWriteKernel& k, const RopeKvWriteBuffers& b, int64_t tokens, int64_t tableRows,
              int64_t numBlocks) const;
  // Per row of x [rows, n] and split s (columns [s chunk, (s + 1) chunk)):
  // the largest value and its column into max / index [rows, splits], f32
  // (codegen/GreedyKernel.h); grid splits x rows. `chunk` must be a
  // positive multiple of the kernel's blockN and splits x chunk cover n.
  void launch(const GpuArgmaxKernel& k, const void* x, void* max, void* index, int64_t rows, int64_t n, int64_t chunk,
              int64_t splits) const;
  // The (chunk, splits) of rows of n for the argmax kernel: whole blocks
  // per split, at most 128 splits (a row's partials stay a few hundred bytes).
  static std::pair<int64_t, int64_t> argmaxSplits(const GpuArgmaxKernel& k, int64_t n);
  // Each row's greedy token from the kernel's max / index partials ([rows,
  // splits] each, on the host): the first split's index among the largest.
  static std::vector<int64_t> argmaxPick(const float* max, const float* index, int64_t rows, int64_t splits);
  // Per row of x [rows, n] and split s = k.splits(n): the split's
  // candidates into value / index [rows, splits * candidates] and its mass
  // into mass [rows, splits] at scale[r] = log2(e) / temperature (f32
  // [rows]); codegen/TopKKernel.h. Grid splits x rows.
  void launch(const GpuTopKKernel& k, const void* x, void* value, void* index, void* mass, const void* scale,
              int64_t rows, int64_t n) const;
  // x [rows, n] (f32, device) at the `count` entries ([2, count] i64,
  // device: rows, then columns) penalized by penalty[row] (f32 [rows],
  // device); grid count. The entries must be distinct and inside x (read
  // on the device: the caller checks). Throws on a null buffer or a
  // non-positive size.
  void launch(const GpuRepetitionPenaltyKernel& k, void* x, const void* entries, const void* penalty, int64_t rows,
              int64_t n, int64_t count) const;
  // A fused elementwise kernel over `rows` rows: `buffers` are its operands
  // then its outputs, each with its element count (the region's launch
  // contract gives their order and forms; ops/row_forms.h); grid = rows.
  // Throws on a null buffer or a non-positive row count.
  void launch(const GpuElementwiseKernel& k, const std::vector<std::pair<const void*, int64_t>>& buffers,
              int64_t rows) const;

 private:
  GpuKernelSet(const Device& device) : device_(device) {}
  const Device& device_;
  // The set's modules: one cubin per compile unit (the manifest's
  // cubin.files, each kernel's "cubin" its index), or one module of the
  // whole set (an older single cubin, or the PTX JIT-compiled).
  std::vector<std::unique_ptr<Executable>> modules_;
  // The map over a [rows, K] operand `p` of TMA GEMM `k` in boxes of
  // `boxRows` rows (`what` names the operand in errors): the one key that
  // launches and prepareWeightMaps share.
  const void* operandMap(const GpuGemmKernel& k, const void* p, int64_t rows, int64_t K, int64_t boxRows,
                         const char* what) const;
  std::string target_;
  std::vector<GpuGemmKernel> gemms_;
  std::vector<GpuRmsNormKernel> norms_;
  std::vector<GpuRopeKernel> ropes_;
  std::vector<GpuAttentionKernel> attentions_;
  std::vector<GpuPagedDecodeKernel> pagedDecodes_;
  std::vector<GpuPagedPrefillKernel> pagedPrefills_;
  std::vector<GpuGatherRowsKernel> gathers_;
  std::vector<GpuKvWriteKernel> kvWrites_;
  std::vector<GpuRopeKvWriteKernel> ropeKvWrites_;
  std::vector<GpuArgmaxKernel> argmaxes_;
  std::vector<GpuTopKKernel> topks_;
  std::vector<GpuRepetitionPenaltyKernel> penalties_;
  std::vector<GpuElementwiseKernel> elementwises_;
};

}  // namespace strata::runtime
