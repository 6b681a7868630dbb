// The text pieces every GEMM emitter form shares (codegen/GemmKernel.h has
// the contract): the operand and C block types and the epilogue text of one
// kernel. Shared by GemmKernel.cpp (grid and staged forms) and
// GemmPackedKernel.cpp (the CPU's panel-packed form). Not a public header.
#pragma once
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/GemmKernel.h"
#include "codegen/StorageText.h"

namespace strata::tile::gemm {

// Lines applying GELU's tanh form, 0.5 x (1 + tanh(sqrt(2 / pi) (x +
// 0.044715 x^3))) as ops::gelu writes it, to the f32 tile `x` of type `T`;
// the result is %{p}gy. The GEMM and GEMV epilogues (GemmKernelSpec::gelu).
inline std::string geluTanhText(const std::string& p, const std::string& x, const std::string& T) {
  return fmt::format(R"(    %{p}gk0 = arith.constant dense<0.044715> : {T}
    %{p}gk1 = arith.constant dense<0.7978845608> : {T}
    %{p}gk2 = arith.constant dense<1.0> : {T}
    %{p}gk3 = arith.constant dense<0.5> : {T}
    %{p}gx2 = arith.mulf {x}, {x} : {T}
    %{p}gx3 = arith.mulf %{p}gx2, {x} : {T}
    %{p}gc = arith.mulf %{p}gk0, %{p}gx3 : {T}
    %{p}gs = arith.addf {x}, %{p}gc : {T}
    %{p}gu = arith.mulf %{p}gk1, %{p}gs : {T}
    %{p}gt = math.tanh %{p}gu : {T}
    %{p}g1 = arith.addf %{p}gk2, %{p}gt : {T}
    %{p}gh = arith.mulf %{p}gk3, {x} : {T}
    %{p}gy = arith.mulf %{p}gh, %{p}g1 : {T}
)",
                     fmt::arg("p", p), fmt::arg("x", x), fmt::arg("T", T));
}

// The epilogue's activation of the product `x` (after its bias), appended to
// `text`; returns the value that carries on: SwiGLU / GeGLU (swiglu, with
// `up` the second product) as silu(x) or gelu_tanh(x) times up, GELU's tanh
// form alone, or x itself. The GEMM and GEMV epilogues.
inline std::string activationText(const GemmKernelSpec& s, const std::string& p, const std::string& x,
                                  const std::string& up, const std::string& T, std::string& text) {
  if (!s.swiglu && !s.gelu) return x;
  std::string act;
  if (s.gelu) {
    text += geluTanhText(p, x, T);
    act = "%" + p + "gy";
  } else {
    text += fmt::format("    %{p}act = tile.silu {x} : {T}\n", fmt::arg("p", p), fmt::arg("x", x), fmt::arg("T", T));
    act = "%" + p + "act";
  }
  if (!s.swiglu) return act;
  text += fmt::format("    %{p}glu = arith.mulf {act}, {up} : {T}\n", fmt::arg("p", p), fmt::arg("act", act),
                      fmt::arg("up", up), fmt::arg("T", T));
  return "%" + p + "glu";
}

// Text pieces of one GEMM kernel; `ib` is " {in_bounds}" on the fast path.
struct GemmText {
  const GemmKernelSpec& s;
  std::string aT, bT, cT, aP, bP, hint;
  std::string cS;      // the C block in the storage type
  std::string cShape;  // "MxN" of the C block
  std::string zero = "%zero";      // the zero accumulators' SSA name
  StorageText st{s.dtype};
  std::string bS;  // B's block as stored (bT, or its 16-bit form: GemmKernelSpec::weightDtype)

  // The attributes of a fast-path (`ib` non-empty) operand load: with 16-bit
  // storage and K a multiple of 4 (the fast path's condition then), the K
  // dim `kDim` of A ([M, K], 1) and of [N, K] weights viewed as [K, N] (0)
  // is contiguous in aligned runs of 4 — tile.load's `contiguous` promise
  // (blockK is a multiple of 16). kDim -1: none.
  std::string loadAttrs(const char* ib, int kDim) const {
    if (!*ib || kDim < 0 || !st.sixteenBit()) return ib;
    return fmt::format(" {{in_bounds, contiguous = {} : i64, run = 4 : i64}}", kDim);
  }

