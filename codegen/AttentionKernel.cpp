#include "codegen/AttentionKernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

AttentionKernelSpec cpuAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, float scale, int64_t blockN,
                                     int64_t queryRows) {
  AttentionKernelSpec s;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.scale = scale;
  s.blockN = blockN;
  s.blockM = queryRows <= 1 ? 1 : 4;
  s.name = queryRows <= 1 ? "attention_decode" : "attention";
  return s;
}

namespace {

// What every GPU attention kernel of the set shares: the heads, scale 1 /
// sqrt(head dim), the storage type.
AttentionKernelSpec gpuAttentionShape(int64_t heads, int64_t kvHeads, int64_t headDim, bool causal,
                                      const std::string& dtype) {
  AttentionKernelSpec s;
  s.causal = causal;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.scale = 1.f / std::sqrt(float(headDim));
  s.dtype = dtype;
  return s;
}

}  // namespace

AttentionKernelSpec cudaAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, bool causal,
                                      const std::string& dtype, bool fewPrograms) {
  AttentionKernelSpec s = gpuAttentionShape(heads, kvHeads, headDim, causal, dtype);
  s.paged = false;
  s.name = fmt::format("attention_{}_h{}_kv{}_d{}_{}", dtype, heads, kvHeads, headDim, causal ? "causal" : "full");
  if (headDim % 64) {
    // Head dims that are not whole 128-byte panels (the tiny test models'
    // 16) keep the mma.sync form: 128 rows on 4 warps, Q in registers.
    s.numWarps = 4;
    s.blockM = 128;
    s.blockN = 64;
    s.stages = 2;
    return s;
  }
  // Warpgroup dots (docs/cuda.md; H100, 2026-11-22): keys in steps of 64,
  // one block copied ahead; Q, K and V in swizzled panels of 64 head-dim
  // columns. 128 query rows on 8 warps (two warpgroups of 64 rows), two
  // blocks per SM: at head dim 128 ptxas then fits 128 registers (161
  // uncapped; 8-40 bytes of spills) and one block's loads overlap the
  // other's dots: 1.07-1.19x the TFLOP/s of one block per SM at 2k-16k
  // tokens. (The mma.sync form before it: 128 rows on 4 warps, Q re-read
  // every step at head dim 128.)
  s.numWarps = 8;
  s.blockM = 128;
  s.blockN = 64;
  s.stages = 2;
  s.qInRegisters = false;
  s.groupDots = true;
  s.tma = true;
  s.minBlocksPerSM = 2;
  // 64 rows on one warpgroup: for grids of few programs (fewPrograms, the
  // "_m64" variants: twice the programs of 128 rows), and always at head
  // dim 64. With the causal mask the shorter diagonal and the finer blocks
  // won at every length on the H100 (1.05-1.16x 128 rows up to 4k tokens,
  // 2026-11-22); without it 64 rows won up to 4k tokens and tied from 8k
  // (16 x 1024: 353-356 against 298-299 TFLOP/s; 2026-11-24; docs/cuda.md
  // "Head dim 64 on 64 rows"). Blocks per SM: what shared memory holds,
  // four at head dim 64 (40 KiB a block: the same 128 registers a thread),
  // two at 128 (80 KiB: asking four capped the registers at 128 and
  // spilled, for 0.84-0.97x the TFLOP/s).
  if (fewPrograms || headDim == 64) {
    s.numWarps = 4;
    s.blockM = 64;
    s.minBlocksPerSM = headDim == 64 ? 4 : 2;
  }
  if (fewPrograms) s.name += "_m64";
  return s;
}

bool hasFewProgramsVariant(const AttentionKernelSpec& main) { return main.groupDots && main.blockM == 128; }

void applyAttentionBlocking(AttentionKernelSpec& s, const std::string& text, const std::string& what) {
  std::string t = text;
  // An optional ":B" asks room for B blocks per SM (minBlocksPerSM).
  long blocksPerSM = -1;
  if (size_t colon = t.find(':'); colon != std::string::npos) {
    int usedB = 0;
    const std::string b = t.substr(colon + 1);
    if (std::sscanf(b.c_str(), "%ld%n", &blocksPerSM, &usedB) != 1 || usedB != (int)b.size() || blocksPerSM < 0)
      fail("{} '{}': expected a block count of 0 or more after ':', e.g. 128x64x8@2g:3", what, text);
    t.resize(colon);
  }
  bool reloadQ = !t.empty() && t.back() == 'q';
  bool group = !t.empty() && t.back() == 'g';
  if (reloadQ || group) t.pop_back();
  long m = 0, n = 0, w = 0, st = 0;
  int used = 0;
  if (std::sscanf(t.c_str(), "%ldx%ldx%ld@%ld%n", &m, &n, &w, &st, &used) != 4 || used != (int)t.size() || m <= 0 ||
      n <= 0 || w <= 0 || st < 2)
    fail("{} '{}': expected MxNxW@S (block M query rows, N keys per step, W warps, S >= 2 buffers) with an optional "
         "trailing q (Q read from local memory each step) or g (warpgroup dots), e.g. 64x64x4@2, 128x64x4@2q or "
         "128x64x8@2g, and optionally :B, room for B blocks per SM",
         what, text);
  s.blockM = m, s.blockN = n, s.numWarps = w, s.stages = st;
  if (blocksPerSM >= 0) s.minBlocksPerSM = blocksPerSM;
  s.qInRegisters = !reloadQ && !group;
  s.groupDots = group;
  s.tma = group && !s.paged;
}

AttentionKernelSpec cudaPagedDecodeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                        const std::string& dtype) {
  AttentionKernelSpec s = gpuAttentionShape(heads, kvHeads, headDim, true, dtype);
  s.paged = true;
  // H200 sweep (docs/cuda.md): 32 keys per step in 3 buffers (55 KiB of
  // shared memory, 4 programs per SM) streamed 0.3-5 % more than 64 keys in
  // 3 or 2 buffers or 32 in 4, and far more than 128 (255 registers).
  s.numWarps = 1;
  s.blockM = 16;
  s.blockN = std::max<int64_t>(32, pageSize);
  s.pageSize = pageSize;
  s.stages = 3;
  s.decode = true;
  s.name = fmt::format("paged_decode_{}_h{}_kv{}_d{}_p{}", dtype, heads, kvHeads, headDim, pageSize);
  return s;
}

AttentionKernelSpec cudaPagedPrefillSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                         const std::string& dtype, bool fewPrograms) {
  AttentionKernelSpec s = cudaAttentionSpec(heads, kvHeads, headDim, true, dtype, fewPrograms);
  s.paged = true;
  s.tma = false;  // pages are copied one by one (cp.async)
  s.pageSize = pageSize;
  s.blockN = std::max(s.blockN, pageSize);
  // The contiguous form's blocking, its K / V panels copied page by page.
  // The 64-row variant serves short prompts only: on the H100 (2026-11-22)
  // 64 rows took 0.67-0.84x the TFLOP/s of 128 from 2k tokens (each
  // program copies every page it reads, so halving the rows doubles the
  // page copies per FLOP), but at 512 tokens, where 128 rows leave 128
  // programs for 132 SMs, 1.3x (2026-11-24).
  s.name = fmt::format("paged_prefill_{}_h{}_kv{}_d{}_p{}{}", dtype, heads, kvHeads, headDim, pageSize,
                       fewPrograms ? "_m64" : "");
  return s;
}

namespace {


// The GPU form (see AttentionKernelSpec::stages): operands staged through
// workgroup-local memory, dots on the storage type.
bool gpuForm(const AttentionKernelSpec& s) { return s.stages > 0; }
// Its paged forms copy the cache page by page (AttentionKernelSpec::pageSize).
bool gpuPaged(const AttentionKernelSpec& s) { return gpuForm(s) && s.paged; }
// Decode: one new token per sequence, a KV head's query heads packed into
// the rows (AttentionKernelSpec::decode).
bool gpuDecode(const AttentionKernelSpec& s) { return gpuPaged(s) && s.decode; }
// The decode form's single token sees every cached key: only the key
// boundary is masked.
bool causalMask(const AttentionKernelSpec& s) { return s.causal && !gpuDecode(s); }

// The warpgroup-dot form holds the head dim in panels of 64 columns (one
// 128-byte swizzled row each): its Q, K and V buffers and its accumulators
// come one per panel. Other forms have one panel, the whole head dim, and
// no suffix on those names.
int64_t panels(const AttentionKernelSpec& s) { return s.groupDots ? s.headDim / 64 : 1; }
int64_t panelWidth(const AttentionKernelSpec& s) { return s.headDim / panels(s); }
std::string panel(const AttentionKernelSpec& s, int64_t i) { return panels(s) > 1 ? std::to_string(i) : ""; }

// Panel i's first head-dim column (an index constant's name).
std::string panelOffset(int64_t i) { return i ? fmt::format("%cPo{}", i) : "%c0"; }

// The loop's carried values: the accumulator panels, then m and l.
std::string carriedTypes(const AttentionKernelSpec& s) {
  std::string t;
  for (int64_t i = 0; i < panels(s); ++i) t += fmt::format("tensor<{}x{}xf32>, ", s.blockM, panelWidth(s));
  return t + fmt::format("tensor<{0}xf32>, tensor<{0}xf32>", s.blockM);
}

// Rows that may see no key in a program (m stays -inf there): with a key
// mask, or when the keys are split (the GPU decode form always splits) and
// a row's range ends before this program's share. Such kernels guard exp2
// against -inf - -inf.
bool rowsMaySeeNothing(const AttentionKernelSpec& s) { return s.keyMask || s.kvSplits > 1 || gpuDecode(s); }

// The CPU form loads K^T and V through %kp / %vp (built by `kvRows`);
// the GPU form reads them from local stage %st (see loop()). `blk`: the
// GPU paged forms' physical block of the page at key j, when the caller
// looked it up already ("": kvRows looks it up).
using KvRows = std::function<std::string(const std::string& prefix, const std::string& j, const std::string& blk)>;

// The GPU paged forms' table lookup of the page at key `j`: %{p}blk, the
// physical block (the page index clamped to the sequence's last page, so
// any j reads inside the table row).
std::string pageLookup(const std::string& p, const std::string& j) {
  return fmt::format(R"(    %{p}lblk0 = arith.divui {j}, %cPg : index
    %{p}lblk = arith.minsi %{p}lblk0, %lastPage : index
    %{p}ti = arith.addi %tableRow, %{p}lblk : index
    %{p}blk = tile.block_lookup %tables[%{p}ti] : !tile.ptr<i64>
)",
                     fmt::arg("p", p), fmt::arg("j", j));
}

