#include "codegen/AttentionKernel.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

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

// Rows that may see no key in a program (m stays -inf there): with a key
// mask, or when the keys are split and a row's causal range ends before this
// program's share. Such kernels guard exp2 against -inf - -inf.
bool rowsMaySeeNothing(const AttentionKernelSpec& s) { return s.keyMask || s.kvSplits > 1; }

// Text of one key-block step: loads K^T and V through %kp / %vp (built by
// the caller's prologue), S, optional masks, online softmax, O += P V.
std::string stepBody(const AttentionKernelSpec& s, bool masked) {
  std::string mask;
  std::string scores = "%s";
  if (masked) {
    mask += fmt::format("    %sm = tile.mask %s, [%pos0, %j], %ctx{} : tensor<{}x{}xf32>\n",
                        s.causal ? " {causal}" : "", s.blockM, s.blockN);
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
  // detector would split the keys: the paper's decode layout).
  std::string hint = s.paged ? " {tiling = \"horizontal\"}" : "";
  const StorageText st{s.dtype};
  return fmt::format(R"({loadK}    %s = tile.dot %qs, %kt, %zs : tensor<{M}x{D}xf32> * tensor<{D}x{N}xf32> -> tensor<{M}x{N}xf32>
{mask}    %mx = tile.reduce {sc} {{kind = "max", axis = 1 : i64}} : tensor<{M}x{N}xf32> -> tensor<{M}xf32>
    %mn = arith.maximumf %m, %mx : tensor<{M}xf32>
{safe}    %me = tile.expand_dims {ms} {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
    %mb = tile.broadcast %me : tensor<{M}x1xf32> -> tensor<{M}x{N}xf32>
    %sd = arith.subf {sc}, %mb : tensor<{M}x{N}xf32>
    %p = math.exp2 %sd : tensor<{M}x{N}xf32>
    %ps = tile.reduce %p {{kind = "sum", axis = 1 : i64}} : tensor<{M}x{N}xf32> -> tensor<{M}xf32>
    %md = arith.subf %m, {ms} : tensor<{M}xf32>
    %alpha = math.exp2 %md : tensor<{M}xf32>
    %la = arith.mulf %l, %alpha : tensor<{M}xf32>
    %ln = arith.addf %la, %ps : tensor<{M}xf32>
    %ae = tile.expand_dims %alpha {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
    %ab = tile.broadcast %ae : tensor<{M}x1xf32> -> tensor<{M}x{D}xf32>
    %accs = arith.mulf %acc, %ab : tensor<{M}x{D}xf32>
{loadV}    %accn = tile.dot %p, %vt, %accs{hint} : tensor<{M}x{N}xf32> * tensor<{N}x{D}xf32> -> tensor<{M}x{D}xf32>
    scf.yield %accn, %mn, %ln : tensor<{M}x{D}xf32>, tensor<{M}xf32>, tensor<{M}xf32>
)",
                     fmt::arg("M", s.blockM), fmt::arg("N", s.blockN), fmt::arg("D", s.headDim),
                     fmt::arg("mask", mask), fmt::arg("sc", scores), fmt::arg("safe", safeMax), fmt::arg("ms", ms),
                     fmt::arg("hint", hint), fmt::arg("loadK", st.load("kt", "%kp", fmt::format("{}x{}", s.headDim, s.blockN))),
                     fmt::arg("loadV", st.load("vt", "%vp", fmt::format("{}x{}", s.blockN, s.headDim))));
}

// K^T [D, N] and V [N, D] block pointers of the key block at %j, for rows
// %krow.. / %vrow.. of a [rows, D] view, limited to %valid keys (so keys past
// the context read as zero: P V never touches stale cache rows).
// `clamp` (a value name or "") caps the row ends at the buffer's rows.
std::string kvPointers(const AttentionKernelSpec& s, const char* kBuf, const char* vBuf, const char* clamp) {
  std::string ends = *clamp ? fmt::format(R"(    %kend0 = arith.addi %krow, %valid : index
    %vend0 = arith.addi %vrow, %valid : index
    %kend = arith.minsi %kend0, {0} : index
    %vend = arith.minsi %vend0, {0} : index
)",
                                          clamp)
                            : R"(    %kend = arith.addi %krow, %valid : index
    %vend = arith.addi %vrow, %valid : index
)";
  return fmt::format(R"(    %vleft = arith.subi %ctx, %j : index
    %valid = arith.minsi %vleft, %cN : index
{ends}    %kp = tile.make_block_ptr {kb}, [%cD, %kend], [%c1, %cD], [%c0, %krow] : {P} -> !tile.block_ptr<tensor<{D}x{N}x{T}>>
    %vp = tile.make_block_ptr {vb}, [%vend, %cD], [%cD, %c1], [%vrow, %c0] : {P} -> !tile.block_ptr<tensor<{N}x{D}x{T}>>
)",
                     fmt::arg("ends", ends), fmt::arg("kb", kBuf), fmt::arg("vb", vBuf), fmt::arg("N", s.blockN),
                     fmt::arg("D", s.headDim), fmt::arg("T", s.dtype), fmt::arg("P", StorageText{s.dtype}.ptr()));
}