  // An interior block's access in aligned pairs where N is even (%nPairs:
  // the `contiguous` promise holds), else element by element: the store of
  // `v` through `ptr` (of block pointer type `bp`) and the load of `res`
  // (a `t` tile) from it.
  static std::string pairedStore(const std::string& ptr, const std::string& v, const std::string& bp) {
    return fmt::format(R"(    scf.if %nPairs {{
    tile.store {ptr}, {v} {{in_bounds, contiguous = 1 : i64}} : {bp}
    }} else {{
    tile.store {ptr}, {v} {{in_bounds}} : {bp}
    }}
)",
                       fmt::arg("ptr", ptr), fmt::arg("v", v), fmt::arg("bp", bp));
  }
  static std::string pairedLoad(const std::string& res, const std::string& ptr, const std::string& t,
                                const std::string& bp) {
    return fmt::format(R"(    {res} = scf.if %nPairs -> ({t}) {{
    {res}p = tile.load {ptr} {{in_bounds, contiguous = 1 : i64}} : {bp}
    scf.yield {res}p : {t}
    }} else {{
    {res}e = tile.load {ptr} {{in_bounds}} : {bp}
    scf.yield {res}e : {t}
    }}
)",
                       fmt::arg("res", res), fmt::arg("ptr", ptr), fmt::arg("t", t), fmt::arg("bp", bp));
  }

  // `y` = B's block (bT) through block pointer `ptr`: the load, and for
  // 16-bit panels under an f32 dot (weightDtype) the widening after it.
  std::string loadB(const std::string& y, const std::string& ptr, const std::string& attrs) const {
    if (bS == bT) return fmt::format("    {} = tile.load {}{} : {}\n", y, ptr, attrs, bP);
    return fmt::format("    {y}s = tile.load {ptr}{a} : {bP}\n    {y} = tile.convert {y}s : {bS} -> {bT}\n",
                       fmt::arg("y", y), fmt::arg("ptr", ptr), fmt::arg("a", attrs), fmt::arg("bP", bP),
                       fmt::arg("bS", bS), fmt::arg("bT", bT));
  }

  // `v` = the block's scales (`off` false) or offsets of weight w (0, or
  // 1: b2) as a bT row: blockRow of the f32 rows, or the f16 row of its
  // super-block (from row %ssoff) widened, times the i8 row of its block
  // with sub-block scales (GemmKernelSpec::quantSuper).
  std::string quantRow(const std::string& v, int w, bool off) const {
    const char* suffix = w ? "2" : "";
    const std::string sup = fmt::format("%{}{}", off ? "boff" : "bsc", suffix);
    if (!s.quantSuper) return blockRow(v, sup, "%sr");
    const std::string hT = fmt::format("tensor<1x{}xf16>", s.blockN), iT = fmt::format("tensor<1x{}xi8>", s.blockN);
    std::string t = fmt::format(R"(    {v}hp = tile.make_block_ptr {sup}, [%ssend, %bn], [%bn, %c1], [%ssr, %c0] : !tile.ptr<f16> -> !tile.block_ptr<{hT}>
    {v}h = tile.load {v}hp {{in_bounds}} : !tile.block_ptr<{hT}>
)",
                                fmt::arg("v", v), fmt::arg("sup", sup), fmt::arg("hT", hT));
    if (!s.quantSubScales)
      return t + fmt::format("    {v} = tile.convert {v}h : {hT} -> {bT}\n", fmt::arg("v", v), fmt::arg("hT", hT),
                             fmt::arg("bT", bT));
    return t + fmt::format(R"(    {v}w = tile.convert {v}h : {hT} -> {bT}
    {v}ip = tile.make_block_ptr %{sub}{suffix}, [%send, %bn], [%bn, %c1], [%sr, %c0] : !tile.ptr<i8> -> !tile.block_ptr<{iT}>
    {v}i = tile.load {v}ip {{in_bounds}} : !tile.block_ptr<{iT}>
    {v}f = arith.sitofp {v}i : {iT} to {bT}
    {v} = arith.mulf {v}w, {v}f : {bT}
)",
                           fmt::arg("v", v), fmt::arg("hT", hT), fmt::arg("bT", bT), fmt::arg("sub", off ? "bos" : "bss"),
                           fmt::arg("suffix", suffix), fmt::arg("iT", iT));
  }

  // `v` = row `row` of the panel's f32 block scales or offsets in `buf`
  // ([K / quantBlock, blockN] a panel, from row %soff), as a bT block.
  std::string blockRow(const std::string& v, const std::string& buf, const std::string& row) const {
    return fmt::format(R"(    {v}p = tile.make_block_ptr {buf}, [%send, %bn], [%bn, %c1], [{row}, %c0] : !tile.ptr<f32> -> !tile.block_ptr<{bT}>
    {v} = tile.load {v}p {{in_bounds}} : !tile.block_ptr<{bT}>
)",
                       fmt::arg("v", v), fmt::arg("buf", buf), fmt::arg("row", row), fmt::arg("bT", bT));
  }

  // The next-chunk prefetch (GemmKernelSpec::prefetchNext) of the `steps`
  // K steps from K step `k`: one cache line (%lw elements) of the next
  // chunk per step, into L2, from this block's lines at `start` (the
  // chunk's lines counted from K step `from`).
  std::string nextChunkPrefetch(const char* k, const char* from, const std::string& start, int64_t steps) const {
    std::string lP = fmt::format("!tile.block_ptr<tensor<{}x{}>>", steps * s.prefetchNext, s.bDtype());
    return fmt::format(R"(    %lk = arith.subi {k}, {from} : index
    %lo = arith.muli %lk, %lw : index
    %la = arith.addi {start}, %lo : index
    %pl = tile.make_block_ptr %b, [%bTotal], [%c1], [%la] : !tile.ptr<{bdt}> -> {lP}
    tile.prefetch %pl {{locality = 2 : i64}} : {lP}
)",
                       fmt::arg("k", k), fmt::arg("from", from), fmt::arg("start", start), fmt::arg("lP", lP),
                       fmt::arg("bdt", s.bDtype()));
  }

  // The accumulator of weight w (0, or 1: b2) among kLoop's results `res`.
  std::string accResult(const std::string& res, int w) const {
    return fmt::format("{}#{}", res, w == 0 ? 0 : s.int8Blocks() ? 1 : 3);
  }

  // A K loop over [from, to) starting from the accumulators `inits`
  // (and block pointers `ptrs`); its results are `res`#0.. . `ib` marks the
  // loads in bounds, `bIb` B's alone (packed panels are whole up to K).
  // `nextLines` is the start of this block's lines of the next chunk for
  // the next-chunk prefetch (GemmKernelSpec::prefetchNext), `from` their
  // first K step. i8 panels take int8DotLoop.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, const char* ib, const char* bIb,
                    const std::string& nextLines = "") const {
    if (s.int8Blocks()) return int8DotLoop(res, from, to, inits, ib, nextLines);
    std::string iterArgs = fmt::format("%acc = {}, %pa = {}, %pb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP;
    std::string aib = loadAttrs(ib, 1), bib = loadAttrs(bIb, s.weightsNK && !s.packedB ? 0 : -1);
    std::string body = fmt::format(R"(    %x = tile.load %pa{aib} : {aP}
{yLoad}    %d = tile.dot %x, %y, %acc{hint} : {aT} * {bT} -> {cT}
    %na = tile.advance %pa, [%c0, %bk] : {aP}
    %nb = tile.advance %pb, [%bk, %c0] : {bP}
)",
                                   fmt::arg("aib", aib), fmt::arg("yLoad", loadB("%y", "%pb", bib)), fmt::arg("aP", aP), fmt::arg("bP", bP),
                                   fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT), fmt::arg("hint", hint));
    // Packed main loops: prefetch B (and b_up) prefetchK rows ahead.
    auto prefetch = [&](const char* ptr) {
      if (!s.packedB || !s.prefetchK) return std::string();
      return fmt::format("    %pf{p} = tile.advance %{p}, [%pfk, %c0] : {bP}\n    tile.prefetch %pf{p} : {bP}\n",
                         fmt::arg("p", ptr), fmt::arg("bP", bP));
    };
    body += prefetch("pb");
    std::string yields = "%d, %na, %nb";
    int n = 3;
    if (!nextLines.empty()) body += nextChunkPrefetch("%k", from, nextLines, 1);
    if (s.swiglu) {
      body += prefetch("pb2");
      iterArgs += fmt::format(", %acc2 = {}, %pb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      body += loadB("%y2", "%pb2", bib) + fmt::format(R"(    %d2 = tile.dot %x, %y2, %acc2 : {aT} * {bT} -> {cT}
    %nb2 = tile.advance %pb2, [%bk, %c0] : {bP}
)",
                          fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT));
      yields += ", %d2, %nb2";
      n = 5;
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %bk iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, n, from, to, iterArgs, types, body, yields, types);
  }

  // The K loop over i8 panels (int8Blocks), one quantization block of Q =
  // quantBlock K steps an iteration, in integers: the register block's A
  // rows [microM, Q] are quantized to i16 with a scale per row (its largest
  // magnitude maps to 32767, rounded to nearest even), integer dots
  // multiply them by the block's panel rows ([Q / 2, 2 blockN] i8 in K
  // pairs: abi::packInt8BlockPanels) exactly in i32, and the sums join the
  // f32 accumulators times A's row scale and the panel's column scales;
  // with offsets, A's f32 row sums times the offsets are added: sum_k x_k
  // (s q_k + o) = s sum_k x_k q_k + o sum_k x_k. A's i16 values keep 15
  // bits of each block (llama.cpp's own dot products keep 8), so the result
  // stays within f32 rounding of the dequantized weights' product.
  // Nibble panels (quantNibbles: [Q / 2, blockN] bytes) are unpacked into
  // the dot's i32 pairs in registers.
  // The one-row GEMV quantizes and multiplies the whole block at once; a
  // block of several rows runs as a loop over groups of kIntGroup K steps
  // (A's group quantized with the block's scales, then its dot), which
  // keeps the code of the many row-block copies small (the whole block
  // unrolled took minutes to compile for a Q4_K_M model's kernels).
  // [from, to) covers whole blocks (chunks are multiples of Q). A and B are
  // addressed from %row, %koff and the block's K (kLoop's `ptrs` are not
  // read); the results are the accumulators (accResult).
  static constexpr int64_t kIntGroup = 16;
  std::string int8DotLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                          const char* aIb, const std::string& nextLines) const {
    const int weights = s.swiglu ? 2 : 1;
    const int64_t M = s.microM, Q = s.quantBlock, N = s.blockN, G = M == 1 ? Q : std::min(kIntGroup, Q);
    const std::string xT = fmt::format("tensor<{}x{}xf32>", M, Q), gT = fmt::format("tensor<{}x{}xf32>", M, G),
                      qT = fmt::format("tensor<{}x{}xi16>", M, G), rT = fmt::format("tensor<{}x1xf32>", M),
                      iT = fmt::format("tensor<{}x{}xi32>", M, N),
                      gbS = fmt::format("tensor<{}x{}xi8>", G / 2, (s.quantNibbles ? 1 : 2) * N),
                      pT = fmt::format("tensor<{}x{}xi32>", G / 2, N);
    const std::string gbP = "!tile.block_ptr<" + gbS + ">";
    std::string iterArgs = fmt::format("%acc = {}", inits[0]), types = cT;
    if (s.swiglu) {
      iterArgs += fmt::format(", %acc2 = {}", inits[1]);
      types += ", " + cT;
    }
    const char* bufs[2] = {"%b", "%b2"};
    // A's block and its row scales %xsc and reciprocals %xinv (0 for rows
    // of zeros), with offsets its row sums %xsum; %bro: the block's first
    // pair row of the panels.
    // (With super-block scale rows, %ssr: the block's super-block row.)
    const char* superRow = s.quantSuper ? "      %kbs = arith.divui %kb, %csup : index\n"
                                          "      %ssr = arith.addi %ssoff, %kbs : index\n"
                                        : "";
    std::string body = fmt::format(R"(      %kbi = arith.divui %kb, %cqb : index
      %sr = arith.addi %soff, %kbi : index
{superRow}      %kbk = arith.addi %koff, %kb : index
      %bro = arith.divui %kbk, %cp2 : index
      %xap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %kb] : !tile.ptr<f32> -> !tile.block_ptr<{xT}>
      %xa = tile.load %xap{aIb} : !tile.block_ptr<{xT}>
      %xab = math.absf %xa : {xT}
      %xmr = tile.reduce %xab {{kind = "max", axis = 1 : i64}} : {xT} -> tensor<{M}xf32>
      %xm = tile.expand_dims %xmr {{axis = 1 : i64}} : tensor<{M}xf32> -> {rT}
      %xlim = arith.constant dense<32767.0> : {rT}
      %xrcp = arith.constant dense<3.0518509e-05> : {rT}
      %xz = arith.constant dense<0.0> : {rT}
      %xsc = arith.mulf %xm, %xrcp : {rT}
      %xinv0 = arith.divf %xlim, %xm : {rT}
      %xnz = arith.cmpf ogt, %xm, %xz : {rT}
      %xinv = arith.select %xnz, %xinv0, %xz : tensor<{M}x1xi1>, {rT}
      %zi = arith.constant dense<0> : {iT}
)",
                                   fmt::arg("xT", xT), fmt::arg("rT", rT), fmt::arg("iT", iT), fmt::arg("M", M),
                                   fmt::arg("aIb", aIb), fmt::arg("superRow", superRow));
    if (s.quantNibbles)
      body += fmt::format(R"(      %nib15 = arith.constant dense<15> : {pT}
      %nib4 = arith.constant dense<4> : {pT}
      %nib16 = arith.constant dense<16> : {pT}
)",
                          fmt::arg("pT", pT));
    if (s.quantOffsets)
      body += fmt::format(R"(      %xsr = tile.reduce %xa {{kind = "sum", axis = 1 : i64, reassoc}} : {xT} -> tensor<{M}xf32>
      %xsum = tile.expand_dims %xsr {{axis = 1 : i64}} : tensor<{M}xf32> -> {rT}
)",
                          fmt::arg("xT", xT), fmt::arg("rT", rT), fmt::arg("M", M));
    // One group's A values quantized (%gq from %ga) and its dots from the
    // sums in `from[w]` into %gd<w>, B's group at pair row %gbr.
    auto group = [&](const std::string& ga, const std::vector<std::string>& from) {
      std::string t = fmt::format(R"(        %gib = tile.broadcast %xinv : {rT} -> {gT}
        %gs = arith.mulf {ga}, %gib : {gT}
        %gr = math.roundeven %gs : {gT}
        %gq = arith.fptosi %gr : {gT} to {qT}
)",
                                  fmt::arg("rT", rT), fmt::arg("gT", gT), fmt::arg("qT", qT), fmt::arg("ga", ga));
      for (int w = 0; w < weights; ++w) {
        t += fmt::format(R"(        %gbp{w} = tile.make_block_ptr {buf}, [%kendp, %bnp], [%bnp, %c1], [%gbr, %c0] : !tile.ptr<i8> -> {gbP}
        %gy{w} = tile.load %gbp{w} {{in_bounds}} : {gbP}
)",
                         fmt::arg("w", w), fmt::arg("buf", bufs[w]), fmt::arg("gbP", gbP));
        std::string y = fmt::format("%gy{}", w), yT = gbS;
        if (s.quantNibbles) {
          // A byte's two nibbles (K steps 2k, 2k + 1) as the i16 halves of
          // one i32: the dot's pair.
          t += fmt::format(R"(        %gw{w} = arith.extui %gy{w} : {gbS} to {pT}
        %gl{w} = arith.andi %gw{w}, %nib15 : {pT}
        %gh{w} = arith.shrui %gw{w}, %nib4 : {pT}
        %gs{w} = arith.shli %gh{w}, %nib16 : {pT}
        %gp{w} = arith.ori %gl{w}, %gs{w} : {pT}
)",
                           fmt::arg("w", w), fmt::arg("gbS", gbS), fmt::arg("pT", pT));
          y = fmt::format("%gp{}", w);
          yT = pT;
        }
        t += fmt::format("        %gd{w} = tile.dot %gq, {y}, {from} {{b_pairs}} : {qT} * {yT} -> {iT}\n",
                         fmt::arg("w", w), fmt::arg("y", y), fmt::arg("yT", yT), fmt::arg("qT", qT),
                         fmt::arg("iT", iT), fmt::arg("from", from[w]));
      }
      return t;
    };
    std::vector<std::string> sums;
    if (G == Q) {
      body += "        %gbr = arith.addi %bro, %c0 : index\n" + group("%xa", {"%zi", "%zi"});
      for (int w = 0; w < weights; ++w) sums.push_back(fmt::format("%gd{}", w));
    } else {
      std::string gArgs = "%ia0 = %zi", gTypes = iT, gYield = "%gd0";
      if (s.swiglu) gArgs += ", %ia1 = %zi", gTypes += ", " + iT, gYield += ", %gd1";
      body += fmt::format(R"(      %cgs = arith.constant {G} : index
      %ig:{W} = scf.for %kg = %c0 to %cqb step %cgs iter_args({gArgs}) -> ({gTypes}) {{
        %kk = arith.addi %kb, %kg : index
        %kgp = arith.divui %kg, %cp2 : index
        %gbr = arith.addi %bro, %kgp : index
        %gap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %kk] : !tile.ptr<f32> -> !tile.block_ptr<{gT}>
        %ga = tile.load %gap{aIb} : !tile.block_ptr<{gT}>
{group}        scf.yield {gYield} : {gTypes}
      }}
)",
                          fmt::arg("G", G), fmt::arg("W", weights), fmt::arg("gArgs", gArgs), fmt::arg("gTypes", gTypes),
                          fmt::arg("gT", gT), fmt::arg("aIb", aIb), fmt::arg("group", group("%ga", {"%ia0", "%ia1"})),
                          fmt::arg("gYield", gYield));
      for (int w = 0; w < weights; ++w) sums.push_back(fmt::format("%ig#{}", w));
    }
    const char* accs[2] = {"%acc", "%acc2"};
    std::string yield;
    for (int w = 0; w < weights; ++w) {
      body += fmt::format(R"(      %df{w} = arith.sitofp {sum} : {iT} to {cT}
{scale}      %sc{w} = tile.dot %xsc, %bs{w}, {zero} : {rT} * {bT} -> {cT}
      %pr{w} = arith.mulf %df{w}, %sc{w} : {cT}
      %am{w} = arith.addf {acc}, %pr{w} : {cT}
)",
                          fmt::arg("w", w), fmt::arg("sum", sums[w]), fmt::arg("iT", iT), fmt::arg("cT", cT),
                          fmt::arg("rT", rT), fmt::arg("bT", bT), fmt::arg("zero", zero), fmt::arg("acc", accs[w]),
                          fmt::arg("scale", quantRow(fmt::format("%bs{}", w), w, false)));
      std::string out = fmt::format("%am{}", w);
      if (s.quantOffsets) {
        body += quantRow(fmt::format("%bo{}", w), w, true) +
                fmt::format("      %an{w} = tile.dot %xsum, %bo{w}, %am{w} : {rT} * {bT} -> {cT}\n", fmt::arg("w", w),
                            fmt::arg("rT", rT), fmt::arg("bT", bT), fmt::arg("cT", cT));
        out = fmt::format("%an{}", w);
      }
      // B's rows prefetchK K steps (%pfk pair rows) ahead.
      if (s.prefetchK)
        body += fmt::format(R"(      %pfr{w} = arith.addi %bro, %pfk : index
      %pf{w} = tile.make_block_ptr {buf}, [%kendp, %bnp], [%bnp, %c1], [%pfr{w}, %c0] : !tile.ptr<i8> -> {bP}
      tile.prefetch %pf{w} : {bP}
)",
                            fmt::arg("w", w), fmt::arg("buf", bufs[w]), fmt::arg("bP", bP));
      yield += (w ? ", " : "") + out;
    }
    if (!nextLines.empty()) body += nextChunkPrefetch("%kb", from, nextLines, Q);
    return fmt::format(R"(    {res}:{n} = scf.for %kb = {from} to {to} step %cqb iter_args({iterArgs}) -> ({types}) {{
{body}      scf.yield {yield} : {types}
    }}
)",
                       fmt::arg("res", res), fmt::arg("n", weights), fmt::arg("from", from), fmt::arg("to", to),
                       fmt::arg("iterArgs", iterArgs), fmt::arg("types", types), fmt::arg("body", body),
                       fmt::arg("yield", yield));
  }

  // The store of C's block `v` (narrowed) by TMA where N % 8 = 0 (the
  // map's row pitch): as a dense block into the A stage buffer, which no
  // copy or dot reads any more once every warp has passed the barrier, and
  // out by one TMA store, which drops the rows and columns outside the map
  // (C [M, N]); else `otherwise`. (Two views of the one block: a view that a
  // TMA op reads serves copies only, isCopyPointer.)
  std::string tmaStore(const std::string& p, const std::string& v, const std::string& otherwise) const {
    return fmt::format(R"(    %{p}c8r = arith.remui %N, %c8 : index
    %{p}c8 = arith.cmpi eq, %{p}c8r, %c0 : index
    scf.if %{p}c8 {{
    tile.barrier
    %{p}cl = tile.make_block_ptr %sa, [%sbm, %sbn], [%sbn, %c1], [%c0, %c0] : !tile.ptr<{dt}> -> {bp}
    tile.store %{p}cl, {v} {{in_bounds, contiguous = 1 : i64}} : {bp}
    %{p}cw = tile.make_block_ptr %sa, [%sbm, %sbn], [%sbn, %c1], [%c0, %c0] : !tile.ptr<{dt}> -> {bp}
    tile.tma_store %cmap[%col, %row], %{p}cw : !tile.ptr<i8>, {bp}
    }} else {{
{otherwise}    }}
)",
                       fmt::arg("p", p), fmt::arg("dt", s.dtype), fmt::arg("bp", st.blockPtr(cShape)),
                       fmt::arg("v", v), fmt::arg("otherwise", otherwise));
  }

  // Bias / SwiGLU / residual on the accumulators `acc` (and `acc2`), then
  // the store. Names are prefixed with `p` (one set per path).
  // `viaTma` (a TMA kernel's staged path, after its drain: see
  // storesCByTma): C goes by TMA (tmaStore) from an interior block (`ib`
  // " {in_bounds}"), else in aligned pairs; and from a row-edge block (`ib`
  // empty: its columns inside N, rows past M, which the map drops), else
  // element by element, checked.
  std::string epilogue(const std::string& p, const std::string& acc, const std::string& acc2, const char* ib,
                       bool viaTma = false) const {
    std::string e, out = acc;
    auto addBias = [&](const char* buf, const std::string& in, const std::string& o) {
      e += fmt::format(R"(    %{o}p = tile.make_block_ptr {buf}, [%N], [%c1], [%col] : !tile.ptr<{dt}> -> !tile.block_ptr<tensor<{N}x{dt}>>
    %{o}v = tile.load %{o}p{ib} : !tile.block_ptr<tensor<{N}x{dt}>>
)",
                       fmt::arg("o", o), fmt::arg("buf", buf), fmt::arg("N", s.blockN), fmt::arg("dt", s.dtype),
                       fmt::arg("ib", ib));
      std::string v = st.widen(e, o + "w", "%" + o + "v", std::to_string(s.blockN));
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
    std::string up = s.swiglu ? acc2 : "";
    if (s.swiglu && s.bias) {
      addBias("%bias2", acc2, p + "up");
      up = "%" + p + "up";
    }
    out = activationText(s, p, out, up, cT, e);
    const bool pairs = *ib && st.sixteenBit();  // see the store below
    if (s.residual) {
      e += fmt::format("    %{p}rp = tile.make_block_ptr %res, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> "
                       "!tile.block_ptr<{cS}>\n",
                       fmt::arg("p", p), fmt::arg("cS", cS), fmt::arg("dt", s.dtype));
      if (pairs)
        e += pairedLoad("%" + p + "rv", "%" + p + "rp", cS, "!tile.block_ptr<" + cS + ">");
      else
        e += fmt::format("    %{p}rv = tile.load %{p}rp{ib} : !tile.block_ptr<{cS}>\n", fmt::arg("p", p),
                         fmt::arg("cS", cS), fmt::arg("ib", ib));
      std::string r = st.widen(e, p + "rw", "%" + p + "rv", cShape);
      e += fmt::format("    %{}res = arith.addf {}, {} : {}\n", p, out, r, cT);
      out = "%" + p + "res";
    }
    if (viaTma && !pairs) {
      const std::string v = st.narrow(e, p + "cv", out, cShape);
      return e + tmaStore(p, v, fmt::format("    tile.store %cp, {} : {}\n", v, st.blockPtr(cShape)));
    }
    if (!pairs) return e + st.store("%cp", out, cShape, ib);
    // Interior blocks with N even store C in aligned pairs (C and the
    // residual are 4-byte aligned: GpuKernelSet::launch): one 4-byte
    // store per accumulator pair instead of two 2-byte ones.
    const std::string v = st.narrow(e, p + "cv", out, cShape), paired = pairedStore("%cp", v, st.blockPtr(cShape));
    return e + (viaTma ? tmaStore(p, v, paired) : paired);
  }

  // The epilogue of a program, with K split across programs
  // (GemmKernelSpec::splitKPrograms): at one split the epilogue itself;
  // else this split's partials go to its workspace slices (slice `pk`, and
  // kSplits + pk for the up projection), the program arrives at its C
  // block's counter, and the last to arrive sums every split's slices in
  // split order and runs the epilogue on the sums.
  std::string finish(const std::string& p, const std::string& acc, const std::string& acc2, const char* ib,
                     bool viaTma = false) const {
    if (!s.splitKPrograms) return epilogue(p, acc, acc2, ib, viaTma);
    const int nb = s.swiglu ? 2 : 1;
    std::string stores, inits, types, loads, yields;
    // Block pointer `name` over workspace slice `slice` (rows slice M + row).
    auto slicePtr = [&](const std::string& name, const std::string& slice) {
      return fmt::format(R"(    {n}r = arith.muli {sl}, %M : index
    {n}o = arith.addi {n}r, %row : index
    {n}e = arith.addi {n}r, %M : index
    {n} = tile.make_block_ptr %ws, [{n}e, %N], [%N, %c1], [{n}o, %col] : !tile.ptr<f32> -> !tile.block_ptr<{cT}>
)",
                         fmt::arg("n", name), fmt::arg("sl", slice), fmt::arg("cT", cT));
    };
    // Interior blocks with N even move the f32 partials in 8-byte column
    // pairs (the workspace is 256-byte aligned: slice rows start at even
    // offsets), as the epilogue stores C.
    const bool pairs = *ib;
    for (int w = 0; w < nb; ++w) {
      const std::string n = fmt::format("%{}w{}", p, w), q = fmt::format("%{}q{}", p, w);
      const std::string bp = "!tile.block_ptr<" + cT + ">";
      stores += (w ? fmt::format("    {}s = arith.addi %pk, %kSplits : index\n", n) : "") +
                slicePtr(n, w ? n + "s" : "%pk");
      if (pairs)
        stores += pairedStore(n, w ? acc2 : acc, bp);
      else
        stores += fmt::format("    tile.store {}, {} : {}\n", n, w ? acc2 : acc, bp);
      inits += fmt::format("{}%{}a{} = %zero", w ? ", " : "", p, w);
      types += (w ? ", " : "") + cT;
      loads += (w ? fmt::format("    {}s = arith.addi %{}q, %kSplits : index\n", q, p) : "") +
               slicePtr(q, w ? q + "s" : "%" + p + "q");
      if (pairs)
        loads += pairedLoad(q + "v", q, cT, bp);
      else
        loads += fmt::format("    {}v = tile.load {} : {}\n", q, q, bp);
      loads += fmt::format("    {q}n = arith.addf %{p}a{w}, {q}v : {cT}\n", fmt::arg("q", q), fmt::arg("cT", cT),
                           fmt::arg("p", p), fmt::arg("w", w));
      yields += (w ? ", " : "") + q + "n";
    }
    return fmt::format(R"(    %{p}one = arith.cmpi eq, %kSplits, %c1 : index
    scf.if %{p}one {{
{single}    }} else {{
{stores}    %{p}ci0 = arith.muli %pm, %gridN : index
    %{p}ci = arith.addi %{p}ci0, %pn : index
    %{p}last = tile.arrive %ctr[%{p}ci] of %kSplits : !tile.ptr<i32>
    scf.if %{p}last {{
    %{p}m:{nb} = scf.for %{p}q = %c0 to %kSplits step %c1 iter_args({inits}) -> ({types}) {{
{loads}      scf.yield {yields} : {types}
    }}
{merged}    }}
    }}
)",
                       fmt::arg("p", p), fmt::arg("single", epilogue(p, acc, acc2, ib)), fmt::arg("stores", stores),
                       fmt::arg("nb", nb), fmt::arg("inits", inits), fmt::arg("types", types), fmt::arg("loads", loads),
                       fmt::arg("yields", yields),
                       fmt::arg("merged", epilogue(p + "k", "%" + p + "m#0", "%" + p + "m#1", ib)));
  }
};

// The operand and C block types of a kernel (a register block's, in the
// packed form) for both forms.
GemmText gemmText(const GemmKernelSpec& s);

// CPU form: panel-packed weights, programs of several register blocks, K
// walked in chunks (see GemmKernelSpec::microM / chunkK).
std::string emitPackedGemm(const GemmKernelSpec& s);

}  // namespace strata::tile::gemm