// The GPU form's Q fragments, read from local memory through %qu: once
// before the key loops, or in every step when they do not stay in registers.
std::string qFragments(const AttentionKernelSpec& s) {
  return fmt::format("  %qt = tile.load %qu {{in_bounds, contiguous = 1 : i64, run = 8 : i64}} : {}\n",
                     StorageText{s.dtype}.blockPtr(fmt::format("{}x{}", s.blockM, s.headDim)));
}

// Text of one key-block step: K^T and V, S, optional masks, online
// softmax, O += P V.
std::string stepBody(const AttentionKernelSpec& s, bool masked, const std::string& moreYields,
                     const std::string& moreTypes) {
  std::string mask;
  std::string scores = "%s";
  if (masked) {
    mask += fmt::format("    %sm = tile.mask %s, [%pos0, %j], %ctx{} : tensor<{}x{}xf32>\n",
                        causalMask(s) ? " {causal}" : "", s.blockM, s.blockN);
    scores = "%sm";
  }
  if (s.keyMask) {
    mask += fmt::format(R"(    %kmp = tile.make_block_ptr %mask, [%B, %T], [%T, %c1], [%b, %j] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{N}xf32>>
    %km = tile.load %kmp : !tile.block_ptr<tensor<1x{N}xf32>>
    %kmb = tile.broadcast %km : tensor<1x{N}xf32> -> tensor<{M}x{N}xf32>
    %keep = arith.cmpf one, %kmb, %zs : tensor<{M}x{N}xf32>
    %sk = arith.select %keep, {sc}, %ninfs : tensor<{M}x{N}xi1>, tensor<{M}x{N}xf32>
)",
                        fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("sc", scores));
    scores = "%sk";
  }
  // Rows that have seen no key yet keep m = -inf; subtracting 0 instead
  // keeps exp2 finite.
  std::string safeMax = rowsMaySeeNothing(s) ? fmt::format(R"(    %isinf = arith.cmpf oeq, %mn, %ninfm : tensor<{M}xf32>
    %ms = arith.select %isinf, %zm, %mn : tensor<{M}xi1>, tensor<{M}xf32>
)",
                                                fmt::arg("M", s.blockM))
                                  : "";
  std::string ms = rowsMaySeeNothing(s) ? "%ms" : "%mn";
  // Query rows over warps, like contiguous FlashAttention-2 (the paged
  // detector would split the keys: the paper's decode layout). The GPU
  // decode form's 16 rows are one warp's: more warps share a step's keys
  // (that detector's layout, so no hint; one warp keeps the rows' layout,
  // P V's, from which S follows).
  std::string hint =
      (s.paged || gpuForm(s)) && !(gpuDecode(s) && s.numWarps > 1) ? " {tiling = \"horizontal\"}" : "";
  const StorageText st{s.dtype};
  const std::string kShape = fmt::format("{}x{}", s.headDim, s.blockN), vShape = fmt::format("{}x{}", s.blockN, s.headDim);
  std::string loadK, loadV, scores0, pv;
  const int64_t np = panels(s), PW = panelWidth(s);
  if (gpuForm(s) && s.groupDots) {
    // Local views of stage %st, panel i: Q [M, 64] and K^T [64, N] K-major
    // (contiguous along the head dim), V [N, 64] N-major (the same rows
    // read along the head dim). Q and K are only described to the dots
    // (shared-memory descriptors), never loaded into registers.
    const std::string QB = st.blockPtr(fmt::format("{}x{}", s.blockM, PW)), KB = st.blockPtr(fmt::format("{}x{}", PW, s.blockN)),
                      VB = st.blockPtr(fmt::format("{}x{}", s.blockN, PW));
    loadK = "    %so = arith.muli %st, %cN : index\n";
    for (int64_t i = 0; i < np; ++i) {
      std::string x = panel(s, i);
      loadK += fmt::format(R"(    %qu{x} = tile.make_block_ptr %lq{x}, [%cM, %cPw], [%cPw, %c1], [%c0, %c0] : {P} -> {QB}
    %qt{x} = tile.load %qu{x} {{in_bounds, contiguous = 1 : i64}} : {QB}
    %ku{x} = tile.make_block_ptr %lk{x}, [%cPw, %cSN], [%c1, %cPw], [%c0, %so] : {P} -> {KB}
    %kt{x} = tile.load %ku{x} {{in_bounds, contiguous = 0 : i64}} : {KB}
)",
                           fmt::arg("x", x), fmt::arg("P", st.ptr()), fmt::arg("QB", QB), fmt::arg("KB", KB));
      std::string acc = i ? "%s_" + std::to_string(i - 1) : "%zs", res = i == np - 1 ? "%s" : "%s_" + std::to_string(i);
      scores0 += fmt::format("    {res} = tile.dot %qt{x}, %kt{x}, {acc}{hint} : {QT} * {KT} -> tensor<{M}x{N}xf32>\n",
                             fmt::arg("res", res), fmt::arg("x", x), fmt::arg("acc", acc), fmt::arg("hint", hint),
                             fmt::arg("QT", st.tensor(fmt::format("{}x{}", s.blockM, PW))),
                             fmt::arg("KT", st.tensor(fmt::format("{}x{}", PW, s.blockN))), fmt::arg("M", s.blockM),
                             fmt::arg("N", s.blockN));
      loadV += fmt::format(R"(    %vu{x} = tile.make_block_ptr %lv{x}, [%cSN, %cPw], [%cPw, %c1], [%so, %c0] : {P} -> {VB}
    %vt{x} = tile.load %vu{x} {{in_bounds, contiguous = 1 : i64}} : {VB}
)",
                           fmt::arg("x", x), fmt::arg("P", st.ptr()), fmt::arg("VB", VB));
    }
    pv = fmt::format("    %pb = tile.convert %p : tensor<{M}x{N}xf32> -> {PT}\n", fmt::arg("M", s.blockM),
                     fmt::arg("N", s.blockN), fmt::arg("PT", st.tensor(fmt::format("{}x{}", s.blockM, s.blockN))));
    for (int64_t i = 0; i < np; ++i)
      pv += fmt::format("    %accn{x} = tile.dot %pb, %vt{x}, %accs{x}{hint} : {PT} * {VT} -> tensor<{M}x{PW}xf32>\n",
                        fmt::arg("x", panel(s, i)), fmt::arg("hint", hint), fmt::arg("M", s.blockM), fmt::arg("PW", PW),
                        fmt::arg("PT", st.tensor(fmt::format("{}x{}", s.blockM, s.blockN))),
                        fmt::arg("VT", st.tensor(fmt::format("{}x{}", s.blockN, PW))));
  } else if (gpuForm(s)) {
    // Local views of stage %st: K^T [D, N] over keys stored row by row
    // (contiguous along D), V [N, D] (contiguous along D).
    loadK = (s.qInRegisters ? std::string() : qFragments(s)) + fmt::format(R"(    %so = arith.muli %st, %cN : index
    %ku = tile.make_block_ptr %lk, [%cD, %cSN], [%c1, %cPD], [%c0, %so] : {P} -> {KB}
    %kt = tile.load %ku {{in_bounds, contiguous = 0 : i64, run = 8 : i64}} : {KB}
)",
                        fmt::arg("P", st.ptr()), fmt::arg("KB", st.blockPtr(kShape)));
    loadV = fmt::format(R"(    %vu = tile.make_block_ptr %lv, [%cSN, %cD], [%cPD, %c1], [%so, %c0] : {P} -> {VB}
    %vt = tile.load %vu {{in_bounds, contiguous = 1 : i64, run = 8 : i64}} : {VB}
)",
                        fmt::arg("P", st.ptr()), fmt::arg("VB", st.blockPtr(vShape)));
    // Raw scores; the scale goes on the row max and, fused with the
    // subtraction of the max (one FMA per score), on the exponent.
    scores0 = fmt::format(R"(    %s = tile.dot %qt, %kt, %zs : {QT} * {KT} -> tensor<{M}x{N}xf32>
)",
                          fmt::arg("QT", st.tensor(fmt::format("{}x{}", s.blockM, s.headDim))), fmt::arg("KT", st.tensor(kShape)),
                          fmt::arg("M", s.blockM), fmt::arg("N", s.blockN));
    pv = fmt::format(R"(    %pb = tile.convert %p : tensor<{M}x{N}xf32> -> {PT}
    %accn = tile.dot %pb, %vt, %accs{hint} : {PT} * {VT} -> tensor<{M}x{D}xf32>
)",
                     fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim), fmt::arg("hint", hint),
                     fmt::arg("PT", st.tensor(fmt::format("{}x{}", s.blockM, s.blockN))), fmt::arg("VT", st.tensor(vShape)));
  } else {
    loadK = st.load("kt", "%kp", kShape);
    loadV = st.load("vt", "%vp", vShape);
    scores0 = fmt::format(
        "    %s = tile.dot %qs, %kt, %zs : tensor<{M}x{D}xf32> * tensor<{D}x{N}xf32> -> tensor<{M}x{N}xf32>\n",
        fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim));
    pv = fmt::format(
        "    %accn = tile.dot %p, %vt, %accs{hint} : tensor<{M}x{N}xf32> * tensor<{N}x{D}xf32> -> tensor<{M}x{D}xf32>\n",
        fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim), fmt::arg("hint", hint));
  }
  // m is kept in scaled units (scale > 0: max(c s) = c max(s)). The CPU form
  // scaled q; the GPU form scales the raw max and the exponent's argument.
  std::string rowMax = fmt::format("    %mx = tile.reduce {} {{kind = \"max\", axis = 1 : i64}} : tensor<{}x{}xf32> -> tensor<{}xf32>\n",
                                   scores, s.blockM, s.blockN, s.blockM);
  std::string shifted = fmt::format("    %sd = arith.subf {}, %mb : tensor<{}x{}xf32>\n", scores, s.blockM, s.blockN);
  if (gpuForm(s)) {
    rowMax = fmt::format(R"(    %mx0 = tile.reduce {sc} {{kind = "max", axis = 1 : i64}} : tensor<{M}x{N}xf32> -> tensor<{M}xf32>
    %mx = arith.mulf %mx0, %msc : tensor<{M}xf32>
)",
                         fmt::arg("sc", scores), fmt::arg("M", s.blockM), fmt::arg("N", s.blockN));
    shifted = fmt::format(R"(    %sc = arith.mulf {sc}, %ssc fastmath<contract> : tensor<{M}x{N}xf32>
    %sd = arith.subf %sc, %mb fastmath<contract> : tensor<{M}x{N}xf32>
)",
                          fmt::arg("sc", scores), fmt::arg("M", s.blockM), fmt::arg("N", s.blockN));
  }
  std::string rescale, yields;
  for (int64_t i = 0; i < np; ++i) {
    rescale += fmt::format("    %accs{x} = arith.mulf %acc{x}, %ab : tensor<{M}x{PW}xf32>\n", fmt::arg("x", panel(s, i)),
                           fmt::arg("M", s.blockM), fmt::arg("PW", PW));
    yields += fmt::format("%accn{}, ", panel(s, i));
  }
  return fmt::format(R"({loadK}{scores0}{mask}{rowMax}    %mn = arith.maximumf %m, %mx : tensor<{M}xf32>
{safe}    %me = tile.expand_dims {ms} {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
    %mb = tile.broadcast %me : tensor<{M}x1xf32> -> tensor<{M}x{N}xf32>
{shifted}    %p = math.exp2 %sd : tensor<{M}x{N}xf32>
    %ps = tile.reduce %p {{kind = "sum", axis = 1 : i64}} : tensor<{M}x{N}xf32> -> tensor<{M}xf32>
    %md = arith.subf %m, {ms} : tensor<{M}xf32>
    %alpha = math.exp2 %md : tensor<{M}xf32>
    %la = arith.mulf %l, %alpha : tensor<{M}xf32>
    %ln = arith.addf %la, %ps : tensor<{M}xf32>
    %ae = tile.expand_dims %alpha {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
    %ab = tile.broadcast %ae : tensor<{M}x1xf32> -> tensor<{M}x{PW}xf32>
{rescale}{loadV}{pv}    scf.yield {yields}%mn, %ln{moreYields} : {types}{moreTypes}
)",
                     fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("PW", PW), fmt::arg("rescale", rescale),
                     fmt::arg("yields", yields), fmt::arg("types", carriedTypes(s)), fmt::arg("moreYields", moreYields),
                     fmt::arg("moreTypes", moreTypes),
                     fmt::arg("mask", mask), fmt::arg("sc", scores), fmt::arg("safe", safeMax), fmt::arg("ms", ms),
                     fmt::arg("loadK", loadK), fmt::arg("scores0", scores0), fmt::arg("rowMax", rowMax),
                     fmt::arg("shifted", shifted), fmt::arg("loadV", loadV), fmt::arg("pv", pv));
}

