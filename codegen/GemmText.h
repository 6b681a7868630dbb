// The text pieces every GEMM emitter form shares (codegen/GemmKernel.h has
// the contract): the operand and C block types and the epilogue text of one
// kernel. Shared by GemmKernel.cpp (grid and staged forms) and
// GemmPackedKernel.cpp (the CPU's panel-packed form). Not a public header.
#pragma once
#include <string>

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
  // i8 panels: the integers converted, times the scales of K step %k's
  // block (row %soff + %k / quantBlock of the panel's scales in `scales`),
  // plus its offsets (the same row of `offsets`) where there are any.
  // `w` (0 / 1: b / b2) picks the weight; with `preloaded` its block's
  // scale and offset rows are already the values %bs<w> and %bo<w>
  // (int8BlockLoop), else they are loaded here from b_scales / b_offsets.
  std::string loadB(const std::string& y, const std::string& ptr, const std::string& attrs, int w = 0,
                    bool preloaded = false) const {
    if (s.int8Blocks()) {
      const std::string sv = preloaded ? fmt::format("%bs{}", w) : y + "s";
      const std::string ov = preloaded ? fmt::format("%bo{}", w) : y + "f";
      std::string t = fmt::format(R"(    {y}q = tile.load {ptr}{a} : {bP}
    {y}i = tile.convert {y}q : {bS} -> {bT}
)",
                                  fmt::arg("y", y), fmt::arg("ptr", ptr), fmt::arg("a", attrs), fmt::arg("bP", bP),
                                  fmt::arg("bS", bS), fmt::arg("bT", bT));
      if (!preloaded) {
        t += fmt::format("    {y}kb = arith.divui %k, %cqb : index\n    {y}sr = arith.addi %soff, {y}kb : index\n",
                         fmt::arg("y", y));
        t += blockRow(sv, w ? "%bsc2" : "%bsc", y + "sr");
        if (s.quantOffsets) t += blockRow(ov, w ? "%boff2" : "%boff", y + "sr");
      }
      // q s + o in one FMA (contract).
      t += fmt::format("    {y}{m} = arith.mulf {y}i, {sv} fastmath<contract> : {bT}\n", fmt::arg("y", y),
                       fmt::arg("m", s.quantOffsets ? "m" : ""), fmt::arg("sv", sv), fmt::arg("bT", bT));
      if (s.quantOffsets)
        t += fmt::format("    {y} = arith.addf {y}m, {ov} fastmath<contract> : {bT}\n", fmt::arg("y", y),
                         fmt::arg("ov", ov), fmt::arg("bT", bT));
      return t;
    }
    if (bS == bT) return fmt::format("    {} = tile.load {}{} : {}\n", y, ptr, attrs, bP);
    return fmt::format("    {y}s = tile.load {ptr}{a} : {bP}\n    {y} = tile.convert {y}s : {bS} -> {bT}\n",
                       fmt::arg("y", y), fmt::arg("ptr", ptr), fmt::arg("a", attrs), fmt::arg("bP", bP),
                       fmt::arg("bS", bS), fmt::arg("bT", bT));
  }

  // `v` = row `row` of the panel's f32 block scales or offsets in `buf`
  // ([K / quantBlock, blockN] a panel, from row %soff), as a bT block.
  std::string blockRow(const std::string& v, const std::string& buf, const std::string& row) const {
    return fmt::format(R"(    {v}p = tile.make_block_ptr {buf}, [%send, %bn], [%bn, %c1], [{row}, %c0] : !tile.ptr<f32> -> !tile.block_ptr<{bT}>
    {v} = tile.load {v}p {{in_bounds}} : !tile.block_ptr<{bT}>
)",
                       fmt::arg("v", v), fmt::arg("buf", buf), fmt::arg("row", row), fmt::arg("bT", bT));
  }

  // A K loop over [from, to) starting from the accumulators `inits`
  // (and block pointers `ptrs`); its results are `res`#0.. . `ib` marks the
  // loads in bounds, `bIb` B's alone (packed panels are whole up to K).
  // i8 panels (int8Blocks): an outer loop over the quantization blocks
  // (int8BlockLoop) around this loop over one block, with the block's
  // scale and offset rows loaded once (`inBlock`); `lineFrom` is the
  // chunk's start for the next-chunk prefetch (GemmKernelSpec::prefetchNext).
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, const char* ib, const char* bIb,
                    const std::string& nextLines = "", bool inBlock = false, const char* lineFrom = nullptr) const {
    if (s.int8Blocks() && s.microM == 1 && nextLines.empty()) return int8RowLoop(res, from, to, inits, ptrs, ib, bIb);
    if (s.int8Blocks() && !inBlock) return int8BlockLoop(res, from, to, inits, ptrs, ib, bIb, nextLines);
    std::string iterArgs = fmt::format("%acc = {}, %pa = {}, %pb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP;
    std::string aib = loadAttrs(ib, 1), bib = loadAttrs(bIb, s.weightsNK && !s.packedB ? 0 : -1);
    std::string body = fmt::format(R"(    %x = tile.load %pa{aib} : {aP}
{yLoad}    %d = tile.dot %x, %y, %acc{hint} : {aT} * {bT} -> {cT}
    %na = tile.advance %pa, [%c0, %bk] : {aP}
    %nb = tile.advance %pb, [%bk, %c0] : {bP}
)",
                                   fmt::arg("aib", aib), fmt::arg("yLoad", loadB("%y", "%pb", bib, 0, inBlock)), fmt::arg("aP", aP), fmt::arg("bP", bP),
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
    if (!nextLines.empty()) {
      // One cache line of the next K chunk per step, into L2 (see
      // GemmKernelSpec::prefetchNext).
      std::string lP = fmt::format("!tile.block_ptr<tensor<{}x{}>>", s.prefetchNext, s.bDtype());
      body += fmt::format(R"(    %lk = arith.subi %k, {lineFrom} : index
    %lo = arith.muli %lk, %lw : index
    %la = arith.addi {start}, %lo : index
    %pl = tile.make_block_ptr %b, [%bTotal], [%c1], [%la] : !tile.ptr<{bdt}> -> {lP}
    tile.prefetch %pl {{locality = 2 : i64}} : {lP}
)",
                          fmt::arg("lineFrom", lineFrom ? lineFrom : from), fmt::arg("start", nextLines), fmt::arg("lP", lP),
                          fmt::arg("bdt", s.bDtype()));
    }
    if (s.swiglu) {
      body += prefetch("pb2");
      iterArgs += fmt::format(", %acc2 = {}, %pb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      body += loadB("%y2", "%pb2", bib, 1, inBlock) + fmt::format(R"(    %d2 = tile.dot %x, %y2, %acc2 : {aT} * {bT} -> {cT}
    %nb2 = tile.advance %pb2, [%bk, %c0] : {bP}
)",
                          fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT));
      yields += ", %d2, %nb2";
      n = 5;
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %bk iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, n, from, to, iterArgs, types, body, yields, types);
  }

  // The K loop of a register block of several rows over i8 panels: per
  // block of quantBlock K steps, the block's scale (and offset) rows are
  // loaded once, then kLoop's steps run on them (each converts B's row and
  // scales it in one FMA, shared by the block's rows). [from, to) covers
  // whole blocks (chunks are multiples of quantBlock).
  std::string int8BlockLoop(const std::string& res, const char* from, const char* to,
                            const std::vector<std::string>& inits, const std::vector<std::string>& ptrs, const char* ib,
                            const char* bIb, const std::string& nextLines) const {
    const int n = s.swiglu ? 5 : 3;
    std::string iterArgs = fmt::format("%oacc = {}, %opa = {}, %opb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP;
    std::string rows = blockRow("%bs0", "%bsc", "%sr") + (s.quantOffsets ? blockRow("%bo0", "%boff", "%sr") : "");
    std::vector<std::string> innerInits = {"%oacc"}, innerPtrs = {"%opa", "%opb"};
    if (s.swiglu) {
      iterArgs += fmt::format(", %oacc2 = {}, %opb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      rows += blockRow("%bs1", "%bsc2", "%sr") + (s.quantOffsets ? blockRow("%bo1", "%boff2", "%sr") : "");
      innerInits.push_back("%oacc2");
      innerPtrs.push_back("%opb2");
    }
    std::string yields;
    for (int i = 0; i < n; ++i) yields += fmt::format("{}%in#{}", i ? ", " : "", i);
    return fmt::format(R"(    {res}:{n} = scf.for %kb = {from} to {to} step %cqb iter_args({iterArgs}) -> ({types}) {{
    %kbi = arith.divui %kb, %cqb : index
    %sr = arith.addi %soff, %kbi : index
    %kbe = arith.addi %kb, %cqb : index
{rows}{inner}    scf.yield {yields} : {types}
    }}
)",
                       fmt::arg("res", res), fmt::arg("n", n), fmt::arg("from", from), fmt::arg("to", to),
                       fmt::arg("iterArgs", iterArgs), fmt::arg("types", types), fmt::arg("rows", rows),
                       fmt::arg("inner", kLoop("%in", "%kb", "%kbe", innerInits, innerPtrs, ib, bIb, nextLines, true, from)),
                       fmt::arg("yields", yields));
  }

  // The one-row (GEMV) K loop over i8 panels: per block of quantBlock K
  // steps the unscaled i8 products are summed first and the block's scales
  // applied once (not at every step: the decode GEMV is bound by these
  // instructions, not by memory). With offsets, A's values of the block
  // are summed too and times the offsets added once: sum_k x_k (s q_k + o)
  // = s sum_k x_k q_k + o sum_k x_k. [from, to) covers whole blocks.
  std::string int8RowLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                          const std::vector<std::string>& ptrs, const char* ib, const char* bIb) const {
    // 4 K steps an iteration into 4 partial sums (per weight): one row's
    // FMAs otherwise wait on each other (5 cycles each on Zen 1, while the
    // i8 panels stream 4x fewer bytes than f32 ones). Measured 2026-11-29
    // on the EPYC, the 124.7M Llama's Q8_0 decode step, with the block
    // scales applied once a block: 16.0 -> 13.9 ms.
    constexpr int kUnroll = 4;
    const int weights = s.swiglu ? 2 : 1, n = 1 + 2 * weights;
    const bool off = s.quantOffsets;
    std::string iterArgs = fmt::format("%acc = {}, %pa = {}, %pb = {}", inits[0], ptrs[0], ptrs[1]);
    std::string types = cT + ", " + aP + ", " + bP, innerTypes = aP + ", " + bP, inner = "%qa = %pa, %qb = %pb";
    if (s.swiglu) {
      iterArgs += fmt::format(", %acc2 = {}, %pb2 = {}", inits[1], ptrs[2]);
      types += ", " + cT + ", " + bP;
      innerTypes += ", " + bP;
      inner += ", %qb2 = %pb2";
    }
    for (int w = 0; w < weights; ++w)
      for (int u = 0; u < kUnroll; ++u) {
        inner += fmt::format(", %q{}_{} = %zero", w, u);
        innerTypes += ", " + cT;
      }
    if (off) {
      inner += ", %xs = %zeroA";
      innerTypes += ", " + aT;
    }
    // Sub-step u: A's column and each weight's row k + u, into partial u.
    std::string body, yields = "%na, %nb";
    const char* bPtr[2] = {"%qb", "%qb2"};
    for (int u = 0; u < kUnroll; ++u) {
      const std::string au = u ? fmt::format("%qa{}", u) : "%qa";
      if (u) body += fmt::format("        {} = tile.advance %qa, [%c0, %ku{}] : {}\n", au, u, aP);
      body += fmt::format("        %x{} = tile.load {}{} : {}\n", u, au, loadAttrs(ib, 1), aP);
      for (int w = 0; w < weights; ++w) {
        std::string bu = u ? fmt::format("{}_{}", bPtr[w], u) : bPtr[w];
        if (u) body += fmt::format("        {} = tile.advance {}, [%ku{}, %c0] : {}\n", bu, bPtr[w], u, bP);
        body += fmt::format(R"(        %y{w}_{u}q = tile.load {bu}{bib} : {bP}
        %y{w}_{u} = tile.convert %y{w}_{u}q : {bS} -> {bT}
        %d{w}_{u} = tile.dot %x{u}, %y{w}_{u}, %q{w}_{u} : {aT} * {bT} -> {cT}
)",
                            fmt::arg("w", w), fmt::arg("u", u), fmt::arg("bu", bu), fmt::arg("bib", loadAttrs(bIb, -1)),
                            fmt::arg("bP", bP), fmt::arg("bS", bS), fmt::arg("bT", bT), fmt::arg("aT", aT),
                            fmt::arg("cT", cT));
      }
    }
    // A's sum: the step's four values in pairs, so one add a step carries
    // the dependence from step to step.
    if (off)
      body += fmt::format(R"(        %xp0 = arith.addf %x0, %x1 : {aT}
        %xp1 = arith.addf %x2, %x3 : {aT}
        %xp = arith.addf %xp0, %xp1 : {aT}
        %xsn = arith.addf %xs, %xp : {aT}
)",
                          fmt::arg("aT", aT));
    for (int w = 0; w < weights; ++w)
      if (s.prefetchK)
        body += fmt::format("        %pf{w} = tile.advance {b}, [%pfk, %c0] : {bP}\n        tile.prefetch %pf{w} : {bP}\n",
                            fmt::arg("w", w), fmt::arg("b", bPtr[w]), fmt::arg("bP", bP));
    body += fmt::format("        %na = tile.advance %qa, [%c0, %ku{}] : {}\n        %nb = tile.advance %qb, [%ku{}, %c0] : {}\n",
                        kUnroll, aP, kUnroll, bP);
    if (s.swiglu) {
      body += fmt::format("        %nb2 = tile.advance %qb2, [%ku{}, %c0] : {}\n", kUnroll, bP);
      yields += ", %nb2";
    }
    for (int w = 0; w < weights; ++w)
      for (int u = 0; u < kUnroll; ++u) yields += fmt::format(", %d{}_{}", w, u);
    if (off) yields += ", %xsn";
    // After a block: the partials summed, scaled by the block's scales, added
    // (and A's sum times the offsets).
    std::string after, outer = "%an0, %in#0, %in#1";
    const char* scales[2] = {"%bsc", "%bsc2"};
    const char* offsets[2] = {"%boff", "%boff2"};
    const char* accs[2] = {"%acc", "%acc2"};
    const int first = s.swiglu ? 3 : 2;  // the partials follow the pointers, A's sum the partials
    for (int w = 0; w < weights; ++w) {
      const std::string sv = fmt::format("%sv{}", w), ov = fmt::format("%ov{}", w);
      after += fmt::format(R"(      %s{w}a = arith.addf %in#{p0}, %in#{p1} : {cT}
      %s{w}b = arith.addf %in#{p2}, %in#{p3} : {cT}
      %s{w} = arith.addf %s{w}a, %s{w}b : {cT}
{scale}      %ps{w} = arith.mulf %s{w}, %sv{w} : {cT}
      %a{o}{w} = arith.addf {acc}, %ps{w} : {cT}
)",
                           fmt::arg("w", w), fmt::arg("p0", first + w * kUnroll), fmt::arg("p1", first + w * kUnroll + 1),
                           fmt::arg("p2", first + w * kUnroll + 2), fmt::arg("p3", first + w * kUnroll + 3),
                           fmt::arg("cT", cT), fmt::arg("scale", blockRow(sv, scales[w], "%sr")),
                           fmt::arg("acc", accs[w]), fmt::arg("o", off ? "m" : "n"));
      if (off)
        after += blockRow(ov, offsets[w], "%sr") +
                 fmt::format("      %an{w} = tile.dot %in#{xs}, {ov}, %am{w} : {aT} * {bT} -> {cT}\n",
                             fmt::arg("w", w), fmt::arg("xs", first + weights * kUnroll), fmt::arg("ov", ov),
                             fmt::arg("aT", aT), fmt::arg("bT", bT), fmt::arg("cT", cT));
    }
    if (s.swiglu) outer = "%an0, %in#0, %in#1, %an1, %in#2";
    std::string consts;
    for (int u = 1; u <= kUnroll; ++u) consts += fmt::format("      %ku{} = arith.constant {} : index\n", u, u);
    return fmt::format(R"(    {res}:{n} = scf.for %kb = {from} to {to} step %cqb iter_args({iterArgs}) -> ({types}) {{
{consts}      %kbi = arith.divui %kb, %cqb : index
      %sr = arith.addi %soff, %kbi : index
      %kbe = arith.addi %kb, %cqb : index
      %in:{ni} = scf.for %k = %kb to %kbe step %ku{U} iter_args({inner}) -> ({innerTypes}) {{
{body}        scf.yield {yields} : {innerTypes}
      }}
{after}      scf.yield {outer} : {types}
    }}
)",
                       fmt::arg("res", res), fmt::arg("n", n), fmt::arg("from", from), fmt::arg("to", to),
                       fmt::arg("iterArgs", iterArgs), fmt::arg("types", types), fmt::arg("inner", inner),
                       fmt::arg("innerTypes", innerTypes), fmt::arg("ni", weights + 1 + weights * kUnroll + off),
                       fmt::arg("body", body), fmt::arg("yields", yields), fmt::arg("after", after),
                       fmt::arg("outer", outer), fmt::arg("consts", consts), fmt::arg("U", kUnroll));
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
