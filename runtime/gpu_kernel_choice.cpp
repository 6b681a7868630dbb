#include "runtime/gpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/error.h"

namespace strata::runtime {

namespace {
bool hasColumnBound(const GpuGemmKernel& g) { return g.minCols > 0 || g.maxCols > 0; }
}  // namespace

bool gemmServes(const GpuGemmKernel& g, const std::string& dtype, bool weightsNK, const GemmEpilogue& e, int64_t cols,
            int64_t depth) {
  const bool colsHold =
      !hasColumnBound(g) || (cols > 0 && cols >= g.minCols && (g.maxCols == 0 || cols <= g.maxCols));
  return g.dtype == dtype && g.weightsNK == weightsNK && g.bias == e.bias && g.residual == e.residual &&
         g.swiglu == e.swiglu && g.quant == e.quant && colsHold &&
         (g.minDepth == 0 || (depth > 0 && depth >= g.minDepth));
}

const GpuGemmKernel* chooseGemm(const std::vector<GpuGemmKernel>& gemms, const std::string& dtype, bool weightsNK,
                                 int64_t rows, const GemmEpilogue& e, int64_t cols, int64_t depth) {
  const GpuGemmKernel* best = nullptr;
  auto bound = [](const GpuGemmKernel& g) { return g.maxRows > 0 ? g.maxRows : INT64_MAX; };
  // The rank of a variant's bounds: depth over columns over rows.
  auto bounds = [&](const GpuGemmKernel& g) {
    return (g.minDepth > 0 ? 4 : 0) + (hasColumnBound(g) ? 2 : 0) + (g.minRows > 0 ? 1 : 0);
  };
  auto better = [&](const GpuGemmKernel& g) {
    return !best || bound(g) < bound(*best) || (bound(g) == bound(*best) && bounds(g) > bounds(*best));
  };
  for (const GpuGemmKernel& g : gemms)
    if (gemmServes(g, dtype, weightsNK, e, cols, depth) && bound(g) >= rows && rows >= g.minRows && better(g)) best = &g;
  return best;
}

const GpuGemmKernel& GpuKernelSet::gemmFor(const std::string& dtype, bool weightsNK, int64_t rows,
                                             const GemmEpilogue& e, int64_t cols, int64_t depth) const {
  const GpuGemmKernel* best = chooseGemm(gemms_, dtype, weightsNK, rows, e, cols, depth);
  if (!best)
    fail("no {} GEMM kernel with {}{} weights{}{}{} for {} rows in the kernel set", dtype,
         e.quant.block ? abi::int8FormName(e.quant) + " " : "", weightsNK ? "[N, K]" : "[K, N]",
         e.bias ? ", bias" : "", e.residual ? ", residual" : "", e.swiglu ? ", SwiGLU" : "", rows);
  return *best;
}

namespace {

// Of the kernels `same` accepts (one shape, differing in query block
// rows), the one for `rows` query rows a head on `heads` (x batch) heads:
// the largest block whose grid of ceil(rows / blockM) x heads programs
// reaches `enough`, else the smallest block. Null when none is the same.
template <class K, class Same>
const K* byQueryBlock(const std::vector<K>& kernels, Same same, int64_t rows, int64_t heads, int64_t enough) {
  auto fills = [&](const K* k) { return (rows + k->blockM - 1) / k->blockM * heads >= enough; };
  const K* best = nullptr;
  for (const K& a : kernels) {
    if (!same(a)) continue;
    const bool af = fills(&a), bf = best && fills(best);
    if (!best || (af != bf ? af : (af ? a.blockM > best->blockM : a.blockM < best->blockM))) best = &a;
  }
  return best;
}

}  // namespace

const GpuAttentionKernel& GpuKernelSet::attentionFor(const std::string& dtype, int64_t heads, int64_t kvHeads,
                                                       int64_t headDim, bool causal, int64_t batch, int64_t S) const {
  // H100, 2026-11-22 (docs/cuda.md of bd79745): at 2048 tokens of GQA (512 programs
  // of 128 rows, 3.9 an SM) 64 rows won with the mask (244 / 217 TFLOP/s)
  // and lost without it (316 / 390).
  const int64_t enough = (causal ? 4 : 2) * device_.computeUnits();
  auto same = [&](const GpuAttentionKernel& a) {
    return a.dtype == dtype && a.heads == heads && a.kvHeads == kvHeads && a.headDim == headDim && a.causal == causal;
  };
  if (const GpuAttentionKernel* best = byQueryBlock(attentions_, same, S, heads * batch, enough)) return *best;
  fail("no {} {} attention kernel for {} heads over {} KV heads of dim {} in the kernel set", causal ? "causal" : "full",
       dtype, heads, kvHeads, headDim);
}

const GpuPagedPrefillKernel& GpuKernelSet::pagedPrefillFor(const std::string& dtype, int64_t heads, int64_t kvHeads,
                                                             int64_t headDim, int64_t pageSize, float scale,
                                                             int64_t sequences, int64_t maxNew) const {
  // Causal: the contiguous causal kernels' rule. H100, 2026-11-24
  // (docs/cuda.md of bd79745 "Paged prefill of short prompts"): one prompt of 512 /
  // 2048 / 8192 tokens, 64 rows 119-123 / 247-250 / 354-357 TFLOP/s, 128
  // rows 91-92 / 252-253 / 427.
  auto same = [&](const GpuPagedPrefillKernel& a) {
    return a.dtype == dtype && a.heads == heads && a.kvHeads == kvHeads && a.headDim == headDim &&
           a.pageSize == pageSize && a.scale == scale;
  };
  if (const GpuPagedPrefillKernel* best =
          byQueryBlock(pagedPrefills_, same, maxNew, heads * sequences, 4 * device_.computeUnits()))
    return *best;
  fail("the kernel set has no {} paged prefill kernel for {} heads over {} KV heads of dim {}, blocks of {}, scale {}",
       dtype, heads, kvHeads, headDim, pageSize, scale);
}

const GpuGemmKernel& GpuKernelSet::gemm(const std::string& name) const {
  for (const GpuGemmKernel& k : gemms_)
    if (k.name == name) return k;
  fail("no GEMM kernel '{}' in this kernel set ({})", name, target_);
}

int64_t gemmProgramCount(const GpuGemmKernel& k, int64_t M, int64_t N) {
  return ((M + k.blockM - 1) / k.blockM) * ((N + k.blockN - 1) / k.blockN);
}

int64_t gemmTmaRowsA(int64_t M, int64_t blockM, int64_t heldRows) {
  const int64_t whole = (M + blockM - 1) / blockM * blockM;
  return std::max(M, std::min(whole, heldRows));
}

int64_t gemmKSplitCount(const GpuGemmKernel& k, int64_t multiprocessors, int64_t M, int64_t N, int64_t K,
                        int64_t alongside) {
  if (!k.splitKPrograms || k.blockK <= 0) return 1;
  constexpr int64_t kMostSplits = 8, kLeastKBlocks = 16;
  const int64_t programs = gemmProgramCount(k, M, N) + alongside;
  const int64_t slots = multiprocessors * std::max<int64_t>(1, k.residentPerSm);
  const int64_t kBlocks = (K + k.blockK - 1) / k.blockK;
  int64_t s = 1;
  while (s < kMostSplits && programs * (s + 1) <= slots && kBlocks / (s + 1) >= kLeastKBlocks) ++s;
  return s;
}

int64_t GpuKernelSet::gemmKSplits(const GpuGemmKernel& k, int64_t M, int64_t N, int64_t K, int64_t alongside) const {
  return gemmKSplitCount(k, device_.computeUnits(), M, N, K, alongside);
}

int64_t GpuKernelSet::gemmWorkspaceBytes(const GpuGemmKernel& k, int64_t M, int64_t N, int64_t kSplits) {
  return kSplits > 1 ? kSplits * (k.swiglu ? 2 : 1) * M * N * 4 : 0;
}

int64_t GpuKernelSet::gemmCounterBytes(const GpuGemmKernel& k, int64_t M, int64_t N) {
  return k.splitKPrograms ? gemmProgramCount(k, M, N) * 4 : 0;
}

int64_t GpuKernelSet::pagedDecodeScratchBytes(const GpuPagedDecodeKernel& k, int64_t batch, int64_t splits) {
  // po [B H, S D], then pm and pl [B H, S], f32; each 256-byte aligned.
  auto round = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  return round(batch * k.heads * splits * k.headDim * 4) + 2 * round(batch * k.heads * splits * 4);
}

int64_t pagedDecodeSplitCount(const GpuPagedDecodeKernel& k, int64_t multiprocessors, int64_t sharedPerSm,
                              int64_t batch, int64_t maxContext) {
  // Costs in keys. The fixed cost of a program (pipeline fill, partials)
  // was fitted to the H200 runs in docs/cuda.md of bd79745; a block also takes 1 KiB
  // of shared memory the driver reserves. A wave is at most two programs
  // per SM: more fit by shared memory, but on the H100 (2026-11-22)
  // filling them with more splits was slower at every batch (batch 1, 4k
  // context: 66 splits 18.5 us, 33 splits 14.6, 16 splits 16.9;
  // docs/cuda.md of bd79745 "Paged decode attention on the GPU").
  // The combine, when there is one: each of its waits for partials (one
  // per combineSplitsPerStep splits) costs about kCombineStepCost, fitted
  // to batch 1 on the H100 (2026-11-23, steps replayed as graphs: 16
  // splits beat 32 at 1k tokens, 6.3 / 7.0 us; 32 beat 33 from 4k, 10.1 /
  // 10.5 us at 4k, 31.4 / 32.2 at 16k), and its launch about
  // kCombineLaunchCost: at 128 tokens one split (no combine) beat the four
  // the model chose without it, 4.8 / 5.3 us at batch 1 and 5.1 / 6.0 at
  // batch 8, while at 256 tokens splitting still won, 5.3 / 7.6 and 7.0 /
  // 7.8 (H100, 2026-11-23, graphs; the window this leaves is 48-144 keys).
  constexpr int64_t kProgramCost = 256, kReserved = 1024, kMostPerSm = 2, kCombineStepCost = 48,
                    kCombineLaunchCost = 96;
  const int64_t perSm = std::clamp<int64_t>(sharedPerSm / (k.sharedBytes + kReserved), 1, kMostPerSm);
  const int64_t slots = perSm * multiprocessors, programs = batch * k.kvHeads;
  const int64_t most = std::max<int64_t>(1, (maxContext + k.blockN - 1) / k.blockN);
  int64_t best = 1;
  double bestCost = INFINITY;
  for (int64_t s = 1; s <= most; ++s) {
    double waves = double((programs * s + slots - 1) / slots);
    double cost = waves * (double(maxContext) / double(s) + kProgramCost);
    // Sets from before 2026-11-23 (no combineSplitsPerStep) keep the model
    // their counts were tuned with.
    if (s > 1 && k.combineSplitsPerStep > 0)
      cost += double(kCombineLaunchCost +
                     kCombineStepCost * ((s + k.combineSplitsPerStep - 1) / k.combineSplitsPerStep));
    if (cost < bestCost) bestCost = cost, best = s;
  }
  return best;
}

int64_t GpuKernelSet::pagedDecodeSplits(const GpuPagedDecodeKernel& k, int64_t batch, int64_t maxContext) const {
  return pagedDecodeSplitCount(k, device_.computeUnits(), device_.localMemoryPerUnit(), batch,
                               maxContext);
}

std::pair<int64_t, int64_t> GpuKernelSet::argmaxSplits(const GpuArgmaxKernel& k, int64_t n) {
  constexpr int64_t kMaxSplits = 128;
  if (n <= 0) fail("argmax {}: rows of {} values", k.name, n);
  const int64_t blocks = (n + k.blockN - 1) / k.blockN;
  const int64_t chunk = k.blockN * ((blocks + kMaxSplits - 1) / kMaxSplits);
  return {chunk, (n + chunk - 1) / chunk};
}

std::vector<int64_t> GpuKernelSet::argmaxPick(const float* max, const float* index, int64_t rows, int64_t splits) {
  std::vector<int64_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* v = max + r * splits;
    ids[r] = int64_t(index[r * splits + (std::max_element(v, v + splits) - v)]);
  }
  return ids;
}

const GpuElementwiseKernel& GpuKernelSet::elementwise(const std::string& name) const {
  for (const GpuElementwiseKernel& e : elementwises_)
    if (e.name == name) return e;
  fail("the kernel set has no elementwise kernel '{}'", name);
}


}  // namespace strata::runtime