// K^T [D, N] and V [N, D] block pointers of the key block at %j, for rows
// %krow.. / %vrow.. of a [rows, D] view, limited to %valid keys (so keys past
// the context read as zero: P V never touches stale cache rows).
// `clamp` (a value name or "") caps the row ends at the buffer's rows.
// Names carry the prefix `p` (the GPU form builds these for the copies of
// two different blocks), the block starts at key `j`.
// `keys` (a constant's name, its value `n`) is the block's key count: the
// step's (%cN), or the GPU decode form's page.
std::string kvPointers(const AttentionKernelSpec& s, const char* kBuf, const char* vBuf, const char* clamp,
                       const std::string& p, const std::string& j, const char* keys = "%cN", int64_t n = 0) {
  std::string ends = *clamp ? fmt::format(R"(    %{p}kend0 = arith.addi %{p}krow, %{p}valid : index
    %{p}vend0 = arith.addi %{p}vrow, %{p}valid : index
    %{p}kend = arith.minsi %{p}kend0, {c} : index
    %{p}vend = arith.minsi %{p}vend0, {c} : index
)",
                                          fmt::arg("p", p), fmt::arg("c", clamp))
                            : fmt::format(R"(    %{p}kend = arith.addi %{p}krow, %{p}valid : index
    %{p}vend = arith.addi %{p}vrow, %{p}valid : index
)",
                                          fmt::arg("p", p));
  // One K^T [PW, N] and one V [N, PW] block per head-dim panel (suffix x).
  std::string ptrs;
  for (int64_t i = 0; i < panels(s); ++i)
    ptrs += fmt::format(R"(    %{p}kp{x} = tile.make_block_ptr {kb}, [%cD, %{p}kend], [%c1, %cD], [{off}, %{p}krow] : {P} -> !tile.block_ptr<tensor<{PW}x{N}x{T}>>
    %{p}vp{x} = tile.make_block_ptr {vb}, [%{p}vend, %cD], [%cD, %c1], [%{p}vrow, {off}] : {P} -> !tile.block_ptr<tensor<{N}x{PW}x{T}>>
)",
                        fmt::arg("kb", kBuf), fmt::arg("vb", vBuf), fmt::arg("N", n ? n : s.blockN),
                        fmt::arg("PW", panelWidth(s)), fmt::arg("T", s.dtype), fmt::arg("P", StorageText{s.dtype}.ptr()),
                        fmt::arg("p", p), fmt::arg("x", panel(s, i)), fmt::arg("off", panelOffset(i)));
  return fmt::format(R"(    %{p}vleft = arith.subi %ctx, {j} : index
    %{p}valid = arith.minsi %{p}vleft, {keys} : index
{ends}{ptrs})",
                     fmt::arg("ends", ends), fmt::arg("ptrs", ptrs), fmt::arg("p", p), fmt::arg("j", j),
                     fmt::arg("keys", keys));
}

// The GPU form's K / V copies run over one key range for both loops of a
// program (mask-free, then masked): [from, to), block i of it in stage i
// mod stages. `previous`: the result name of the loop this one continues
// ("" for the first), whose copies ahead already cover this loop's first
// blocks, so the pipeline does not drain between the loops (a causal
// program would otherwise wait out one copy round trip at its diagonal).
struct KeyPipeline {
  const char* from;
  const char* to;
  const char* previous = "";
};

