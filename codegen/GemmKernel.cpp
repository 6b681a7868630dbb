#include "codegen/GemmKernel.h"

#include <cstdio>

#include <fmt/format.h>

#include <vector>

#include "codegen/UArch.h"
#include "ops/error.h"

namespace strata::tile {

GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows) {
  const UArch& u = uarchFor(target);
  GemmKernelSpec s;
  s.weightsNK = weightsNK;
  s.packedB = true;
  s.numWarps = 1;
  // 6 rows x 4 vector registers: 24 accumulators, B's 4 vectors and a
  // broadcast A scalar fit the 32 AVX-512 registers; AVX2's 16 take 6 x 2
  // (12 + 2 + 1, by register count: no AVX2-only machine measured).
  // K steps of 4. Measured 2026-11-21 on the dev Xeon, 128x2048x2048, one
  // thread: [K, N] weights read in place 13-20 GFLOP/s (rows 8 KiB apart
  // alias in L1 and defeat the prefetchers); panel-packed 56-72 (K step 1:
  // 38-58, 8: 31-65). Warps on the CPU run one after another and would each
  // re-read B, so one warp.
  s.blockN = (u.vectorBytes >= 64 ? 4 : 2) * u.vectorBytes / 4;
  s.blockK = 4;
  s.blockM = rows <= 1 ? 1 : 6;
  s.name = rows <= 1 ? "gemv" : "gemm";
  return s;
}

GemmKernelSpec cudaGemmSpec(const std::string& dtype, bool weightsNK, int64_t rows) {
  GemmKernelSpec s;
  s.dtype = dtype;
  s.weightsNK = weightsNK;
  s.tiling = "";  // assign-layouts' square warp grid
  // Measured on the H200 (docs/cuda.md, 2026-11-21 sweep of 7 blockings):
  // smaller blocks win while every lane loads its fragments from global
  // memory itself — more CTAs in flight hide more load latency.
  if (rows <= 16) {
    s.blockM = 16, s.blockN = 32, s.blockK = 64, s.numWarps = 2;
    s.tiling = "vertical";  // warps side by side along N: each keeps all 16 rows
  } else {
    s.blockM = 64, s.blockN = 128, s.blockK = 32, s.numWarps = 4;
  }
  return s;
}

void applyBlocking(GemmKernelSpec& s, const GemmBlocking& b) {
  s.blockM = b.m, s.blockN = b.n, s.blockK = b.k, s.numWarps = b.warps;
  s.tiling = b.m <= 16 ? "vertical" : "";
}

GemmBlocking parseGemmBlocking(const std::string& text, const std::string& what) {
  GemmBlocking b;
  char x1 = 0, x2 = 0, x3 = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%ld%c%ld%c%ld%c%ld%n", &b.m, &x1, &b.n, &x2, &b.k, &x3, &b.warps, &used) != 7 ||
      x1 != 'x' || x2 != 'x' || x3 != 'x' || used != (int)text.size())
    fail("{} '{}': expected MxNxKxW (block M, N, K and warps), e.g. 16x64x32x4", what, text);
  bool pow2 = b.warps > 0 && (b.warps & (b.warps - 1)) == 0;
  bool rowsOk = b.m >= 16 && b.m % 16 == 0, kOk = b.k >= 16 && b.k % 16 == 0;
  bool splitOk = pow2 && (b.m > 16 || b.n % (8 * b.warps) == 0);
  if (!rowsOk || !kOk || !pow2 || b.warps > 32 || !splitOk)
    fail("{} '{}': M and K must be multiples of 16 and warps a power of two up to 32 (with M = 16, splitting N into "
         "8-column warp tiles)", what, text);
  return b;
}

namespace {

// Text pieces of one GEMM kernel; `ib` is " {in_bounds}" on the fast path.
struct GemmText {
  const GemmKernelSpec& s;
  std::string aT, bT, cT, aP, bP, hint;
  std::string cS;  // the C block in the storage type

