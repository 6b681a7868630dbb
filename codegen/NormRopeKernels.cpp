#include "codegen/NormRopeKernels.h"

#include <tuple>

#include <fmt/format.h>

#include "codegen/StorageText.h"
#include "codegen/UArch.h"
#include "ops/error.h"

namespace strata::tile {

int64_t cpuRowBlockN(const std::string& target) { return 4 * uarchFor(target).vectorBytes / 4; }

namespace {

// The access attributes of a lane-linear kernel's in-bounds blocks whose
// lanes hold `v`-element vectors (aligned contiguous runs), and the
// function attribute that asks for them; v <= 1: in bounds only, none.
std::string laneVectorAccess(int64_t v) {
  return v > 1 ? fmt::format(" {{in_bounds, contiguous = 1 : i64, run = {} : i64}}", v) : " {in_bounds}";
}
std::string laneVectorAttr(int64_t v) { return v > 1 ? fmt::format(", tile.lane_vector = {} : i64", v) : ""; }

// The RoPE tables' row at token %t's position (%pos[%t], past the table's
// last row %P - 1 its last row) as [row] f32 tiles %cv and %sv, each of
// the G rows the same (a zero row stride). Uses %c0, %c1, %cG, %cHalf, %t,
// %pos, %cos, %sin and %P.
std::string ropeTableText(const std::string& row, const std::string& hint) {
  return fmt::format(R"(  %p0 = tile.block_lookup %pos[%t] : !tile.ptr<i64>
  %pLast = arith.subi %P, %c1 : index
  %p = arith.minui %p0, %pLast : index
  %tab = arith.muli %P, %cHalf : index
  %co = arith.muli %p, %cHalf : index
  %cp = tile.make_block_ptr %cos, [%cG, %tab], [%c0, %c1], [%c0, %co] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %sp = tile.make_block_ptr %sin, [%cG, %tab], [%c0, %c1], [%c0, %co] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %cv = tile.load %cp{hint} : !tile.block_ptr<tensor<{row}xf32>>
  %sv = tile.load %sp{hint} : !tile.block_ptr<tensor<{row}xf32>>
)",
                     fmt::arg("row", row), fmt::arg("hint", hint));
}

// Rotate-half: the f32 [row] halves %<x>1, %<x>2 by %cv, %sv into %<y>1 =
// x1 cos - x2 sin and %<y>2 = x2 cos + x1 sin (temporaries %<y>a .. %<y>e).
std::string ropeRotationText(const std::string& x, const std::string& y, const std::string& row) {
  return fmt::format(R"(  %{y}a = arith.mulf %{x}1, %cv : tensor<{row}xf32>
  %{y}b = arith.mulf %{x}2, %sv : tensor<{row}xf32>
  %{y}1 = arith.subf %{y}a, %{y}b : tensor<{row}xf32>
  %{y}d = arith.mulf %{x}2, %cv : tensor<{row}xf32>
  %{y}e = arith.mulf %{x}1, %sv : tensor<{row}xf32>
  %{y}2 = arith.addf %{y}d, %{y}e : tensor<{row}xf32>
)",
                     fmt::arg("x", x), fmt::arg("y", y), fmt::arg("row", row));
}