// A loop over key blocks [from, to) carrying (acc, m, l) from `inits`.
// The GPU form pipelines the K / V copies like the staged GEMM: the first
// loop of the pipeline, after a barrier (earlier warps are done with the
// buffers), copies stages - 1 blocks ahead; step i waits until block i has
// landed (stages - 2 groups left in flight), a barrier makes it visible and
// frees the buffer step i - 1 read, which receives block i + stages - 1
// (up to the pipeline's end, past this loop's).
// `inits`: the accumulator panels', m's and l's (carriedTypes).
// `afterCopies`: text between the copies ahead and the loop (the decode
// form's wait for Q, whose copy went out before them).
std::string loop(const AttentionKernelSpec& s, const KvRows& kvRows, bool masked, const char* from, const char* to,
                 const KeyPipeline& pipe, const std::vector<std::string>& inits, const char* result,
                 const std::string& afterCopies = "") {
  std::string pre, rows, lookups, moreArgs, moreYields, moreTypes;
  // The decode form looks up the pages of the block a step copies one step
  // before it (carried in the loop), so the table read's latency falls in
  // the previous step's work instead of stalling its one warp before the
  // copy. The prefill form's 8 warps hide it, and its 128 registers have
  // no room for the carried blocks (ptxas spilled 96 bytes, against 40).
  const int64_t pages = gpuDecode(s) ? s.blockN / s.pageSize : 0;
  if (!gpuForm(s)) {
    rows = kvRows("", "%j", "");
  } else {
    const StorageText st{s.dtype};
    // Copies of the block at key `j` into stage `stage`, names prefixed `p`.
    // The paged forms copy the step's pages one by one (each from its own
    // physical block) into consecutive rows of the stage.
    const int64_t page = gpuPaged(s) ? s.pageSize : s.blockN;
    const std::string KP = st.blockPtr(fmt::format("{}x{}", panelWidth(s), page)),
                      VP = st.blockPtr(fmt::format("{}x{}", page, panelWidth(s)));
    // `carried`: the pages' physical blocks are the loop's %cb<page>.
    auto copy = [&](const std::string& p, const std::string& j, const std::string& stage, bool carried) {
      std::string text = fmt::format("    %{p}so = arith.muli {st}, %cN : index\n", fmt::arg("p", p), fmt::arg("st", stage));
      if (s.tma) {
        // One box a panel of K and of V: keys [j, j + N) of plane %bkh
        // (this batch's KV head); rows past T arrive as zeros.
        for (int64_t i = 0; i < panels(s); ++i)
          text += fmt::format(R"(    %{p}kl{x} = tile.make_block_ptr %lk{x}, [%cPw, %cSN], [%c1, %cPD], [%c0, %{p}so] : {P} -> {KB}
    tile.tma_copy %{p}kl{x}, %kmap[{off}, {j}, %bkh], %bars[{st}] : {KB}, !tile.ptr<i8>, !tile.ptr<i64>
    %{p}vl{x} = tile.make_block_ptr %lv{x}, [%cSN, %cPw], [%cPD, %c1], [%{p}so, %c0] : {P} -> {VB}
    tile.tma_copy %{p}vl{x}, %vmap[{off}, {j}, %bkh], %bars[{st}] : {VB}, !tile.ptr<i8>, !tile.ptr<i64>
)",
                              fmt::arg("p", p), fmt::arg("x", panel(s, i)), fmt::arg("off", panelOffset(i)),
                              fmt::arg("j", j), fmt::arg("st", stage), fmt::arg("P", st.ptr()), fmt::arg("KB", KP),
                              fmt::arg("VB", VP));
        return text;
      }
      for (int64_t pg = 0; pg < s.blockN / page; ++pg) {
        const std::string q = gpuPaged(s) ? fmt::format("{}{}_", p, pg) : p;
        std::string jj = j, row = "%" + p + "so";
        if (pg) {
          text += fmt::format("    %{q}j = arith.addi {j}, %c{off} : index\n    %{q}r = arith.addi %{p}so, %c{off} : index\n",
                              fmt::arg("q", q), fmt::arg("j", j), fmt::arg("p", p), fmt::arg("off", pg * page));
          jj = "%" + q + "j", row = "%" + q + "r";
        }
        text += kvRows(q, jj, carried ? fmt::format("%cb{}", pg) : "");
        // Panel x of the stage: rows of the panel's width, padded by 8
        // elements (one panel) or swizzled (warpgroup dots, %cPD = %cPw).
        for (int64_t i = 0; i < panels(s); ++i)
          text += fmt::format(R"(    %{q}kl{x} = tile.make_block_ptr %lk{x}, [{W}, %cSN], [%c1, %cPD], [%c0, {row}] : {P} -> {KB}
    tile.async_copy %{q}kl{x}, %{q}kp{x} {{contiguous = 0 : i64}} : {KB}
    %{q}vl{x} = tile.make_block_ptr %lv{x}, [%cSN, {W}], [%cPD, %c1], [{row}, %c0] : {P} -> {VB}
    tile.async_copy %{q}vl{x}, %{q}vp{x} {{contiguous = 1 : i64}} : {VB}
)",
                              fmt::arg("q", q), fmt::arg("x", panel(s, i)), fmt::arg("row", row),
                              fmt::arg("W", s.groupDots ? "%cPw" : "%cD"), fmt::arg("P", st.ptr()), fmt::arg("KB", KP),
                              fmt::arg("VB", VP));
      }
      return text;
    };
    const bool first = !*pipe.previous;
    if (first)
      pre = fmt::format(R"(  tile.barrier
  scf.for %pi = %c0 to %cST1 step %c1 {{
    %pj0 = arith.muli %pi, %cN : index
    %pj = arith.addi {from}, %pj0 : index
    %pin = arith.cmpi slt, %pj, {to} : index
    scf.if %pin {{
{copy}    }}
{commit}  }}
)",
                        fmt::arg("from", pipe.from), fmt::arg("to", pipe.to), fmt::arg("copy", copy("p", "%pj", "%pi", false)),
                        fmt::arg("commit", s.tma ? "" : "    tile.async_commit\n"));
    if (pages) {
      // Names of the first lookups before the loop: prefixed by the loop's
      // result name (both loops of a kernel have them at function level).
      const std::string ip = std::string(result + 1) + "i";
      // The blocks %{x}<page>_blk of the step at key %{x}j.
      auto stepLookups = [&](const std::string& x) {
        std::string t;
        for (int64_t pg = 0; pg < pages; ++pg) {
          t += pageLookup(fmt::format("{}{}_", x, pg), pg ? fmt::format("%{}{}_j", x, pg) : "%" + x + "j");
          if (pg + 1 < pages) t += fmt::format("    %{0}{1}_j = arith.addi %{0}j, %c{2} : index\n", x, pg + 1, (pg + 1) * page);
        }
        return t;
      };
      // Only the TMA form continues a pipeline, and it has no pages.
      if (!first) fail("attention kernel '{}': a continuing key loop carries no page look-ups", s.name);
      pre += fmt::format("  %{}j = arith.addi {}, %cAhead : index\n", ip, pipe.from) + stepLookups(ip);
      lookups = "    %lj = arith.addi %nj, %cN : index\n" + stepLookups("l");
      for (int64_t pg = 0; pg < pages; ++pg) {
        moreArgs += fmt::format(", %cb{0} = %{1}{0}_blk", pg, ip);
        moreYields += fmt::format(", %l{}_blk", pg);
        moreTypes += ", index";
      }
    }
    // Block i has landed: cp.async leaves stages - 2 groups in flight; TMA
    // waits for phase i / stages of stage i's mbarrier (parity alternates).
    const std::string landed = s.tma ? R"(    %st = arith.remui %i, %cST : index
    %round = arith.divui %i, %cST : index
    %parity = arith.remui %round, %c2 : index
    tile.mbarrier_wait %bars[%st], %parity : !tile.ptr<i64>
)"
                                     : fmt::format("    tile.async_wait {{pending = {} : i64}}\n", s.stages - 2);
    rows = fmt::format(R"(    %i0 = arith.subi %j, {from} : index
    %i = arith.divui %i0, %cN : index
{landed}    tile.barrier
    %nj = arith.addi %j, %cAhead : index
    %nin = arith.cmpi slt, %nj, {to} : index
    scf.if %nin {{
    %ni = arith.addi %i, %cST1 : index
    %nst = arith.remui %ni, %cST : index
{copy}    }}
{commit}{lookups}{stage})",
                       fmt::arg("from", pipe.from), fmt::arg("to", pipe.to), fmt::arg("landed", landed),
                       fmt::arg("copy", copy("n", "%nj", "%nst", pages > 0)), fmt::arg("lookups", lookups),
                       fmt::arg("commit", s.tma ? "" : "    tile.async_commit\n"),
                       fmt::arg("stage", s.tma ? "" : "    %st = arith.remui %i, %cST : index\n"));
  }
  std::string args;
  for (int64_t i = 0; i < panels(s); ++i) args += fmt::format("%acc{} = {}, ", panel(s, i), inits[i]);
  args += fmt::format("%m = {}, %l = {}", inits[panels(s)], inits[panels(s) + 1]) + moreArgs;
  return pre + afterCopies + fmt::format(R"(  {res}:{n} = scf.for %j = {from} to {to} step %cN iter_args({args}) -> ({types}{moreTypes}) {{
{rows}{body}  }}
)",
                           fmt::arg("res", result), fmt::arg("n", panels(s) + 2 + pages), fmt::arg("from", from),
                           fmt::arg("to", to), fmt::arg("args", args), fmt::arg("types", carriedTypes(s)),
                           fmt::arg("moreTypes", moreTypes), fmt::arg("rows", rows),
                           fmt::arg("body", stepBody(s, masked, moreYields, moreTypes)));
}

}  // namespace

