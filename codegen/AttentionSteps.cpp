#include "codegen/AttentionText.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile::attention {

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

std::string pagedRows(const std::string& p, const std::string& j) {
  return fmt::format(R"(    %{p}lblk = arith.divui {j}, %cN : index
    %{p}ti = arith.addi %tableRow, %{p}lblk : index
    %{p}blk = tile.block_lookup %tables[%{p}ti] : !tile.ptr<i64>
    %{p}b2 = arith.muli %{p}blk, %c2Hk : index
    %{p}b3 = arith.addi %{p}b2, %kh : index
    %{p}krow = arith.muli %{p}b3, %cN : index
    %{p}vrow = arith.addi %{p}krow, %cHkN : index
)",
                     fmt::arg("p", p), fmt::arg("j", j));
}

std::string pieceRows(const AttentionKernelSpec& s, const std::string& buf, const std::string& name,
                      const std::string& col) {
  // The view ends at the piece's last column (its start + %cW), so the
  // lowering sees the columns in bounds (static: the rows alone are checked)
  // and stores whole vectors instead of masked ones.
  const std::string bp = fmt::format("!tile.block_ptr<tensor<{}x{}xf32>>", s.blockM, s.headPiece);
  std::string rows = "%s1", stride = "%cF", first = "%qCol";
  if (buf == "%po") {
    stride = "%cHSD", first = "%poD";
  } else if (s.groupHeads) {
    // Grouped heads: rows [qRow, qEnd) of q / o viewed as [T heads, D].
    rows = "%qEnd", stride = "%cD", first = "%c0";
  }
  return fmt::format(R"(    {n}_c = arith.addi {first}, {c} : index
    {n}_e = arith.addi {n}_c, %cW : index
    {n} = tile.make_block_ptr {b}, [{rows}, {n}_e], [{stride}, %c1], [%qRow, {n}_c] : !tile.ptr<f32> -> {bp}
)",
                     fmt::arg("n", name), fmt::arg("first", first), fmt::arg("c", col), fmt::arg("b", buf),
                     fmt::arg("rows", rows), fmt::arg("stride", stride), fmt::arg("bp", bp));
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
  } else if (pieceForm(s)) {
    // S = q K^T summed over the head-dim pieces (q read piece by piece: the
    // raw scores are scaled after), then O = O alpha + P V piece by piece in
    // the accumulator rows (%acc: o, or po with splits). K^T [W, N] and V
    // [N, W] pieces of the block; a full block's keys all exist, so its
    // loads need no bounds checks.
    const char* full = masked ? "" : " {in_bounds}";
    const int64_t W = s.headPiece, M = s.blockM, N = s.blockN;
    const std::string acc = s.kvSplits > 1 ? "%po" : "%o";
    // The next key block's K and V rows (the last block of the program's
    // share repeats itself) into the caches while this one computes: a
    // block is two runs of 16 rows at an unrelated place in the cache,
    // which the hardware prefetcher does not foresee.
    loadK = R"(    %nj0 = arith.addi %j, %cN : index
    %nlast = arith.subi %hi, %c1 : index
    %nj = arith.minsi %nj0, %nlast : index
)" + pagedRows("n", "%nj") + fmt::format(R"(    %nkp = tile.make_block_ptr %cache, [%cacheRows, %cD], [%cD, %c1], [%nkrow, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{N}x{D}xf32>>
    tile.prefetch %nkp : !tile.block_ptr<tensor<{N}x{D}xf32>>
    %nvp = tile.make_block_ptr %cache, [%cacheRows, %cD], [%cD, %c1], [%nvrow, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{N}x{D}xf32>>
    tile.prefetch %nvp : !tile.block_ptr<tensor<{N}x{D}xf32>>
)",
                        fmt::arg("N", N), fmt::arg("D", s.headDim));
    scores0 = fmt::format(R"(    %sraw = scf.for %d = %c0 to %cD step %cW iter_args(%sa = %zs) -> (tensor<{M}x{N}xf32>) {{
{qPtr}      %qd = tile.load %qdp : !tile.block_ptr<tensor<{M}x{W}xf32>>
      %dW = arith.addi %d, %cW : index
      %kdp = tile.make_block_ptr %cache, [%dW, %kend], [%c1, %cD], [%d, %krow] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{W}x{N}xf32>>
      %kd = tile.load %kdp{full} : !tile.block_ptr<tensor<{W}x{N}xf32>>
      %sn = tile.dot %qd, %kd, %sa : tensor<{M}x{W}xf32> * tensor<{W}x{N}xf32> -> tensor<{M}x{N}xf32>
      scf.yield %sn : tensor<{M}x{N}xf32>
    }}
    %s = arith.mulf %sraw, %ssc : tensor<{M}x{N}xf32>
)",
                          fmt::arg("M", M), fmt::arg("N", N), fmt::arg("W", W), fmt::arg("full", full),
                          fmt::arg("qPtr", pieceRows(s, "%q", "%qdp", "%d")));
    pv = fmt::format(R"(    scf.for %e = %c0 to %cD step %cW {{
{accPtr}      %ae0 = tile.load %aep : !tile.block_ptr<tensor<{M}x{W}xf32>>
      %aes = arith.mulf %ae0, %ab : tensor<{M}x{W}xf32>
      %eW = arith.addi %e, %cW : index
      %vep = tile.make_block_ptr %cache, [%vend, %eW], [%cD, %c1], [%vrow, %e] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{N}x{W}xf32>>
      %ve = tile.load %vep{full} : !tile.block_ptr<tensor<{N}x{W}xf32>>
      %aen = tile.dot %p, %ve, %aes{hint} : tensor<{M}x{N}xf32> * tensor<{N}x{W}xf32> -> tensor<{M}x{W}xf32>
      tile.store %aep, %aen : !tile.block_ptr<tensor<{M}x{W}xf32>>
    }}
)",
                     fmt::arg("M", M), fmt::arg("N", N), fmt::arg("W", W), fmt::arg("full", full), fmt::arg("hint", hint),
                     fmt::arg("accPtr", pieceRows(s, acc, "%aep", "%e")));
  } else if (s.storageDots) {
    // K^T and V straight from memory in the storage type (a full block's
    // keys all exist: no bounds checks); raw scores as the GPU form's.
    const char* full = masked ? "" : " {in_bounds}";
    loadK = fmt::format("    %kt = tile.load %kp{} : {}\n", full, st.blockPtr(kShape));
    loadV = fmt::format("    %vt = tile.load %vp{} : {}\n", full, st.blockPtr(vShape));
    scores0 = fmt::format("    %s = tile.dot %qt, %kt, %zs : {QT} * {KT} -> tensor<{M}x{N}xf32>\n",
                          fmt::arg("QT", st.tensor(fmt::format("{}x{}", s.blockM, s.headDim))),
                          fmt::arg("KT", st.tensor(kShape)), fmt::arg("M", s.blockM), fmt::arg("N", s.blockN));
    pv = fmt::format(R"(    %pb = tile.convert %p : tensor<{M}x{N}xf32> -> {PT}
    %accn = tile.dot %pb, %vt, %accs{hint} : {PT} * {VT} -> tensor<{M}x{D}xf32>
)",
                     fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim), fmt::arg("hint", hint),
                     fmt::arg("PT", st.tensor(fmt::format("{}x{}", s.blockM, s.blockN))), fmt::arg("VT", st.tensor(vShape)));
  } else {
    // A full block's keys all exist (the mask-free loop's blocks end at or
    // before the context): its loads need no bounds checks.
    const char* full = masked ? "" : " {in_bounds}";
    loadK = st.load("kt", "%kp", kShape, full);
    loadV = st.load("vt", "%vp", vShape, full);
    scores0 = fmt::format(
        "    %s = tile.dot %qs, %kt, %zs : tensor<{M}x{D}xf32> * tensor<{D}x{N}xf32> -> tensor<{M}x{N}xf32>\n",
        fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim));
    pv = fmt::format(
        "    %accn = tile.dot %p, %vt, %accs{hint} : tensor<{M}x{N}xf32> * tensor<{N}x{D}xf32> -> tensor<{M}x{D}xf32>\n",
        fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim), fmt::arg("hint", hint));
  }
  // m is kept in scaled units (scale > 0: max(c s) = c max(s)). The CPU form
  // scaled q; the GPU forms scale the raw max and the exponent's argument.
  std::string rowMax = fmt::format("    %mx = tile.reduce {} {{kind = \"max\", axis = 1 : i64}} : tensor<{}x{}xf32> -> tensor<{}xf32>\n",
                                   scores, s.blockM, s.blockN, s.blockM);
  std::string shifted = fmt::format("    %sd = arith.subf {}, %mb : tensor<{}x{}xf32>\n", scores, s.blockM, s.blockN);
  if (dotsOnStorage(s)) {
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
                       const std::string& p, const std::string& j, const char* keys, int64_t n) {
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
                 const std::string& afterCopies) {
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

}  // namespace strata::tile::attention