// Whole heads (RopeKernelSpec::wholeHeads): the tables' row at token %t's
// position as [row] = [G, D] f32 tiles %cv and %sv whose column j holds
// entry j mod half, and %first (columns below half). Uses %c0, %c1, %cG,
// %cHalf, %t, %pos, %cos, %sin and %P. The reads at column offsets past the
// row (or before the table) are checked; the select keeps only the right
// half of each.
std::string ropeWholeTableText(const std::string& row, int64_t half) {
  return fmt::format(R"(  %p0 = tile.block_lookup %pos[%t] : !tile.ptr<i64>
  %pLast = arith.subi %P, %c1 : index
  %p = arith.minui %p0, %pLast : index
  %tab = arith.muli %P, %cHalf : index
  %co = arith.muli %p, %cHalf : index
  %coM = arith.subi %co, %cHalf : index
  %cpA = tile.make_block_ptr %cos, [%cG, %tab], [%c0, %c1], [%c0, %co] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %cpB = tile.make_block_ptr %cos, [%cG, %tab], [%c0, %c1], [%c0, %coM] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %spA = tile.make_block_ptr %sin, [%cG, %tab], [%c0, %c1], [%c0, %co] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %spB = tile.make_block_ptr %sin, [%cG, %tab], [%c0, %c1], [%c0, %coM] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{row}xf32>>
  %cvA = tile.load %cpA : !tile.block_ptr<tensor<{row}xf32>>
  %cvB = tile.load %cpB : !tile.block_ptr<tensor<{row}xf32>>
  %svA = tile.load %spA : !tile.block_ptr<tensor<{row}xf32>>
  %svB = tile.load %spB : !tile.block_ptr<tensor<{row}xf32>>
  %cols = tile.iota %c0 {{axis = 1 : i64}} : tensor<{row}xf32>
  %halfCols = arith.constant dense<{half}.0> : tensor<{row}xf32>
  %first = arith.cmpf olt, %cols, %halfCols : tensor<{row}xf32>
  %cv = arith.select %first, %cvA, %cvB : tensor<{row}xi1>, tensor<{row}xf32>
  %sv = arith.select %first, %svA, %svB : tensor<{row}xi1>, tensor<{row}xf32>
)",
                     fmt::arg("row", row), fmt::arg("half", half));
}

// Whole heads: rows [r, r + G) of `buf` viewed as [rows, %cD] loaded as
// %<x>x (with `hint`) and at column offsets +half and -half as %<x>p and
// %<x>m (checked: they reach past the head), rotated into %<x>y. Uses %c0,
// %c1, %cD, %cHalf, %cmHalf, %first, %cv and %sv.
std::string ropeWholeRotationText(const StorageText& st, const std::string& x, const std::string& buf,
                                  const std::string& rows, const std::string& r, const std::string& row,
                                  const std::string& hint) {
  std::string text;
  for (const auto& [suffix, col, h] : {std::tuple{"x", "%c0", hint}, {"p", "%cHalf", ""}, {"m", "%cmHalf", ""}}) {
    const std::string name = x + suffix, ptr = "%" + name + "ptr";
    text += fmt::format("  {} = tile.make_block_ptr {}, [{}, %cD], [%cD, %c1], [{}, {}] : {} -> {}\n", ptr, buf, rows, r,
                        col, st.ptr(), st.blockPtr(row));
    text += st.load(name, ptr, row, h);
  }
  return text + fmt::format(R"(  %{x}a = arith.mulf %{x}x, %cv : tensor<{row}xf32>
  %{x}b = arith.mulf %{x}p, %sv : tensor<{row}xf32>
  %{x}c = arith.mulf %{x}m, %sv : tensor<{row}xf32>
  %{x}1 = arith.subf %{x}a, %{x}b : tensor<{row}xf32>
  %{x}2 = arith.addf %{x}a, %{x}c : tensor<{row}xf32>
  %{x}y = arith.select %first, %{x}1, %{x}2 : tensor<{row}xi1>, tensor<{row}xf32>
)",
                            fmt::arg("x", x), fmt::arg("row", row));
}

}  // namespace

std::string invStdText(const std::string& meanSq, const std::string& shape) {
  return fmt::format(R"(  %et = tile.splat %eps : f32 -> tensor<1xf32>
  %msq = arith.addf %{m}, %et : tensor<1xf32>
  %rt = math.sqrt %msq : tensor<1xf32>
  %one = arith.constant dense<1.0> : tensor<1xf32>
  %inv = arith.divf %one, %rt : tensor<1xf32>
  %ie = tile.expand_dims %inv {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %ib = tile.broadcast %ie : tensor<1x1xf32> -> tensor<{S}xf32>
)",
                     fmt::arg("m", meanSq), fmt::arg("S", shape));
}

RmsNormKernelSpec cpuRmsNormSpec(const std::string& target) {
  RmsNormKernelSpec s;
  s.blockN = cpuRowBlockN(target);
  return s;
}