std::string emitAttentionKernel(const AttentionKernelSpec& s) {
  if (s.heads <= 0 || s.kvHeads <= 0 || s.headDim <= 0 || s.heads % s.kvHeads || s.blockM <= 0 || s.blockN <= 0)
    fail("attention kernel: heads {} / kv heads {} / head dim {} / blocks {}x{} invalid", s.heads, s.kvHeads, s.headDim,
         s.blockM, s.blockN);
  if (s.kvSplits < 1 || (s.kvSplits > 1 && (!s.paged || s.keyMask)))
    fail("attention kernel: {} KV splits (splits > 1 need the paged form)", s.kvSplits);
  if (s.paged && (s.keyMask || !s.causal))
    fail("attention kernel: the paged form is causal over the context and takes no key mask");
  const StorageText st{s.dtype};
  st.check("attention");
  const int64_t M = s.blockM, N = s.blockN, D = s.headDim;
  if (gpuForm(s)) {
    if (!st.sixteenBit() || s.stages < 2 || s.keyMask || s.kvSplits != 1)
      fail("attention kernel '{}': the staged GPU form takes f16 or bf16, at least 2 stages, no key mask and no "
           "compiled-in KV splits (its decode form takes the split count at launch)",
           s.name);
    if (s.paged && (s.pageSize <= 0 || N % s.pageSize))
      fail("attention kernel '{}': the GPU paged forms copy whole pages (keys per step {}, page {})", s.name, N,
           s.pageSize);
    if (s.decode && (s.numWarps <= 0 || M != 16 || s.heads / s.kvHeads > M || N % (16 * s.numWarps)))
      fail("attention kernel '{}': the GPU decode form packs a KV head's {} query heads into 16 rows and splits a "
           "step's keys over its warps, 16 or more each (block M {}, {} keys per step on {} warps)",
           s.name, s.heads / s.kvHeads, M, N, s.numWarps);
    if (s.groupDots && (s.decode || M != 16 * s.numWarps || s.numWarps % 4 || D % 64 || N % 16 || N > 256))
      fail("attention kernel '{}': warpgroup dots need 16 query rows per warp on whole warpgroups (block M {} on {} "
           "warps), a head dim of 64-column panels (got {}), keys per step a multiple of 16 up to 256 (got {}) and "
           "not the decode form",
           s.name, M, s.numWarps, D, N);
    if (s.tma && (!s.groupDots || s.paged))
      fail("attention kernel '{}': TMA copies serve the contiguous warpgroup-dot form only", s.name);
    if (s.numWarps <= 0 || (!s.decode && M % (16 * s.numWarps)) || N % 16 || D % 16)
      fail("attention kernel '{}': the GPU form needs a multiple of 16 query rows per warp (block M {} on {} warps) and key block "
           "and head dim multiples of 16 (got {} and {})",
           s.name, M, s.numWarps, N, D);
  }
  const std::string P = st.ptr(), qo = fmt::format("{}x{}", M, D);
  std::string args, prologue;
  KvRows kvRows;
  if (gpuDecode(s)) {
    args = fmt::format("%q: {0}, %cache: {0}, ", P) +
           "%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: " + P + ", %tables: !tile.ptr<i64>, "
           "%lens: !tile.ptr<i64>, %maxBlocks: index, %cacheRows: index, %splits: index";
    // Sequence n's one token is row n of q / o [B, heads * D]; viewed as
    // [B heads, D], KV head kh's query heads are rows [n H + kh G, + G): the
    // program's rows past them read as zero and are never stored.
    prologue = fmt::format(R"(  %n = tile.program_id 2
  %ctx = tile.block_lookup %lens[%n] : !tile.ptr<i64>
  %qLen = arith.addi %c1, %c0 : index
  %nH = arith.muli %n, %cH : index
  %khG = arith.muli %kh, %cG : index
  %qRow = arith.addi %nH, %khG : index
  %qEnd = arith.addi %qRow, %cG : index
  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %tableRow = arith.muli %n, %maxBlocks : index
)",
                           fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)));
  } else if (s.paged) {
    args = fmt::format("%q: {0}, %cache: {0}, ", P) +
           (s.kvSplits > 1 ? "%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, " : "%o: " + P + ", ") +
           "%tables: !tile.ptr<i64>, %starts: !tile.ptr<i64>, %lens: !tile.ptr<i64>, %maxBlocks: index, %cacheRows: index";
    // Sequence n's tokens are rows [s0, s1) of q/o; its context is ctx.
    prologue = fmt::format(R"(  %n = tile.program_id 2
  %n1 = arith.addi %n, %c1 : index
  %s0 = tile.block_lookup %starts[%n] : !tile.ptr<i64>
  %s1 = tile.block_lookup %starts[%n1] : !tile.ptr<i64>
  %ctx = tile.block_lookup %lens[%n] : !tile.ptr<i64>
  %qLen = arith.subi %s1, %s0 : index
  %qRow = arith.addi %s0, %r0 : index
  %qCol = arith.muli %h, %cD : index
  %qColEnd = arith.addi %qCol, %cD : index
{qPtr}{oPtr}  %tableRow = arith.muli %n, %maxBlocks : index
)",
                           fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)),
                           fmt::arg("qPtr", s.groupDots ? std::string() : fmt::format("  %qp = tile.make_block_ptr %q, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {} -> {}\n", P, st.blockPtr(qo))),
                           fmt::arg("oPtr", s.kvSplits > 1 || s.groupDots ? std::string()
                                                           : fmt::format("  %op = tile.make_block_ptr %o, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {} -> {}\n", P, st.blockPtr(qo))));
    // Cache rows of (physical block, kv head): K at ((blk * 2) * Hk + kh) * N,
    // V Hk * N rows further.
    kvRows = [&s](const std::string& p, const std::string& j, const std::string&) {
      return fmt::format(R"(    %{p}lblk = arith.divui {j}, %cN : index
    %{p}ti = arith.addi %tableRow, %{p}lblk : index
    %{p}blk = tile.block_lookup %tables[%{p}ti] : !tile.ptr<i64>
    %{p}b2 = arith.muli %{p}blk, %c2Hk : index
    %{p}b3 = arith.addi %{p}b2, %kh : index
    %{p}krow = arith.muli %{p}b3, %cN : index
    %{p}vrow = arith.addi %{p}krow, %cHkN : index
)",
                         fmt::arg("p", p), fmt::arg("j", j)) +
             kvPointers(s, "%cache", "%cache", "%cacheRows", p, j);
    };
  } else {
    args = fmt::format("%q: {0}, %k: {0}, %v: {0}, ", P) + (s.keyMask ? "%mask: !tile.ptr<f32>, " : "") + "%o: " + P +
           ", %S: index, %T: index" + (s.tma ? ", %qmap: !tile.ptr<i8>, %kmap: !tile.ptr<i8>, %vmap: !tile.ptr<i8>" : "");
    prologue = fmt::format(R"(  %b = tile.program_id 2
  %B = arith.addi %b, %c1 : index
  %qLen = arith.addi %S, %c0 : index
  %ctx = arith.addi %T, %c0 : index
  %bh = arith.muli %b, %cH : index
  %bhq = arith.addi %bh, %h : index
  %qBase = arith.muli %bhq, %S : index
  %qRow = arith.addi %qBase, %r0 : index
  %qEnd = arith.addi %qBase, %S : index
{ioPtrs}  %bk = arith.muli %b, %cHk : index
  %bkh = arith.addi %bk, %kh : index
  %kvBase = arith.muli %bkh, %T : index
)",
                           fmt::arg("P", P), fmt::arg("ioPtrs", s.groupDots ? std::string() : fmt::format(R"(  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
)", fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)))));
    kvRows = [&s](const std::string& p, const std::string& j, const std::string&) {
      return fmt::format(R"(    %{p}krow = arith.addi %kvBase, {j} : index
    %{p}vrow = arith.addi %kvBase, {j} : index
)",
                         fmt::arg("p", p), fmt::arg("j", j)) +
             kvPointers(s, "%k", "%v", "", p, j);
    };
  }

  if (gpuPaged(s)) {
    // The GPU forms copy page by page: page j / page of the sequence
    // (clamped to its last page, page 0 without a context: a step's pages
    // past the context copy nothing but must not read past the table row,
    // and the loops look pages up a step ahead); K at ((blk * 2) * Hk +
    // kh) * page, V Hk * page rows on.
    prologue += fmt::format(R"(  %cPg = arith.constant {page} : index
  %cPgHk = arith.constant {pageHk} : index
  %lastPage0 = arith.subi %ctx, %c1 : index
  %lastPage1 = arith.divui %lastPage0, %cPg : index
  %hasCtx = arith.cmpi sgt, %ctx, %c0 : index
  %lastPage = arith.select %hasCtx, %lastPage1, %c0 : index
)",
                            fmt::arg("page", s.pageSize), fmt::arg("pageHk", s.pageSize * s.kvHeads));
    for (int64_t pg = 1; pg < N / s.pageSize; ++pg)
      prologue += fmt::format("  %c{0} = arith.constant {0} : index\n", pg * s.pageSize);
    kvRows = [&s](const std::string& p, const std::string& j, const std::string& blk) {
      return (blk.empty() ? pageLookup(p, j) : "") + fmt::format(R"(    %{p}b2 = arith.muli {blk}, %c2Hk : index
    %{p}b3 = arith.addi %{p}b2, %kh : index
    %{p}krow = arith.muli %{p}b3, %cPg : index
    %{p}vrow = arith.addi %{p}krow, %cPgHk : index
)",
                         fmt::arg("p", p), fmt::arg("blk", blk.empty() ? "%" + p + "blk" : blk)) +
             kvPointers(s, "%cache", "%cache", "%cacheRows", p, j, "%cPg", s.pageSize);
    };
  }

  // Keys [0, fullEnd) are visible to every row of the block (mask-free
  // loop); [fullEnd, kvEnd) need masks. Rows past q_len only exist to fill
  // the tile: they are never stored, and an idle program (no rows) runs no
  // key block at all.
  std::string bounds;
  if (causalMask(s))
    bounds = R"(  %kvEnd0 = arith.addi %pos0, %active : index
  %pos1 = arith.addi %pos0, %c1 : index
  %fullBlocks = arith.divui %pos1, %cN : index
)";
  else
    bounds = R"(  %kvEnd0 = arith.addi %ctx, %c0 : index
  %fullBlocks = arith.divui %ctx, %cN : index
)";
  // A key mask can hide any key: every block is masked then.
  std::string fullEnd = s.keyMask ? "  %fullEnd = arith.addi %c0, %c0 : index\n"
                                  : "  %fullEnd0 = arith.muli %fullBlocks, %cN : index\n"
                                    "  %fullEnd = arith.minsi %fullEnd0, %kvEnd : index\n";
  // A [M, PW] block pointer `name` over head-dim panel i of q or o (`buf`)
  // in the form's token layout: the warpgroup-dot form copies Q and stores
  // O panel by panel.
  auto ioPanel = [&](const std::string& buf, const std::string& name, int64_t i) {
    const std::string bp = st.blockPtr(fmt::format("{}x{}", M, panelWidth(s)));
    if (!s.paged)
      return fmt::format("  {} = tile.make_block_ptr {}, [%qEnd, %cD], [%cD, %c1], [%qRow, {}] : {} -> {}\n", name, buf,
                         panelOffset(i), P, bp);
    return fmt::format("  {n}_c = arith.addi %qCol, {off} : index\n"
                       "  {n} = tile.make_block_ptr {b}, [%s1, %qColEnd], [%cF, %c1], [%qRow, {n}_c] : {P} -> {bp}\n",
                       fmt::arg("n", name), fmt::arg("b", buf), fmt::arg("off", panelOffset(i)), fmt::arg("P", P),
                       fmt::arg("bp", bp));
  };
  // Without splits: O = acc / l (with a key mask, rows that saw no key give
  // 0), one store. With splits: the unnormalized partial results.
  // Stores of a split's partial result: acc [M, D] through a block pointer
  // of bounds / row stride / offsets `acc*`, m and l [M, 1] through `ml*`.
  auto partialStores = [&](const std::string& accBounds, const std::string& accStride, const std::string& accAt,
                           const std::string& mlBounds, const std::string& mlStride, const std::string& mlAt) {
    return fmt::format(R"(  %pop = tile.make_block_ptr %po, [{ab}], [{as}, %c1], [{aa}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x{D}xf32>>
  tile.store %pop, %r2#0 : !tile.block_ptr<tensor<{M}x{D}xf32>>
  %me2 = tile.expand_dims %r2#1 {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %pmp = tile.make_block_ptr %pm, [{mb}], [{ms}, %c1], [{ma}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %pmp, %me2 : !tile.block_ptr<tensor<{M}x1xf32>>
  %le2 = tile.expand_dims %r2#2 {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %plp = tile.make_block_ptr %pl, [{mb}], [{ms}, %c1], [{ma}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %plp, %le2 : !tile.block_ptr<tensor<{M}x1xf32>>
)",
                       fmt::arg("ab", accBounds), fmt::arg("as", accStride), fmt::arg("aa", accAt),
                       fmt::arg("mb", mlBounds), fmt::arg("ms", mlStride), fmt::arg("ma", mlAt), fmt::arg("M", M),
                       fmt::arg("D", D));
  };
  // O = acc x (1 / l): one division per row, then multiplies. Dividing
  // every element compiled to an IEEE division subroutine per element
  // (branches included): 64 a lane in the paged decode's one-split store,
  // 9 % of its instructions (Nsight Compute, H100, 2026-11-23).
  auto inverseL = [&](const std::string& l, const std::string& width) {
    return fmt::format(R"(  %lone = arith.constant dense<1.0> : tensor<{M}xf32>
  %linv = arith.divf %lone, {l} : tensor<{M}xf32>
  %le = tile.expand_dims %linv {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %lb = tile.broadcast %le : tensor<{M}x1xf32> -> tensor<{M}x{W}xf32>
)",
                       fmt::arg("M", M), fmt::arg("l", l), fmt::arg("W", width));
  };
  std::string epilogue;
  if (gpuDecode(s))
    // One split: the program saw every key (at least the token's own, so
    // l > 0) and stores O = acc / l into o viewed as [B heads, D] itself;
    // the runtime then launches no combine. Otherwise the partials of
    // [B heads, S D] (po) and [B heads, S] (pm, pl): row n H + h, split
    // sid; the program's G rows from qRow.
    epilogue = fmt::format(R"(  %oneSplit = arith.cmpi eq, %cS, %c1 : index
  scf.if %oneSplit {{
{inverse}    %out = arith.mulf %r2#0, %lb : tensor<{M}x{D}xf32>
    %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  {store}  }} else {{
    %sidD = arith.muli %sid, %cD : index
    %sidDEnd = arith.addi %sidD, %cD : index
    %sid1 = arith.addi %sid, %c1 : index
    %cSD = arith.muli %cS, %cD : index
{partials}  }}
)",
                           fmt::arg("M", M), fmt::arg("D", D), fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)),
                           fmt::arg("inverse", inverseL("%r2#2", std::to_string(D))),
                           fmt::arg("store", st.store("%op", "%out", qo)),
                           fmt::arg("partials", partialStores("%qEnd, %sidDEnd", "%cSD", "%qRow, %sidD",
                                                              "%qEnd, %sid1", "%cS", "%qRow, %sid")));
  else if (s.kvSplits > 1)
    // acc [BM, D], m and l [BM, 1] of this split.
    epilogue = fmt::format(R"(  %poCol0 = arith.muli %h, %cS : index
  %poCol = arith.addi %poCol0, %sid : index
  %poColEnd = arith.addi %poCol, %c1 : index
  %poD = arith.muli %poCol, %cD : index
  %poDEnd = arith.addi %poD, %cD : index
  %cHSD = arith.constant {HSD} : index
  %cHS = arith.constant {HS} : index
{partials})",
                           fmt::arg("HSD", s.heads * s.kvSplits * D), fmt::arg("HS", s.heads * s.kvSplits),
                           fmt::arg("partials", partialStores("%s1, %poDEnd", "%cHSD", "%qRow, %poD",
                                                              "%s1, %poColEnd", "%cHS", "%qRow, %poCol")));
  else if (s.keyMask)
    epilogue = fmt::format(R"(  %seen = arith.cmpf ogt, %r2#2, %zm : tensor<{M}xf32>
  %one = arith.constant dense<1.0> : tensor<{M}xf32>
  %linv0 = arith.divf %one, %r2#2 : tensor<{M}xf32>
  %linv = arith.select %seen, %linv0, %zm : tensor<{M}xi1>, tensor<{M}xf32>
  %le = tile.expand_dims %linv {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %lb = tile.broadcast %le : tensor<{M}x1xf32> -> tensor<{M}x{D}xf32>
  %out = arith.mulf %r2#0, %lb : tensor<{M}x{D}xf32>
)",
                           fmt::arg("M", M), fmt::arg("D", D));
  else if (!s.groupDots)
    epilogue = inverseL("%r2#2", std::to_string(D)) +
               fmt::format("  %out = arith.mulf %r2#0, %lb : tensor<{}x{}xf32>\n", M, D);
  if (s.kvSplits == 1 && !gpuDecode(s) && !s.groupDots) epilogue += st.store("%op", "%out", qo);
  if (s.groupDots) {
    // Each accumulator panel divided by l and stored at its columns.
    const int64_t np = panels(s), PW = panelWidth(s);
    const std::string po = fmt::format("{}x{}", M, PW);
    epilogue = inverseL(fmt::format("%r2#{}", np + 1), std::to_string(PW));
    for (int64_t i = 0; i < np; ++i)
      epilogue += fmt::format("  %out{i} = arith.mulf %r2#{i}, %lb : tensor<{M}x{PW}xf32>\n", fmt::arg("i", i),
                              fmt::arg("M", M), fmt::arg("PW", PW)) +
                  ioPanel("%o", "%op" + std::to_string(i), i) + st.store("%op" + std::to_string(i), "%out" + std::to_string(i), po);
  }

  // Constants only the guarded forms use (an unused tile would get no layout).
  std::string maskConsts;
  if (s.keyMask) maskConsts += fmt::format("  %ninfs = arith.constant dense<0xFF800000> : tensor<{}x{}xf32>\n", M, N);
  if (rowsMaySeeNothing(s))
    maskConsts += fmt::format("  %ninfm = arith.constant dense<0xFF800000> : tensor<{0}xf32>\n"
                              "  %zm = arith.constant dense<0.0> : tensor<{0}xf32>\n",
                              M);
  // This program's share of the keys: whole blocks, split `kvSplits` ways
  // (flash-decoding); [lo, fe) needs no mask, [fe, hi) does.
  std::string range = R"(  %kvBlocks0 = arith.addi %kvEnd, %cN : index
  %kvBlocks1 = arith.subi %kvBlocks0, %c1 : index
  %kvBlocks = arith.divui %kvBlocks1, %cN : index
)" + splitShare("", "%kvBlocks", "%cS", "%sid", "%cN", "%kvEnd") +
                      R"(  %fe0 = arith.minsi %fullEnd, %hi : index
  %fe = arith.maxsi %lo, %fe0 : index
)";
  // The loops carry the accumulator panels, m and l.
  std::vector<std::string> fullInits(panels(s), "%accz"), maskedInits;
  fullInits.insert(fullInits.end(), {"%m0", "%l0"});
  for (int64_t i = 0; i < panels(s) + 2; ++i) maskedInits.push_back(fmt::format("%r1#{}", i));
  const double log2e = 1.4426950408889634;
  // This program's query block. The GPU form takes them last first: with
  // the causal mask the last blocks see the most keys, and the blocks the
  // GPU starts first should be the longest (the short ones fill in at the
  // end instead of leaving SMs idle).
  std::string queryBlock = gpuForm(s) && !s.paged ? R"(  %nqb0 = arith.addi %S, %cM : index
  %nqb1 = arith.subi %nqb0, %c1 : index
  %nqb = arith.divui %nqb1, %cM : index
  %lastQb = arith.subi %nqb, %c1 : index
  %qb = arith.subi %lastQb, %pid0 : index
)"
                                      : "  %qb = arith.divui %pid0, %cS : index\n";
  // The decode form's one warp would wait out Q's round trip before its
  // first K / V copies go out: it waits for Q after them instead (the copy
  // groups complete in order, so `stages - 1` groups left pending is Q's).
  // qReady: that wait and Q's fragments.
  const bool qAfterCopies = gpuDecode(s);
  std::string loadQ, qReady;
  if (gpuForm(s) && s.groupDots) {
    // Buffers per head-dim panel x: Q [M, 64], K and V `stages` x [N, 64],
    // 128-byte swizzled rows (no padding: %cPD is the panel width). Q is
    // copied once and lands before the key loops start their copies.
    loadQ = fmt::format(R"(  %cPw = arith.constant {PW} : index
  %cPD = arith.constant {PW} : index
  %cSN = arith.constant {SN} : index
  %cST = arith.constant {ST} : index
  %cST1 = arith.constant {ST1} : index
  %cAhead = arith.constant {ahead} : index
)",
                        fmt::arg("PW", panelWidth(s)), fmt::arg("SN", s.stages * N), fmt::arg("ST", s.stages),
                        fmt::arg("ST1", s.stages - 1), fmt::arg("ahead", (s.stages - 1) * N));
    const std::string QB = st.blockPtr(fmt::format("{}x{}", M, panelWidth(s)));
    for (int64_t i = 1; i < panels(s); ++i)
      loadQ += fmt::format("  %cPo{} = arith.constant {} : index\n", i, i * panelWidth(s));
    for (int64_t i = 0; i < panels(s); ++i)
      loadQ += fmt::format(R"(  %lq{x} = tile.alloc {{size = {qSize} : i64, swizzle = 128 : i64}} : {P}
  %lk{x} = tile.alloc {{size = {kvSize} : i64, swizzle = 128 : i64}} : {P}
  %lv{x} = tile.alloc {{size = {kvSize} : i64, swizzle = 128 : i64}} : {P}
)",
                           fmt::arg("x", panel(s, i)), fmt::arg("qSize", M * panelWidth(s)),
                           fmt::arg("kvSize", s.stages * N * panelWidth(s)), fmt::arg("P", P));
    if (s.tma) {
      // Stage st's K and V panels complete phases of %bars[st]; Q's panels
      // one phase of %qbar, waited for after the first copies ahead went
      // out (qReady).
      loadQ += fmt::format(R"(  %bars = tile.alloc {{size = {ST} : i64}} : !tile.ptr<i64>
  %qbar = tile.alloc {{size = 1 : i64}} : !tile.ptr<i64>
  %c2 = arith.constant 2 : index
  tile.mbarrier_init %bars {{arrivals = {kv} : i64}} : !tile.ptr<i64>
  tile.mbarrier_init %qbar {{arrivals = {np} : i64}} : !tile.ptr<i64>
)",
                           fmt::arg("ST", s.stages), fmt::arg("kv", 2 * panels(s)), fmt::arg("np", panels(s)));
      for (int64_t i = 0; i < panels(s); ++i)
        loadQ += fmt::format(R"(  %ql{x} = tile.make_block_ptr %lq{x}, [%cM, %cPw], [%cPw, %c1], [%c0, %c0] : {P} -> {QB}
  tile.tma_copy %ql{x}, %qmap[{off}, %r0, %bhq], %qbar[%c0] : {QB}, !tile.ptr<i8>, !tile.ptr<i64>
)",
                             fmt::arg("x", panel(s, i)), fmt::arg("off", panelOffset(i)), fmt::arg("P", P),
                             fmt::arg("QB", QB));
      qReady = "  tile.mbarrier_wait %qbar[%c0], %c0 : !tile.ptr<i64>\n";
    } else {
      for (int64_t i = 0; i < panels(s); ++i)
        loadQ += ioPanel("%q", fmt::format("%qp{}", i), i) +
                 fmt::format(R"(  %ql{x} = tile.make_block_ptr %lq{x}, [%cM, %cPw], [%cPw, %c1], [%c0, %c0] : {P} -> {QB}
  tile.async_copy %ql{x}, %qp{i} {{contiguous = 1 : i64}} : {QB}
)",
                             fmt::arg("x", panel(s, i)), fmt::arg("i", i), fmt::arg("P", P), fmt::arg("QB", QB));
      loadQ += R"(  tile.async_commit
  tile.async_wait {pending = 0 : i64}
  tile.barrier
)";
    }
    loadQ += fmt::format(R"(  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
  %msc = arith.constant dense<{sscale:.9e}> : tensor<{M}xf32>
)",
                         fmt::arg("sscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("N", N));
  } else if (gpuForm(s)) {
    // Buffers: Q [M, D], K and V `stages` x [N, D], rows padded by 8
    // elements (16 bytes) so an ldmatrix's 8 rows fall in distinct banks.
    // Q is copied once (and its fragments read once, or in every step
    // without qInRegisters); its copy goes out first and is waited for
    // before the key loops start theirs, or in the decode form
    // (qAfterCopies) after the first loop's copies ahead.
    const int64_t PD = D + 8;
    const std::string qBlock = st.blockPtr(qo);
    qReady = fmt::format(R"(  tile.async_wait {{pending = {left} : i64}}
  tile.barrier
  %qu = tile.make_block_ptr %lq, [%cM, %cD], [%cPD, %c1], [%c0, %c0] : {P} -> {QB}
{qLoad})",
                         fmt::arg("left", qAfterCopies ? s.stages - 1 : 0), fmt::arg("P", P), fmt::arg("QB", qBlock),
                         fmt::arg("qLoad", s.qInRegisters ? qFragments(s) : std::string()));
    loadQ = fmt::format(R"(  %cPD = arith.constant {PD} : index
  %cSN = arith.constant {SN} : index
  %cST = arith.constant {ST} : index
  %cST1 = arith.constant {ST1} : index
  %cAhead = arith.constant {ahead} : index
  %lq = tile.alloc {{size = {qSize} : i64}} : {P}
  %lk = tile.alloc {{size = {kvSize} : i64}} : {P}
  %lv = tile.alloc {{size = {kvSize} : i64}} : {P}
  %ql = tile.make_block_ptr %lq, [%cM, %cD], [%cPD, %c1], [%c0, %c0] : {P} -> {QB}
  tile.async_copy %ql, %qp {{contiguous = 1 : i64}} : {QB}
  tile.async_commit
{qReady}  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
  %msc = arith.constant dense<{sscale:.9e}> : tensor<{M}xf32>
)",
                        fmt::arg("PD", PD), fmt::arg("SN", s.stages * N), fmt::arg("ST", s.stages),
                        fmt::arg("ST1", s.stages - 1), fmt::arg("ahead", (s.stages - 1) * N), fmt::arg("qSize", M * PD),
                        fmt::arg("kvSize", s.stages * N * PD), fmt::arg("P", P), fmt::arg("QB", qBlock),
                        fmt::arg("sscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("N", N),
                        fmt::arg("qReady", qAfterCopies ? std::string() : qReady));
  } else {
    loadQ = st.load("qt", "%qp", qo) + fmt::format(R"(  %qsc = arith.constant dense<{qscale:.9e}> : tensor<{M}x{D}xf32>
  %qs = arith.mulf %qt, %qsc : tensor<{M}x{D}xf32>
)",
                                                   fmt::arg("qscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("D", D));
  }
  // The TMA form's stages keep one phase count over both loops: one
  // pipeline from the program's first key to its last. The cp.async forms
  // drain it at the masked loop and refill it there (one pipeline over both
  // was no faster: 1.002x over bench-attention's cases, and the decode form
  // 0.2-0.5 us slower a step; H100, 2026-11-24).
  const KeyPipeline fullPipe = s.tma ? KeyPipeline{"%lo", "%hi"} : KeyPipeline{"%lo", "%fe"},
                    maskedPipe = s.tma ? KeyPipeline{"%lo", "%hi", "%r1"} : KeyPipeline{"%fe", "%hi"};
  std::string occupancy =
      gpuForm(s) && s.minBlocksPerSM > 0 ? fmt::format(", tile.min_blocks_per_sm = {} : i64", s.minBlocksPerSM) : "";
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64{occ}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cM = arith.constant {M} : index
  %cN = arith.constant {N} : index
  %cD = arith.constant {D} : index
  %cF = arith.constant {F} : index
  %cG = arith.constant {G} : index
  %cH = arith.constant {H} : index
  %cHk = arith.constant {Hk} : index
  %c2Hk = arith.constant {Hk2} : index
  %cHkN = arith.constant {HkN} : index
  %pid0 = tile.program_id 0
{splitCount}{queryBlock}  %sid = arith.remui %pid0, %cS : index
  %h = tile.program_id 1
  %r0 = arith.muli %qb, %cM : index
{khLine}
{prologue}  %left = arith.subi %qLen, %r0 : index
  %left0 = arith.maxsi %left, %c0 : index
  %active = arith.minsi %left0, %cM : index
  %hasRows = arith.cmpi sgt, %active, %c0 : index
  %past = arith.subi %ctx, %qLen : index
  %pos0 = arith.addi %past, %r0 : index
{bounds}  %kvEnd = arith.select %hasRows, %kvEnd0, %c0 : index
{fullEnd}{range}{loadQ}  %zs = arith.constant dense<0.0> : tensor<{M}x{N}xf32>
{maskConsts}  %accz = arith.constant dense<0.0> : tensor<{M}x{PW}xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<{M}xf32>
  %l0 = arith.constant dense<0.0> : tensor<{M}xf32>
{fullLoop}{maskedLoop}{epilogue}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("M", M), fmt::arg("N", N),
                     fmt::arg("D", D), fmt::arg("PW", panelWidth(s)), fmt::arg("F", s.heads * D), fmt::arg("G", s.heads / s.kvHeads),
                     fmt::arg("H", s.heads), fmt::arg("Hk", s.kvHeads), fmt::arg("Hk2", 2 * s.kvHeads),
                     fmt::arg("HkN", s.kvHeads * N), fmt::arg("prologue", prologue), fmt::arg("bounds", bounds),
                     fmt::arg("fullEnd", fullEnd),
                     fmt::arg("fullLoop", loop(s, kvRows, false, "%lo", "%fe", fullPipe, fullInits, "%r1",
                                               qAfterCopies || s.tma ? qReady : std::string())),
                     fmt::arg("maskedLoop", loop(s, kvRows, true, "%fe", "%hi", maskedPipe, maskedInits, "%r2")),
                     fmt::arg("epilogue", epilogue), fmt::arg("maskConsts", maskConsts),
                     fmt::arg("range", range), fmt::arg("loadQ", loadQ), fmt::arg("queryBlock", queryBlock),
                     fmt::arg("splitCount", gpuDecode(s) ? std::string("  %cS = arith.addi %splits, %c0 : index\n")
                                                         : fmt::format("  %cS = arith.constant {} : index\n", s.kvSplits)),
                     fmt::arg("occ", occupancy), fmt::arg("khLine", gpuDecode(s) ? "  %kh = arith.addi %h, %c0 : index\n"
                                                     : "  %kh = arith.divui %h, %cG : index\n"), fmt::arg("W", std::max<int64_t>(1, s.numWarps)));
}