// A loop over key blocks [from, to) carrying (acc, m, l) from `inits`.
std::string loop(const AttentionKernelSpec& s, const std::string& kvRows, bool masked, const char* from,
                 const char* to, const std::array<std::string, 3>& inits, const char* result) {
  return fmt::format(R"(  {res}:3 = scf.for %j = {from} to {to} step %cN iter_args(%acc = {i0}, %m = {i1}, %l = {i2}) -> (tensor<{M}x{D}xf32>, tensor<{M}xf32>, tensor<{M}xf32>) {{
{rows}{body}  }}
)",
                     fmt::arg("res", result), fmt::arg("from", from), fmt::arg("to", to), fmt::arg("i0", inits[0]),
                     fmt::arg("i1", inits[1]), fmt::arg("i2", inits[2]), fmt::arg("M", s.blockM), fmt::arg("D", s.headDim),
                     fmt::arg("rows", kvRows), fmt::arg("body", stepBody(s, masked)));
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
  const std::string P = st.ptr(), qo = fmt::format("{}x{}", M, D);
  std::string args, prologue, kvRows;
  if (s.paged) {
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
  %qp = tile.make_block_ptr %q, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {P} -> {BP}
{oPtr}  %tableRow = arith.muli %n, %maxBlocks : index
)",
                           fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)),
                           fmt::arg("oPtr", s.kvSplits > 1 ? std::string()
                                                           : fmt::format("  %op = tile.make_block_ptr %o, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {} -> {}\n", P, st.blockPtr(qo))));
    // Cache rows of (physical block, kv head): K at ((blk * 2) * Hk + kh) * N,
    // V Hk * N rows further.
    kvRows = fmt::format(R"(    %lblk = arith.divui %j, %cN : index
    %ti = arith.addi %tableRow, %lblk : index
    %blk = tile.block_lookup %tables[%ti] : !tile.ptr<i64>
    %b2 = arith.muli %blk, %c2Hk : index
    %b3 = arith.addi %b2, %kh : index
    %krow = arith.muli %b3, %cN : index
    %vrow = arith.addi %krow, %cHkN : index
)") + kvPointers(s, "%cache", "%cache", "%cacheRows");
  } else {
    args = fmt::format("%q: {0}, %k: {0}, %v: {0}, ", P) + (s.keyMask ? "%mask: !tile.ptr<f32>, " : "") + "%o: " + P +
           ", %S: index, %T: index";
    prologue = fmt::format(R"(  %b = tile.program_id 2
  %B = arith.addi %b, %c1 : index
  %qLen = arith.addi %S, %c0 : index
  %ctx = arith.addi %T, %c0 : index
  %bh = arith.muli %b, %cH : index
  %bhq = arith.addi %bh, %h : index
  %qBase = arith.muli %bhq, %S : index
  %qRow = arith.addi %qBase, %r0 : index
  %qEnd = arith.addi %qBase, %S : index
  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %bk = arith.muli %b, %cHk : index
  %bkh = arith.addi %bk, %kh : index
  %kvBase = arith.muli %bkh, %T : index
)",
                           fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)));
    kvRows = std::string(R"(    %krow = arith.addi %kvBase, %j : index
    %vrow = arith.addi %kvBase, %j : index
)") + kvPointers(s, "%k", "%v", "");
  }

  // Keys [0, fullEnd) are visible to every row of the block (mask-free
  // loop); [fullEnd, kvEnd) need masks. Rows past q_len only exist to fill
  // the tile: they are never stored, and an idle program (no rows) runs no
  // key block at all.
  std::string bounds;
  if (s.causal)
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
  // Without splits: O = acc / l (with a key mask, rows that saw no key give
  // 0), one store. With splits: the unnormalized partial results.
  std::string epilogue;
  if (s.kvSplits > 1)
    // acc [BM, D], m and l [BM, 1] of this split.
    epilogue = fmt::format(R"(  %poCol0 = arith.muli %h, %cS : index
  %poCol = arith.addi %poCol0, %sid : index
  %poColEnd = arith.addi %poCol, %c1 : index
  %poD = arith.muli %poCol, %cD : index
  %poDEnd = arith.addi %poD, %cD : index
  %cHSD = arith.constant {HSD} : index
  %cHS = arith.constant {HS} : index
  %pop = tile.make_block_ptr %po, [%s1, %poDEnd], [%cHSD, %c1], [%qRow, %poD] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x{D}xf32>>
  tile.store %pop, %r2#0 : !tile.block_ptr<tensor<{M}x{D}xf32>>
  %me2 = tile.expand_dims %r2#1 {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %pmp = tile.make_block_ptr %pm, [%s1, %poColEnd], [%cHS, %c1], [%qRow, %poCol] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %pmp, %me2 : !tile.block_ptr<tensor<{M}x1xf32>>
  %le2 = tile.expand_dims %r2#2 {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %plp = tile.make_block_ptr %pl, [%s1, %poColEnd], [%cHS, %c1], [%qRow, %poCol] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %plp, %le2 : !tile.block_ptr<tensor<{M}x1xf32>>
)",
                           fmt::arg("M", M), fmt::arg("D", D), fmt::arg("HSD", s.heads * s.kvSplits * D),
                           fmt::arg("HS", s.heads * s.kvSplits));
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
  else
    epilogue = fmt::format(R"(  %le = tile.expand_dims %r2#2 {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %lb = tile.broadcast %le : tensor<{M}x1xf32> -> tensor<{M}x{D}xf32>
  %out = arith.divf %r2#0, %lb : tensor<{M}x{D}xf32>
)",
                           fmt::arg("M", M), fmt::arg("D", D));
  if (s.kvSplits == 1) epilogue += st.store("%op", "%out", qo);

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
  %perSplit0 = arith.addi %kvBlocks, %cS : index
  %perSplit1 = arith.subi %perSplit0, %c1 : index
  %perSplit = arith.divui %perSplit1, %cS : index
  %chunk = arith.muli %perSplit, %cN : index
  %lo0 = arith.muli %sid, %chunk : index
  %lo = arith.minsi %lo0, %kvEnd : index
  %hi0 = arith.addi %lo, %chunk : index
  %hi = arith.minsi %hi0, %kvEnd : index
  %fe0 = arith.minsi %fullEnd, %hi : index
  %fe = arith.maxsi %lo, %fe0 : index
)";
  const double log2e = 1.4426950408889634;
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = 1 : i64}} {{
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
  %cS = arith.constant {S} : index
  %qb = arith.divui %pid0, %cS : index
  %sid = arith.remui %pid0, %cS : index
  %h = tile.program_id 1
  %r0 = arith.muli %qb, %cM : index
  %kh = arith.divui %h, %cG : index
{prologue}  %left = arith.subi %qLen, %r0 : index
  %left0 = arith.maxsi %left, %c0 : index
  %active = arith.minsi %left0, %cM : index
  %hasRows = arith.cmpi sgt, %active, %c0 : index
  %past = arith.subi %ctx, %qLen : index
  %pos0 = arith.addi %past, %r0 : index
{bounds}  %kvEnd = arith.select %hasRows, %kvEnd0, %c0 : index
{fullEnd}{range}{loadQ}  %qsc = arith.constant dense<{qscale:.9e}> : tensor<{M}x{D}xf32>
  %qs = arith.mulf %qt, %qsc : tensor<{M}x{D}xf32>
  %zs = arith.constant dense<0.0> : tensor<{M}x{N}xf32>
{maskConsts}  %acc0 = arith.constant dense<0.0> : tensor<{M}x{D}xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<{M}xf32>
  %l0 = arith.constant dense<0.0> : tensor<{M}xf32>
{fullLoop}{maskedLoop}{epilogue}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("M", M), fmt::arg("N", N),
                     fmt::arg("D", D), fmt::arg("F", s.heads * D), fmt::arg("G", s.heads / s.kvHeads),
                     fmt::arg("H", s.heads), fmt::arg("Hk", s.kvHeads), fmt::arg("Hk2", 2 * s.kvHeads),
                     fmt::arg("HkN", s.kvHeads * N), fmt::arg("prologue", prologue), fmt::arg("bounds", bounds),
                     fmt::arg("fullEnd", fullEnd), fmt::arg("qscale", s.scale * log2e),
                     fmt::arg("fullLoop", loop(s, kvRows, false, "%lo", "%fe", {"%acc0", "%m0", "%l0"}, "%r1")),
                     fmt::arg("maskedLoop", loop(s, kvRows, true, "%fe", "%hi", {"%r1#0", "%r1#1", "%r1#2"}, "%r2")),
                     fmt::arg("epilogue", epilogue), fmt::arg("maskConsts", maskConsts), fmt::arg("S", s.kvSplits),
                     fmt::arg("range", range), fmt::arg("loadQ", st.load("qt", "%qp", qo)));
}

std::string emitAttentionCombineKernel(const AttentionKernelSpec& s) {
  if (s.kvSplits < 2 || s.heads <= 0 || s.headDim <= 0) fail("attention combine kernel: needs >= 2 KV splits");
  const StorageText st{s.dtype};
  st.check("attention combine");
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