std::string emitRmsNormKernel(const RmsNormKernelSpec& s) {
  if (s.blockN <= 0 || s.numWarps <= 0 || s.blockN % s.numWarps)
    fail("rms_norm kernel: block of {} columns over {} warps", s.blockN, s.numWarps);
  const int64_t V = s.laneVector;
  if (V > 1 && s.blockN % (32 * s.numWarps * V))
    fail("rms_norm kernel: lane vectors of {} elements must tile the block of {} columns over {} warps", V,
         s.blockN, s.numWarps);
  const StorageText st{s.dtype};
  st.check("rms_norm");
  const std::string row = fmt::format("1x{}", s.blockN);
  // The row's blocks [lo, hi): the sum of squares (`sq` from `acc0`, `p0`)
  // and the normalized row, with `attrs` on the accesses.
  auto squares = [&](const std::string& n, const char* lo, const char* hi, const std::string& acc0,
                     const std::string& p0, const std::string& attrs) {
    return fmt::format(R"(  %{n}:2 = scf.for %c = {lo} to {hi} step %cB iter_args(%acc = {acc0}, %p = {p0}) -> (tensor<1x{B}xf32>, !tile.block_ptr<tensor<1x{B}x{T}>>) {{
{loadV}    %v2 = arith.mulf %v, %v : tensor<1x{B}xf32>
    %a = arith.addf %acc, %v2 : tensor<1x{B}xf32>
    %pn = tile.advance %p, [%c0, %cB] : !tile.block_ptr<tensor<1x{B}x{T}>>
    scf.yield %a, %pn : tensor<1x{B}xf32>, !tile.block_ptr<tensor<1x{B}x{T}>>
  }}
)",
                       fmt::arg("n", n), fmt::arg("lo", lo), fmt::arg("hi", hi), fmt::arg("acc0", acc0),
                       fmt::arg("p0", p0), fmt::arg("B", s.blockN), fmt::arg("T", s.dtype),
                       fmt::arg("loadV", st.load("v", "%p", row, attrs)));
  };
  auto normalize = [&](const std::string& n, const char* lo, const char* hi, const std::string& p0,
                       const std::string& q0, const std::string& o0, const std::string& attrs) {
    return fmt::format(R"(  %{n}:3 = scf.for %c = {lo} to {hi} step %cB iter_args(%p = {p0}, %q = {q0}, %o = {o0}) -> (!tile.block_ptr<tensor<1x{B}x{T}>>, !tile.block_ptr<tensor<1x{B}x{T}>>, !tile.block_ptr<tensor<1x{B}x{T}>>) {{
{loadV}{loadW}    %n = arith.mulf %v, %ib : tensor<1x{B}xf32>
    %r = arith.mulf %n, %wv : tensor<1x{B}xf32>
{store}    %pn = tile.advance %p, [%c0, %cB] : !tile.block_ptr<tensor<1x{B}x{T}>>
    %qn = tile.advance %q, [%c0, %cB] : !tile.block_ptr<tensor<1x{B}x{T}>>
    %on = tile.advance %o, [%c0, %cB] : !tile.block_ptr<tensor<1x{B}x{T}>>
    scf.yield %pn, %qn, %on : !tile.block_ptr<tensor<1x{B}x{T}>>, !tile.block_ptr<tensor<1x{B}x{T}>>, !tile.block_ptr<tensor<1x{B}x{T}>>
  }}
)",
                       fmt::arg("n", n), fmt::arg("lo", lo), fmt::arg("hi", hi), fmt::arg("p0", p0),
                       fmt::arg("q0", q0), fmt::arg("o0", o0), fmt::arg("B", s.blockN), fmt::arg("T", s.dtype),
                       fmt::arg("loadV", st.load("v", "%p", row, attrs)), fmt::arg("loadW", st.load("wv", "%q", row, attrs)),
                       fmt::arg("store", st.store("%o", "%r", row, attrs)));
  };
  std::string sum, norm, split, lv;
  if (V > 1) {
    // Whole blocks in vectors when N is a multiple of V (rows then start
    // on whole vectors), the rest masked.
    const std::string vec = laneVectorAccess(V);
    split = fmt::format(R"(  %cV = arith.constant {V} : index
  %nvr = arith.remui %N, %cV : index
  %vecOK = arith.cmpi eq, %nvr, %c0 : index
  %nbl = arith.divui %N, %cB : index
  %nbc = arith.muli %nbl, %cB : index
  %nFull = arith.select %vecOK, %nbc, %c0 : index
)",
                        fmt::arg("V", V));
    sum = squares("sqv", "%c0", "%nFull", "%zero", "%xp", vec) + squares("sq", "%nFull", "%N", "%sqv#0", "%sqv#1", "");
    norm = normalize("outv", "%c0", "%nFull", "%xp", "%wp", "%yp", vec) +
           normalize("out", "%nFull", "%N", "%outv#0", "%outv#1", "%outv#2", "");
    lv = laneVectorAttr(V);
  } else {
    sum = squares("sq", "%c0", "%N", "%zero", "%xp", "");
    norm = normalize("out", "%c0", "%N", "%xp", "%wp", "%yp", "");
  }
  return fmt::format(R"(func.func @{name}(%x: !tile.ptr<{T}>, %w: !tile.ptr<{T}>, %y: !tile.ptr<{T}>, %R: index, %N: index, %eps: f32) attributes {{tile.num_warps = {W} : i64{lv}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
{split}  %row = tile.program_id 0
  %xp = tile.make_block_ptr %x, [%R, %N], [%N, %c1], [%row, %c0] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{B}x{T}>>
  %zero = arith.constant dense<0.0> : tensor<1x{B}xf32>
{sum}  %ss = tile.reduce %sq#0 {{kind = "sum", axis = 1 : i64}} : tensor<1x{B}xf32> -> tensor<1xf32>
  %ni = arith.index_cast %N : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %nt = tile.splat %nf : f32 -> tensor<1xf32>
  %mean = arith.divf %ss, %nt : tensor<1xf32>
{invStd}  %wp = tile.make_block_ptr %w, [%c1, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{B}x{T}>>
  %yp = tile.make_block_ptr %y, [%R, %N], [%N, %c1], [%row, %c0] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{B}x{T}>>
{norm}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("B", s.blockN), fmt::arg("T", s.dtype), fmt::arg("W", s.numWarps),
                     fmt::arg("lv", lv), fmt::arg("split", split), fmt::arg("sum", sum), fmt::arg("norm", norm),
                     fmt::arg("invStd", invStdText("mean", fmt::format("1x{}", s.blockN))));
}