namespace {

// The GPU decode form's combine: the split count is an argument, so the
// pass over the splits is a loop of single values (every lane holds them)
// and [1, D] rows, merged online like the attention loop: per step of U
// splits, M' = max(M, m_s...), acc' = 2^(M - M') acc + sum_s 2^(m_s - M')
// acc_s, l' likewise. Split 0 always saw a key (its range starts at key 0
// of a context >= 1), so M is finite from the first step on and splits
// that saw none (m_s = -inf) weigh 0. A step's loads come first and are
// independent: the warp waits for the partials (just written, in L2) once
// per step. One pass of kCombineSplitsPerStep splits a step, ceil(splits /
// U) steps: the last step's indices past the last split read the last
// split again (clamped) with weight 0, and a repeated split cannot change
// the max. At batch 1's 33 splits, 3 waits instead of the 10 of a max pass
// and a sum pass of 8 (H100, 2026-11-23: the combine took 10 us of a
// 16k-token step under Nsight Compute); a remainder loop one split at a
// time before it cost 15 waits at 31 splits (10.8 us against 7.0 at 32).
// O = acc x (1 / L): one IEEE division a row, as in the attention
// epilogues, not one per element. A lane holds 4 contiguous columns of a
// row (tile.lane_vector 4: one 16-byte load a split row), and the weighted
// sums contract to fused multiply-adds.

std::string gpuCombineKernel(const AttentionKernelSpec& s) {
  const StorageText st{s.dtype};
  const int64_t D = s.headDim;
  const std::string row = fmt::format("1x{}", D);
  // Lines loading split `idx`'s m, l and acc row (suffix u). `idx` is
  // clamped to the last split, so no load needs a bounds check (checked,
  // each [1, 1] load was a branch and some 35 instructions: about 0.2 us a
  // combine on the H100).
  auto loads = [&](const std::string& idx, const std::string& u) {
    return fmt::format(R"(    %msp{u} = tile.make_block_ptr %pm, [%TH, %splits], [%splits, %c1], [%th, {i}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
    %ms{u} = tile.load %msp{u} {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
    %lsp{u} = tile.make_block_ptr %pl, [%TH, %splits], [%splits, %c1], [%th, {i}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
    %ls{u} = tile.load %lsp{u} {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
    %arow{u} = arith.addi %rowS, {i} : index
    %asp{u} = tile.make_block_ptr %po, [%THS, %cD], [%cD, %c1], [%arow{u}, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{D}xf32>>
    %as{u} = tile.load %asp{u} {{in_bounds, contiguous = 1 : i64, run = 4 : i64}} : !tile.block_ptr<tensor<1x{D}xf32>>
)",
                       fmt::arg("u", u), fmt::arg("i", idx), fmt::arg("D", D));
  };
  // The merge of splits [from, to) in steps of `U` into the carried (m,
  // acc, l) from `init` (three values), results `res`.
  auto mergeLoop = [&](const std::string& res, const std::string& from, const std::string& to, int64_t U,
                       const std::string& init) {
    std::string body, mx = "%m";
    for (int64_t u = 0; u < U; ++u) {
      // Split s + u, clamped to the last; %okt{u} weighs it 1 or 0.
      body += fmt::format(R"(    %su{u} = arith.addi %s, %c{u} : index
    %sc{u} = arith.minui %su{u}, %lastSplit : index
    %ok{u} = arith.cmpi ult, %su{u}, %splits : index
    %okf{u} = arith.select %ok{u}, %f1, %f0 : f32
    %okt{u} = tile.splat %okf{u} : f32 -> tensor<1x1xf32>
)",
                          fmt::arg("u", u)) +
              loads("%sc" + std::to_string(u), std::to_string(u));
    }
    for (int64_t u = 0; u < U; ++u) {
      body += fmt::format("    %mn{0} = arith.maximumf {1}, %ms{0} : tensor<1x1xf32>\n", u, mx);
      mx = "%mn" + std::to_string(u);
    }
    body += fmt::format(R"(    %dm = arith.subf %m, {mx} : tensor<1x1xf32>
    %alpha = math.exp2 %dm : tensor<1x1xf32>
    %la = arith.mulf %l, %alpha fastmath<contract> : tensor<1x1xf32>
    %alphab = tile.broadcast %alpha : tensor<1x1xf32> -> tensor<1x{D}xf32>
    %aa = arith.mulf %acc, %alphab fastmath<contract> : tensor<1x{D}xf32>
)",
                        fmt::arg("mx", mx), fmt::arg("D", D));
    std::string acc = "%aa", l = "%la";
    for (int64_t u = 0; u < U; ++u) {
      body += fmt::format(R"(    %dms{u} = arith.subf %ms{u}, {mx} : tensor<1x1xf32>
    %wsx{u} = math.exp2 %dms{u} : tensor<1x1xf32>
    %ws{u} = arith.mulf %wsx{u}, %okt{u} : tensor<1x1xf32>
    %wl{u} = arith.mulf %ws{u}, %ls{u} fastmath<contract> : tensor<1x1xf32>
    %ln{u} = arith.addf {l}, %wl{u} fastmath<contract> : tensor<1x1xf32>
    %wsb{u} = tile.broadcast %ws{u} : tensor<1x1xf32> -> tensor<1x{D}xf32>
    %wa{u} = arith.mulf %wsb{u}, %as{u} fastmath<contract> : tensor<1x{D}xf32>
    %accn{u} = arith.addf {acc}, %wa{u} fastmath<contract> : tensor<1x{D}xf32>
)",
                          fmt::arg("u", u), fmt::arg("D", D), fmt::arg("mx", mx), fmt::arg("l", l), fmt::arg("acc", acc));
      acc = "%accn" + std::to_string(u), l = "%ln" + std::to_string(u);
    }
    return fmt::format("  {res}:3 = scf.for %s = {from} to {to} step %c{U} iter_args({init}) -> "
                       "(tensor<1x1xf32>, tensor<1x{D}xf32>, tensor<1x1xf32>) {{\n{body}    scf.yield {mx}, {acc}, {l} : "
                       "tensor<1x1xf32>, tensor<1x{D}xf32>, tensor<1x1xf32>\n  }}\n",
                       fmt::arg("res", res), fmt::arg("from", from), fmt::arg("to", to), fmt::arg("U", U),
                       fmt::arg("init", init), fmt::arg("D", D), fmt::arg("body", body), fmt::arg("mx", mx),
                       fmt::arg("acc", acc), fmt::arg("l", l));
  };
  std::string consts;  // %c2 .. %c<kCombineSplitsPerStep> (%c0 and %c1 come first)
  for (int64_t u = 2; u <= kCombineSplitsPerStep; ++u) consts += fmt::format("  %c{0} = arith.constant {0} : index\n", u);
  return fmt::format(R"(func.func @{name}_combine(%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: {P}, %T: index, %splits: index) attributes {{tile.num_warps = 1 : i64, tile.lane_vector = 4 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{consts}  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cF = arith.constant {F} : index
  %t = tile.program_id 0
  %h = tile.program_id 1
  %th0 = arith.muli %t, %cH : index
  %th = arith.addi %th0, %h : index
  %TH = arith.muli %T, %cH : index
  %THS = arith.muli %TH, %splits : index
  %rowS = arith.muli %th, %splits : index
  %lastSplit = arith.subi %splits, %c1 : index
  %stepsUp = arith.addi %splits, %c{Um1} : index
  %steps = arith.divui %stepsUp, %c{U} : index
  %end = arith.muli %steps, %c{U} : index
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %ninf = arith.constant dense<0xFF800000> : tensor<1x1xf32>
  %z = arith.constant dense<0.0> : tensor<1x{D}xf32>
  %z1 = arith.constant dense<0.0> : tensor<1x1xf32>
{merge}  %lone = arith.constant dense<1.0> : tensor<1x1xf32>
  %linv = arith.divf %lone, %r#2 : tensor<1x1xf32>
  %lb = tile.broadcast %linv : tensor<1x1xf32> -> tensor<1x{D}xf32>
  %out = arith.mulf %r#1, %lb : tensor<1x{D}xf32>
  %col = arith.muli %h, %cD : index
  %colEnd = arith.addi %col, %cD : index
  %op = tile.make_block_ptr %o, [%T, %colEnd], [%cF, %c1], [%t, %col] : {P} -> {BP}
{store}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("D", D), fmt::arg("H", s.heads), fmt::arg("F", s.heads * D),
                     fmt::arg("U", kCombineSplitsPerStep), fmt::arg("consts", consts), fmt::arg("Um1", kCombineSplitsPerStep - 1),
                     fmt::arg("merge", mergeLoop("%r", "%c0", "%end", kCombineSplitsPerStep, "%m = %ninf, %acc = %z, %l = %z1")),
                     fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(row)), fmt::arg("store", st.store("%op", "%out", row)));
}

}  // namespace