  // `in` (a tile of storage type `from`) in f32 (type `to`): appends the
  // convert to `e` and returns its name; f32 storage needs none.
  std::string widen(std::string& e, const std::string& name, const std::string& in, const std::string& from,
                    const std::string& to) const {
    if (s.dtype == "f32") return in;
    e += fmt::format("    %{} = tile.convert {} : {} -> {}\n", name, in, from, to);
    return "%" + name;
  }

  // The attributes of a fast-path (`ib` non-empty) operand load: with 16-bit
  // storage and K even (the fast path's condition then), the K dim `kDim`
  // of A ([M, K], 1) and of [N, K] weights viewed as [K, N] (0) is
  // contiguous in pairs — tile.load's `contiguous` promise. kDim -1: none.
  std::string loadAttrs(const char* ib, int kDim) const {
    if (!*ib || kDim < 0 || !sixteenBit()) return ib;
    return fmt::format(" {{in_bounds, contiguous = {} : i64}}", kDim);
  }
  bool sixteenBit() const { return s.dtype == "f16" || s.dtype == "bf16"; }

  // A K loop over [from, to) starting from the accumulators `inits`
  // (and block pointers `ptrs`); its results are `res`#0.. . `ib` marks the
  // loads in bounds, `bIb` B's alone (packed panels are whole up to K).
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, const char* ib, const char* bIb) const {
    std::string iterArgs = fmt::format("%acc = {}, %pa = {}, %pb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP;
    std::string aib = loadAttrs(ib, 1), bib = loadAttrs(bIb, s.weightsNK && !s.packedB ? 0 : -1);
    std::string body = fmt::format(R"(    %x = tile.load %pa{aib} : {aP}
    %y = tile.load %pb{bib} : {bP}
    %d = tile.dot %x, %y, %acc{hint} : {aT} * {bT} -> {cT}
    %na = tile.advance %pa, [%c0, %bk] : {aP}
    %nb = tile.advance %pb, [%bk, %c0] : {bP}
)",
                                   fmt::arg("aib", aib), fmt::arg("bib", bib), fmt::arg("aP", aP), fmt::arg("bP", bP),
                                   fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT), fmt::arg("hint", hint));
    std::string yields = "%d, %na, %nb";
    int n = 3;
    if (s.swiglu) {
      iterArgs += fmt::format(", %acc2 = {}, %pb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      body += fmt::format(R"(    %y2 = tile.load %pb2{ib} : {bP}
    %d2 = tile.dot %x, %y2, %acc2 : {aT} * {bT} -> {cT}
    %nb2 = tile.advance %pb2, [%bk, %c0] : {bP}
)",
                          fmt::arg("ib", bib), fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT),
                          fmt::arg("cT", cT));
      yields += ", %d2, %nb2";
      n = 5;
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %bk iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, n, from, to, iterArgs, types, body, yields, types);
  }

  // Bias / SwiGLU / residual on the accumulators `acc` (and `acc2`), then
  // the store. Names are prefixed with `p` (one set per path).
  std::string epilogue(const std::string& p, const std::string& acc, const std::string& acc2, const char* ib) const {
    std::string e, out = acc;
    auto addBias = [&](const char* buf, const std::string& in, const std::string& o) {
      e += fmt::format(R"(    %{o}p = tile.make_block_ptr {buf}, [%N], [%c1], [%col] : !tile.ptr<{dt}> -> !tile.block_ptr<tensor<{N}x{dt}>>
    %{o}v = tile.load %{o}p{ib} : !tile.block_ptr<tensor<{N}x{dt}>>
)",
                       fmt::arg("o", o), fmt::arg("buf", buf), fmt::arg("N", s.blockN), fmt::arg("dt", s.dtype),
                       fmt::arg("ib", ib));
      std::string v = widen(e, o + "w", "%" + o + "v", fmt::format("tensor<{}x{}>", s.blockN, s.dtype),
                            fmt::format("tensor<{}xf32>", s.blockN));
      e += fmt::format(R"(    %{o}e = tile.expand_dims {v} {{axis = 0 : i64}} : tensor<{N}xf32> -> tensor<1x{N}xf32>
    %{o}b = tile.broadcast %{o}e : tensor<1x{N}xf32> -> {cT}
    %{o} = arith.addf {in}, %{o}b : {cT}
)",
                       fmt::arg("o", o), fmt::arg("v", v), fmt::arg("in", in), fmt::arg("N", s.blockN),
                       fmt::arg("cT", cT));
    };
    if (s.bias) {
      addBias("%bias", acc, p + "gate");
      out = "%" + p + "gate";
    }
    if (s.swiglu) {
      std::string up = acc2;
      if (s.bias) {
        addBias("%bias2", acc2, p + "up");
        up = "%" + p + "up";
      }
      e += fmt::format("    %{p}act = tile.silu {out} : {cT}\n    %{p}glu = arith.mulf %{p}act, {up} : {cT}\n",
                       fmt::arg("p", p), fmt::arg("out", out), fmt::arg("cT", cT), fmt::arg("up", up));
      out = "%" + p + "glu";
    }
    if (s.residual) {
      e += fmt::format(R"(    %{p}rp = tile.make_block_ptr %res, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> !tile.block_ptr<{cS}>
    %{p}rv = tile.load %{p}rp{ib} : !tile.block_ptr<{cS}>
)",
                       fmt::arg("p", p), fmt::arg("cS", cS), fmt::arg("dt", s.dtype), fmt::arg("ib", ib));
      std::string r = widen(e, p + "rw", "%" + p + "rv", cS, cT);
      e += fmt::format("    %{}res = arith.addf {}, {} : {}\n", p, out, r, cT);
      out = "%" + p + "res";
    }
    if (s.dtype != "f32") {
      e += fmt::format("    %{}out = tile.convert {} : {} -> {}\n", p, out, cT, cS);
      out = "%" + p + "out";
    }
    e += fmt::format("    tile.store %cp, {}{} : !tile.block_ptr<{}>\n", out, ib, cS);
    return e;
  }
};