std::string emitLayerNormKernel(const RmsNormKernelSpec& s) {
  if (s.blockN <= 0 || s.numWarps <= 0 || s.blockN % s.numWarps)
    fail("layer_norm kernel: block of {} columns over {} warps", s.blockN, s.numWarps);
  if (s.laneVector > 1) fail("layer_norm kernel: lane vectors are not supported");
  const StorageText st{s.dtype};
  st.check("layer_norm");
  const std::string row = fmt::format("1x{}", s.blockN), acc = fmt::format("tensor<1x{}xf32>", s.blockN),
                    bp = st.blockPtr(row);
  // A pass over the row's blocks accumulating `term` (of the loaded %v).
  auto pass = [&](const std::string& n, const std::string& term) {
    return fmt::format(R"(  %{n}:2 = scf.for %c = %c0 to %N step %cB iter_args(%acc = %zero, %p = %xp) -> ({A}, {BP}) {{
{load}{term}    %a = arith.addf %acc, %t : {A}
    %pn = tile.advance %p, [%c0, %cB] : {BP}
    scf.yield %a, %pn : {A}, {BP}
  }}
)",
                       fmt::arg("n", n), fmt::arg("A", acc), fmt::arg("BP", bp), fmt::arg("term", term),
                       fmt::arg("load", st.load("v", "%p", row, "")));
  };
  // Squared deviations of the row's columns only (the masked tail loads 0,
  // whose deviation is -mean).
  const std::string dev = fmt::format(
      "    %d = arith.subf %v, %mb : {A}\n    %d2 = arith.mulf %d, %d : {A}\n"
      "    %cols = tile.iota %c {{axis = 1 : i64}} : {A}\n    %in = arith.cmpf olt, %cols, %nb : {A}\n"
      "    %t = arith.select %in, %d2, %zero : tensor<1x{B}xi1>, {A}\n",
      fmt::arg("A", acc), fmt::arg("B", s.blockN));
  return fmt::format(R"(func.func @{name}(%x: {P}, %w: {P}, %b: {P}, %y: {P}, %R: index, %N: index, %eps: f32) attributes {{tile.num_warps = {W} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
  %row = tile.program_id 0
  %xp = tile.make_block_ptr %x, [%R, %N], [%N, %c1], [%row, %c0] : {P} -> {BP}
  %zero = arith.constant dense<0.0> : {A}
  %ni = arith.index_cast %N : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %nt = tile.splat %nf : f32 -> tensor<1xf32>
{sum}  %s = tile.reduce %sum#0 {{kind = "sum", axis = 1 : i64}} : {A} -> tensor<1xf32>
  %mean = arith.divf %s, %nt : tensor<1xf32>
  %me = tile.expand_dims %mean {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %mb = tile.broadcast %me : tensor<1x1xf32> -> {A}
  %nte = tile.expand_dims %nt {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %nb = tile.broadcast %nte : tensor<1x1xf32> -> {A}
{dev}  %dsum = tile.reduce %dev#0 {{kind = "sum", axis = 1 : i64}} : {A} -> tensor<1xf32>
  %var = arith.divf %dsum, %nt : tensor<1xf32>
{invStd}  %wp = tile.make_block_ptr %w, [%c1, %N], [%N, %c1], [%c0, %c0] : {P} -> {BP}
  %bp = tile.make_block_ptr %b, [%c1, %N], [%N, %c1], [%c0, %c0] : {P} -> {BP}
  %yp = tile.make_block_ptr %y, [%R, %N], [%N, %c1], [%row, %c0] : {P} -> {BP}
  %out:4 = scf.for %c = %c0 to %N step %cB iter_args(%p = %xp, %q = %wp, %r = %bp, %o = %yp) -> ({BP}, {BP}, {BP}, {BP}) {{
{loadV}{loadW}{loadB}    %d = arith.subf %v, %mb : {A}
    %n = arith.mulf %d, %ib : {A}
    %sc = arith.mulf %n, %wv : {A}
    %res = arith.addf %sc, %bv : {A}
{store}    %pn = tile.advance %p, [%c0, %cB] : {BP}
    %qn = tile.advance %q, [%c0, %cB] : {BP}
    %rn = tile.advance %r, [%c0, %cB] : {BP}
    %on = tile.advance %o, [%c0, %cB] : {BP}
    scf.yield %pn, %qn, %rn, %on : {BP}, {BP}, {BP}, {BP}
  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("P", st.ptr()), fmt::arg("BP", bp), fmt::arg("A", acc),
                     fmt::arg("B", s.blockN), fmt::arg("W", s.numWarps), fmt::arg("invStd", invStdText("var", fmt::format("1x{}", s.blockN))),
                     fmt::arg("sum", pass("sum", "    %t = arith.addf %v, %zero : " + acc + "\n")),
                     fmt::arg("dev", pass("dev", dev)), fmt::arg("loadV", st.load("v", "%p", row, "")),
                     fmt::arg("loadW", st.load("wv", "%q", row, "")), fmt::arg("loadB", st.load("bv", "%r", row, "")),
                     fmt::arg("store", st.store("%o", "%res", row, "")));
}

std::string emitRopeKernel(const RopeKernelSpec& s) {
  if (s.heads <= 0 || s.headDim <= 0 || s.headDim % 2)
    fail("rope kernel: {} heads of dim {} (needs an even head dim)", s.heads, s.headDim);
  if (s.headsPerProgram <= 0 || s.heads % s.headsPerProgram || s.kvHeads < 0 || s.kvHeads % s.headsPerProgram)
    fail("rope kernel: {} heads a program must divide the {} heads and {} KV heads", s.headsPerProgram, s.heads,
         s.kvHeads);
  const StorageText st{s.dtype};
  st.check("rope");
  const int64_t R = s.rotaryDim ? s.rotaryDim : s.headDim, half = R / 2, tail = s.headDim - R, G = s.headsPerProgram,
                V = s.laneVector;
  if (R <= 0 || R % 2 || R > s.headDim)
    fail("rope kernel: rotary dim {} must be even and within the head dim {}", R, s.headDim);
  if (V < 0 || (V > 1 && (half % V || tail % V)))
    fail("rope kernel: lane vectors of {} elements must divide the half rotary dim {} and the {} dims past it", V, half,
         tail);
  if (s.wholeHeads && R != s.headDim)
    fail("rope kernel: whole heads rotate every dim (rotary dim {} of head dim {})", R, s.headDim);
  const std::string row = fmt::format("{}x{}", G, half);
  // Rows of x lie inside [T heads, headDim] (the grid covers whole head
  // groups); a lane's vector of V elements is a contiguous, V-aligned run
  // of one row (x rows and the tables' rows start on whole vectors).
  const std::string hint = laneVectorAccess(V), laneVector = laneVectorAttr(V);
  // Partial rotary: the dims past R are copied (x's value, whether or not
  // y is x), in runs of the largest power of two (up to 64) dividing them,
  // widths every target splits evenly.
  int64_t run = 1;
  while (run < 64 && tail % (2 * run) == 0) run *= 2;
  const std::string tailRow = fmt::format("{}x{}", G, run);
  std::string passThrough;
  for (int64_t at = R, i = 0; at < s.headDim; at += run, ++i)
    passThrough += fmt::format(
        "  %cR{i} = arith.constant {at} : index\n"
        "  %xtp{i} = tile.make_block_ptr %x, [%rows, %cD], [%cD, %c1], [%r, %cR{i}] : {P} -> {TBP}\n"
        "{load}"
        "  %ytp{i} = tile.make_block_ptr %y, [%rows, %cD], [%cD, %c1], [%r, %cR{i}] : {P} -> {TBP}\n"
        "{store}",
        fmt::arg("i", i), fmt::arg("at", at), fmt::arg("P", st.ptr()), fmt::arg("TBP", st.blockPtr(tailRow)),
        fmt::arg("load", st.load(fmt::format("xt{}", i), fmt::format("%xtp{}", i), tailRow, hint)),
        fmt::arg("store", st.store(fmt::format("%ytp{}", i), fmt::format("%xt{}", i), tailRow, hint)));
  // Program (t, g) rotates heads [g G, g G + G) of token t: row r of x
  // viewed as [rows, headDim]. With KV heads, the groups past the q heads
  // are token t's k heads, which start at row kAt (>= T heads: the q rows
  // may be followed by padding).
  const std::string rowsOf =
      s.kvHeads == 0
          ? "  %rows = arith.muli %T, %cH : index\n"
            "  %rt = arith.muli %t, %cH : index\n"
            "  %rg = arith.muli %g, %cG : index\n"
            "  %r = arith.addi %rt, %rg : index\n"
          : fmt::format("  %cK = arith.constant {K} : index\n"
                        "  %kAll = arith.muli %T, %cK : index\n"
                        "  %rows = arith.addi %kAt, %kAll : index\n"
                        "  %rg = arith.muli %g, %cG : index\n"
                        "  %rt = arith.muli %t, %cH : index\n"
                        "  %rq = arith.addi %rt, %rg : index\n"
                        "  %kt = arith.muli %t, %cK : index\n"
                        "  %kg = arith.subi %rg, %cH : index\n"
                        "  %k0 = arith.addi %kAt, %kt : index\n"
                        "  %rk = arith.addi %k0, %kg : index\n"
                        "  %isK = arith.cmpi uge, %rg, %cH : index\n"
                        "  %r = arith.select %isK, %rk, %rq : index\n",
                        fmt::arg("K", s.kvHeads));
  // The rotated dims: halves [G, half] (x1, x2 into y1, y2), or whole heads.
  std::string table, rotate;
  if (s.wholeHeads) {
    const std::string whole = fmt::format("{}x{}", G, s.headDim);
    table = ropeWholeTableText(whole, half);
    rotate = "  %cmHalf = arith.subi %c0, %cHalf : index\n" +
             ropeWholeRotationText(st, "x", "%x", "%rows", "%r", whole, hint) +
             fmt::format("  %yp = tile.make_block_ptr %y, [%rows, %cD], [%cD, %c1], [%r, %c0] : {} -> {}\n", st.ptr(),
                         st.blockPtr(whole)) +
             st.store("%yp", "%xy", whole, hint);
  } else {
    table = ropeTableText(row, hint);
    auto ptr = [&](const char* name, const char* buf, const char* col) {
      return fmt::format("  %{} = tile.make_block_ptr {}, [%rows, %cD], [%cD, %c1], [%r, {}] : {} -> {}\n", name, buf, col,
                         st.ptr(), st.blockPtr(row));
    };
    rotate = ptr("x1p", "%x", "%c0") + ptr("x2p", "%x", "%cHalf") + st.load("x1", "%x1p", row, hint) +
             st.load("x2", "%x2p", row, hint) + ropeRotationText("x", "y", row) + ptr("y1p", "%y", "%c0") +
             ptr("y2p", "%y", "%cHalf") + st.store("%y1p", "%y1", row, hint) + st.store("%y2p", "%y2", row, hint);
  }
  return fmt::format(R"(func.func @{name}(%x: {P}, %y: {P}, %cos: !tile.ptr<f32>, %sin: !tile.ptr<f32>, %pos: !tile.ptr<i64>, %T: index, %P: index{kAtArg}) attributes {{tile.num_warps = 1 : i64{lv}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cG = arith.constant {G} : index
  %cHalf = arith.constant {half} : index
  %t = tile.program_id 0
  %g = tile.program_id 1
{table}{rowsOf}{rotate}{passThrough}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("D", s.headDim), fmt::arg("H", s.heads), fmt::arg("G", G),
                     fmt::arg("half", half), fmt::arg("lv", laneVector), fmt::arg("rowsOf", rowsOf),
                     fmt::arg("kAtArg", s.kvHeads ? ", %kAt: index" : ""), fmt::arg("passThrough", passThrough),
                     fmt::arg("P", st.ptr()), fmt::arg("table", table), fmt::arg("rotate", rotate));
}

std::string emitRopeKvWriteKernel(const RopeKvWriteKernelSpec& s) {
  const int64_t D = s.headDim, half = D / 2, G = s.headsPerProgram, V = s.laneVector;
  if (s.heads <= 0 || s.kvHeads <= 0 || D <= 0 || D % 2 || s.pageSize <= 0)
    fail("rope_kv_write kernel: {} heads, {} KV heads of dim {} (even), pages of {}", s.heads, s.kvHeads, D, s.pageSize);
  if (G <= 0 || s.heads % G || s.kvHeads % G)
    fail("rope_kv_write kernel: {} heads a program must divide the {} heads and {} KV heads", G, s.heads, s.kvHeads);
  if (V < 0 || (V > 1 && half % V))
    fail("rope_kv_write kernel: lane vectors of {} elements must divide the half head dim {}", V, half);
  const StorageText st{s.dtype};
  st.check("rope_kv_write");
  const std::string row = fmt::format("{}x{}", G, half), full = fmt::format("{}x{}", G, D);
  const std::string hint = laneVectorAccess(V);
  // A [G, cols] block pointer named %<name> into `buf` viewed as [rows,
  // width] with row stride `stride`, at (r, c).
  auto ptr = [&](const std::string& name, const char* buf, const char* rows, const char* width, const char* stride,
                 const std::string& r, const std::string& c, const std::string& shape) {
    return fmt::format("    %{n} = tile.make_block_ptr {b}, [{rows}, {w}], [{st}, %c1], [{r}, {c}] : {P} -> {BP}\n",
                       fmt::arg("n", name), fmt::arg("b", buf), fmt::arg("rows", rows), fmt::arg("w", width),
                       fmt::arg("st", stride), fmt::arg("r", r), fmt::arg("c", c), fmt::arg("P", st.ptr()),
                       fmt::arg("BP", st.blockPtr(shape)));
  };
  // k program: KV heads h0 .. h0 + G of token t. Cache row (block, 0|1,
  // head) of the [blocks 2 kvHeads, pageSize headDim] view, column off D:
  // consecutive heads are one row apart there.
  std::string kPath = R"(    %h0 = arith.subi %rg, %cH : index
    %slot = tile.block_lookup %slots[%t] : !tile.ptr<i64>
    %blk = arith.divui %slot, %cBS : index
    %off = arith.remui %slot, %cBS : index
    %kt = arith.muli %t, %cK : index
    %kr = arith.addi %kt, %h0 : index
    %b2 = arith.muli %blk, %c2 : index
    %b2k = arith.muli %b2, %cK : index
    %crk = arith.addi %b2k, %h0 : index
    %crv = arith.addi %crk, %cK : index
    %cc1 = arith.muli %off, %cD : index
    %cc2 = arith.addi %cc1, %cHalf : index
    %crows = arith.muli %CB, %c2 : index
    %crowsK = arith.muli %crows, %cK : index
    %kRows = arith.muli %T, %cK : index
)";
  if (s.wholeHeads) {
    kPath += ropeWholeRotationText(st, "k", "%k", "%kRows", "%kr", full, hint) +
             ptr("ckp", "%cache", "%crowsK", "%cPD", "%cPD", "%crk", "%cc1", full) + st.store("%ckp", "%ky", full, hint);
  } else {
    kPath += ptr("k1p", "%k", "%kRows", "%cD", "%cD", "%kr", "%c0", row) +
             ptr("k2p", "%k", "%kRows", "%cD", "%cD", "%kr", "%cHalf", row);
    kPath += st.load("k1", "%k1p", row, hint) + st.load("k2", "%k2p", row, hint) + ropeRotationText("k", "ky", row);
    kPath += ptr("ck1", "%cache", "%crowsK", "%cPD", "%cPD", "%crk", "%cc1", row) +
             ptr("ck2", "%cache", "%crowsK", "%cPD", "%cPD", "%crk", "%cc2", row);
    kPath += st.store("%ck1", "%ky1", row, hint) + st.store("%ck2", "%ky2", row, hint);
  }
  kPath += ptr("vp", "%v", "%kRows", "%cD", "%cD", "%kr", "%c0", full) +
           ptr("cvp", "%cache", "%crowsK", "%cPD", "%cPD", "%crv", "%cc1", full);
  kPath += st.load("vx", "%vp", full, hint) + st.store("%cvp", "%vx", full, hint);
  // q program: heads rg .. rg + G of token t, into y.
  std::string qPath = R"(    %qt = arith.muli %t, %cH : index
    %qr = arith.addi %qt, %rg : index
    %qRows = arith.muli %T, %cH : index
)";
  if (s.wholeHeads) {
    qPath += ropeWholeRotationText(st, "q", "%q", "%qRows", "%qr", full, hint) +
             ptr("yp", "%y", "%qRows", "%cD", "%cD", "%qr", "%c0", full) + st.store("%yp", "%qy", full, hint);
  } else {
    qPath += ptr("q1p", "%q", "%qRows", "%cD", "%cD", "%qr", "%c0", row) +
             ptr("q2p", "%q", "%qRows", "%cD", "%cD", "%qr", "%cHalf", row);
    qPath += st.load("q1", "%q1p", row, hint) + st.load("q2", "%q2p", row, hint) + ropeRotationText("q", "qy", row);
    qPath += ptr("y1p", "%y", "%qRows", "%cD", "%cD", "%qr", "%c0", row) +
             ptr("y2p", "%y", "%qRows", "%cD", "%cD", "%qr", "%cHalf", row);
    qPath += st.store("%y1p", "%qy1", row, hint) + st.store("%y2p", "%qy2", row, hint);
  }
  return fmt::format(R"(func.func @{name}(%q: {P}, %k: {P}, %v: {P}, %y: {P}, %cache: {P}, %cos: !tile.ptr<f32>, %sin: !tile.ptr<f32>, %pos: !tile.ptr<i64>, %slots: !tile.ptr<i64>, %T: index, %P: index, %CB: index) attributes {{tile.num_warps = 1 : i64{lv}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cK = arith.constant {K} : index
  %cG = arith.constant {G} : index
  %cHalf = arith.constant {half} : index
  %cBS = arith.constant {BS} : index
  %cPD = arith.constant {PD} : index
  %t = tile.program_id 0
  %g = tile.program_id 1
{table}{mHalf}  %rg = arith.muli %g, %cG : index
  %isK = arith.cmpi uge, %rg, %cH : index
  scf.if %isK {{
{kPath}  }} else {{
{qPath}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("P", st.ptr()), fmt::arg("lv", laneVectorAttr(V)),
                     fmt::arg("D", D), fmt::arg("H", s.heads), fmt::arg("K", s.kvHeads), fmt::arg("G", G),
                     fmt::arg("half", half), fmt::arg("BS", s.pageSize), fmt::arg("PD", s.pageSize * D),
                     fmt::arg("table", s.wholeHeads ? ropeWholeTableText(full, half) : ropeTableText(row, hint)),
                     fmt::arg("mHalf", s.wholeHeads ? "  %cmHalf = arith.subi %c0, %cHalf : index\n" : ""),
                     fmt::arg("kPath", kPath), fmt::arg("qPath", qPath));
}

}  // namespace strata::tile