std::string emitAttentionCombineKernel(const AttentionKernelSpec& s) {
  const StorageText st{s.dtype};
  st.check("attention combine");
  if (gpuDecode(s) && s.heads > 0 && s.headDim > 0) return gpuCombineKernel(s);
  if (s.kvSplits < 2 || s.heads <= 0 || s.headDim <= 0) fail("attention combine kernel: needs >= 2 KV splits");
  const int64_t S = s.kvSplits, D = s.headDim;
  const std::string row = fmt::format("1x{}", D);
  return fmt::format(R"(func.func @{name}_combine(%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: {P}, %T: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cS = arith.constant {S} : index
  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cF = arith.constant {F} : index
  %t = tile.program_id 0
  %h = tile.program_id 1
  %th0 = arith.muli %t, %cH : index
  %th = arith.addi %th0, %h : index
  %TH = arith.muli %T, %cH : index
  %THS = arith.muli %TH, %cS : index
  %rowS = arith.muli %th, %cS : index
  %pmp = tile.make_block_ptr %pm, [%TH, %cS], [%cS, %c1], [%th, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{S}xf32>>
  %plp = tile.make_block_ptr %pl, [%TH, %cS], [%cS, %c1], [%th, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{S}xf32>>
  %pop = tile.make_block_ptr %po, [%THS, %cD], [%cD, %c1], [%rowS, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{S}x{D}xf32>>
  %m = tile.load %pmp : !tile.block_ptr<tensor<1x{S}xf32>>
  %l = tile.load %plp : !tile.block_ptr<tensor<1x{S}xf32>>
  %acc = tile.load %pop : !tile.block_ptr<tensor<{S}x{D}xf32>>
  %mx = tile.reduce %m {{kind = "max", axis = 1 : i64}} : tensor<1x{S}xf32> -> tensor<1xf32>
  %mxe = tile.expand_dims %mx {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %mxb = tile.broadcast %mxe : tensor<1x1xf32> -> tensor<1x{S}xf32>
  %d = arith.subf %m, %mxb : tensor<1x{S}xf32>
  %w = math.exp2 %d : tensor<1x{S}xf32>
  %wl = arith.mulf %w, %l : tensor<1x{S}xf32>
  %lsum = tile.reduce %wl {{kind = "sum", axis = 1 : i64}} : tensor<1x{S}xf32> -> tensor<1xf32>
  %z = arith.constant dense<0.0> : tensor<1x{D}xf32>
  %out0 = tile.dot %w, %acc, %z : tensor<1x{S}xf32> * tensor<{S}x{D}xf32> -> tensor<1x{D}xf32>
  %le = tile.expand_dims %lsum {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %lb = tile.broadcast %le : tensor<1x1xf32> -> tensor<1x{D}xf32>
  %out = arith.divf %out0, %lb : tensor<1x{D}xf32>
  %col = arith.muli %h, %cD : index
  %colEnd = arith.addi %col, %cD : index
  %op = tile.make_block_ptr %o, [%T, %colEnd], [%cF, %c1], [%t, %col] : {P} -> {BP}
{store}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("S", S), fmt::arg("D", D), fmt::arg("H", s.heads),
                     fmt::arg("F", s.heads * D), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(row)),
                     fmt::arg("store", st.store("%op", "%out", row)));
}

}  // namespace strata::tile