// The kernel parameters (GemmKernelSpec's contract; both forms share it):
// (a, b, [b_up], c, [bias, [bias_up]], [residual]: buffers; M, N, K: index).
std::string signature(const GemmKernelSpec& s) {
  std::string args;
  auto buffer = [&](const char* name) { args += fmt::format("%{}: !tile.ptr<{}>, ", name, s.dtype); };
  buffer("a");
  buffer("b");
  if (s.swiglu) buffer("b2");
  buffer("c");
  if (s.bias) buffer("bias");
  if (s.bias && s.swiglu) buffer("bias2");
  if (s.residual) buffer("res");
  return args + "%M: index, %N: index, %K: index";
}

}  // namespace

std::string emitGemmKernel(const GemmKernelSpec& s) {
  if (s.dtype != "f32" && s.dtype != "f16" && s.dtype != "bf16")
    fail("gemm kernel: storage type must be f32, f16 or bf16 (got {})", s.dtype);
  // B's view is [K, N] either way; for [N, K] storage it is transposed
  // (strides [1, K]); packed, it is program column block pn's panel: rows
  // [pn K, pn K + K) of a [panels K, blockN] array (padded: no column edge).
  std::string bShape = s.packedB ? "[%kend, %bn]" : "[%K, %N]";
  std::string bStrides = s.packedB ? "[%bn, %c1]" : s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
  std::string bOffsets = s.packedB ? "[%koff, %c0]" : "[%c0, %col]";
  std::string panel = s.packedB ? "  %koff = arith.muli %pn, %K : index\n  %kend = arith.addi %koff, %K : index\n" : "";
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK;
  GemmText t{s, fmt::format("tensor<{}x{}x{}>", M, K, s.dtype), fmt::format("tensor<{}x{}x{}>", K, N, s.dtype),
             fmt::format("tensor<{}x{}xf32>", M, N), "", "",
             s.tiling.empty() ? "" : fmt::format(" {{tiling = \"{}\"}}", s.tiling),
             fmt::format("tensor<{}x{}x{}>", M, N, s.dtype)};
  t.aP = "!tile.block_ptr<" + t.aT + ">";
  t.bP = "!tile.block_ptr<" + t.bT + ">";

  std::string args = signature(s);

  std::vector<std::string> zeros = {"%zero", "%zero"}, ptrs = {"%ap", "%bp", "%bp2"};
  std::string b2 = s.swiglu ? fmt::format("  %bp2 = tile.make_block_ptr %b2, {}, {}, {} : !tile.ptr<{}> -> {}\n",
                                          bShape, bStrides, bOffsets, s.dtype, t.bP)
                            : "";
  // Interior programs (the whole C block inside C) run the full K blocks
  // without bounds checks, then the K tail checked; edge programs check
  // everything. Ragged shapes thus cost checks only where they are ragged.
  const char* ib = " {in_bounds}";
  std::string fast = t.kLoop("%f", "%c0", "%kfull", zeros, ptrs, ib, ib) +
                     t.kLoop("%ft", "%kfull", "%K", {"%f#0", "%f#3"}, {"%f#1", "%f#2", "%f#4"}, "", "") +
                     t.epilogue("f", "%ft#0", "%ft#3", " {in_bounds}");
  // Rows of the program's block. With packed weights (the CPU) a last
  // block that would stick out past M moves up to end at M instead, when M
  // has a whole block: it recomputes rows of its neighbour and stores the
  // same values there, and runs the mask-free path (a 2-row edge block on
  // the masked path cost about 20 % at M = 32). Else blocks stay on the
  // grid and the edge one is masked.
  std::string rows = s.packedB ? R"(  %row0 = arith.muli %pm, %bm : index
  %lastRow = arith.subi %M, %bm : index
  %rowUp = arith.minsi %row0, %lastRow : index
  %rowsIn = arith.cmpi sle, %bm, %M : index
  %row = arith.select %rowsIn, %rowUp, %row0 : index
)"
                               : R"(  %row = arith.muli %pm, %bm : index
  %rowEnd = arith.addi %row, %bm : index
  %rowsIn = arith.cmpi sle, %rowEnd, %M : index
)";
  // Edge programs with packed weights still read whole panel rows up to
  // the K tail (only A's rows and C's rows and columns need masks).
  std::string edge = s.packedB ? t.kLoop("%e", "%c0", "%kfull", zeros, ptrs, "", ib) +
                                     t.kLoop("%et", "%kfull", "%K", {"%e#0", "%e#3"}, {"%e#1", "%e#2", "%e#4"}, "", "") +
                                     t.epilogue("e", "%et#0", "%et#3", "")
                               : t.kLoop("%e", "%c0", "%K", zeros, ptrs, "", "") + t.epilogue("e", "%e#0", "%e#3", "");
  // 16-bit storage: the fast path's paired loads along K need K even.
  std::string kEven = t.sixteenBit() ? R"(  %c2 = arith.constant 2 : index
  %kOdd = arith.remui %K, %c2 : index
  %kEven = arith.cmpi eq, %kOdd, %c0 : index
  %fast = arith.andi %interior, %kEven : i1
)"
                                     : "";

  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
{rows}  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %interior = arith.andi %rowsIn, %colsIn : i1
{kEven}  %kblocks = arith.divui %K, %bk : index
  %kfull = arith.muli %kblocks, %bk : index
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<{dt}> -> {aP}
{panel}  %bp = tile.make_block_ptr %b, {bShape}, {bStrides}, {bOffsets} : !tile.ptr<{dt}> -> {bP}
{b2}  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> !tile.block_ptr<{cS}>
  %zero = arith.constant dense<0.0> : {cT}
  scf.if {fastCond} {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("W", s.numWarps), fmt::arg("BM", M),
                     fmt::arg("BN", N), fmt::arg("BK", K), fmt::arg("aP", t.aP), fmt::arg("bP", t.bP),
                     fmt::arg("bStrides", bStrides), fmt::arg("bShape", bShape), fmt::arg("bOffsets", bOffsets), fmt::arg("panel", panel), fmt::arg("rows", rows), fmt::arg("b2", b2), fmt::arg("cT", t.cT), fmt::arg("cS", t.cS),
                     fmt::arg("dt", s.dtype), fmt::arg("kEven", kEven), fmt::arg("fastCond", t.sixteenBit() ? "%fast" : "%interior"),
                     fmt::arg("fast", fast), fmt::arg("edge", edge));
}

}  // namespace strata::tile
