#include "codegen/GemmKernel.h"

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include <vector>

#include "codegen/UArch.h"
#include "ops/error.h"
#include "codegen/GemmText.h"

namespace strata::tile::gemm {

// walked in chunks (see GemmKernelSpec::microM / chunkK).
std::string emitPackedGemm(const GemmKernelSpec& s) {
  if (s.dtype != "f32") fail("gemm kernel: panel-packed (CPU) kernels are f32 only (got {})", s.dtype);
  if (!s.int8Blocks()) StorageText{s.bDtype()}.check("gemm (weights)");
  else if (s.quantBlock < 2 || s.quantBlock % 2 || s.chunkK % s.quantBlock ||
           (s.quantSuper && s.quantSuper % s.quantBlock) || (s.quantSubScales && !s.quantSuper))
    fail("gemm kernel: i8 weight blocks of {} values (whole K pairs, dividing the K chunks of {} and the scale "
         "super-blocks of {})",
         s.quantBlock, s.chunkK, s.quantSuper);
  if (s.microM <= 0 || s.blockM % s.microM != 0 || s.blockK != 1)
    fail("gemm kernel: program rows {} must be whole register blocks of {} rows, and K steps 1 (got {})", s.blockM,
         s.microM, s.blockK);
  // 6-row register blocks (t6), and 4-row blocks (t4) for remainders of 2
  // and 4 rows (8 rows as two 4-row blocks instead of a 6-row block and a
  // cut 6-row block). The lambdas below emit for the block shape *cur.
  GemmText t6 = gemmText(s);
  GemmKernelSpec s4 = s;
  s4.microM = 4;
  GemmText t4 = gemmText(s4);
  t4.zero = "%zero4";
  const bool small = s.microM == 6;
  const GemmText* cur = &t6;
  const char* ib = " {in_bounds}";
  std::vector<std::string> ptrs = {"%ap", "%bp", "%bp2"};
  // The register block's pointers %ap, %bp (%bp2), %cp at rows %row, K
  // offset `k`: B is program column block pn's panel, rows [pn K, pn K + K)
  // of a [panels K, blockN] array (zero-padded: no column edge); C's view
  // has `cRows` rows.
  // (i8 panels: GemmText::int8DotLoop makes its own A and B pointers.)
  auto blockPtrs = [&](const char* k, const char* cRows = "%M") {
    std::string p = fmt::format("    %cp = tile.make_block_ptr %c, [{}, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<{}>\n",
                                cRows, cur->cS);
    if (s.int8Blocks()) return p;
    p = fmt::format(R"(    %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, {k}] : !tile.ptr<f32> -> {aP}
    %bo = arith.addi %koff, {k} : index
    %bp = tile.make_block_ptr %b, [%kend, %bn], [%bn, %c1], [%bo, %c0] : !tile.ptr<{bdt}> -> {bP}
)",
                    fmt::arg("k", k), fmt::arg("aP", cur->aP), fmt::arg("bP", cur->bP), fmt::arg("bdt", s.bDtype())) + p;
    if (s.swiglu)
      p += fmt::format(
          "    %bp2 = tile.make_block_ptr %b2, [%kend, %bn], [%bn, %c1], [%bo, %c0] : !tile.ptr<{}> -> {}\n",
          s.bDtype(), cur->bP);
    return p;
  };
  // The whole K of one register block from zeros, then the epilogue. `aIb`
  // marks A's loads in bounds (all but a remainder's masked rows), `cIb`
  // C's (and bias / residual) accesses. K steps of 1 never cross K, so B's
  // loads are always whole.
  auto wholeK = [&](const std::string& p, const char* aIb, const char* cIb) {
    return cur->kLoop("%" + p, "%c0", "%K", {cur->zero, cur->zero}, ptrs, aIb, ib) +
           cur->epilogue(p, cur->accResult("%" + p, 0), cur->accResult("%" + p, 1), cIb);
  };
  // One chunk [%kc, %kce) of one register block, from zeros (the first
  // chunk) or from the partial sums stored in C; the last chunk runs the
  // epilogue, the others store the partial sums.
  auto chunk = [&](const std::string& p, const std::string& init, const char* aIb, const char* cIb) {
    std::string lines, start;
    if (s.prefetchNext) {
      // This block's share of the next chunk's lines (a contiguous run:
      // the hardware prefetchers follow it too): blocks start (row - r0) *
      // kcs / microM lines in (6-row blocks tile the chunk), capped so every
      // block prefetches inside the next chunk; blocks past the cap
      // prefetch lines already in L2 (measured cheaper than a second loop
      // without prefetches, whose extra live registers spilled; lines one
      // per B row, strided, lost 5 %; 2026-11-21).
      start = fmt::format(R"(    %{p}o = arith.subi %row, %r0 : index
    %{p}ol = arith.muli %{p}o, %linesPerRow : index
    %{p}oc = arith.minsi %{p}ol, %lastLines : index
    %{p}of = arith.muli %{p}oc, %lw : index
    %{p}ls = arith.addi %nextBase, %{p}of : index
)",
                          fmt::arg("p", p));
      lines = "%" + p + "ls";
    }
    return start + cur->kLoop("%" + p, "%kc", "%kce", {init}, ptrs, aIb, ib, lines) +
           fmt::format("      scf.if %last {{\n{}      }} else {{\n        tile.store %cp, {}{} : !tile.block_ptr<{}>\n      }}\n",
                       cur->epilogue(p, cur->accResult("%" + p, 0), "", cIb), cur->accResult("%" + p, 0), cIb, cur->cS);
  };
  // The program's rows [r0, r1): a remainder of fewer than microM rows
  // first, then whole register blocks. The remainder is a whole block at
  // r0 whose C view ends at its last row, so the rows it shares with the
  // next block are computed but neither read nor written (C's accesses are
  // masked, A's loads are not); only with M < microM are A's rows masked.
  // With 6-row blocks (`small`), a remainder of 4 rows runs as one 4-row
  // block and one of 2 rows (after at least one 6-row block) as two: no
  // rows computed for nothing (%use4; the 6-row blocks then start at
  // %fullStart). `work(p, aIb, cIb)` is one block's work at %row, `pre(cIb)`
  // what comes before it (both for the block shape *cur).
  auto rows = [&](const char* k, const std::function<std::string(const std::string&, const char*, const char*)>& work,
                  const std::string& p, const std::function<std::string(const char*)>& pre, const char* cIb) {
    std::string cut = fmt::format(R"(  scf.if %hasRem {{
    %row = arith.addi %r0, %c0 : index
{remPtrs}{preRem}    scf.if %aWhole {{
{remWhole}    }} else {{
{remMasked}    }}
  }}
)",
                                  fmt::arg("remPtrs", blockPtrs(k, "%remEnd")), fmt::arg("preRem", pre("")),
                                  fmt::arg("remWhole", work(p + "r", ib, "")),
                                  fmt::arg("remMasked", work(p + "m", "", "")));
    std::string full = fmt::format(R"(  scf.for %rb = %c0 to %nfullE step %c1 {{
    %rbo = arith.muli %rb, %mr : index
    %row = arith.addi %fullStart, %rbo : index
{ptrs}{pre}{work}  }}
)",
                                   fmt::arg("ptrs", blockPtrs(k)), fmt::arg("pre", pre(cIb)),
                                   fmt::arg("work", work(p, ib, cIb)));
    if (!small) return cut + full;
    cur = &t4;
    std::string quads = fmt::format(R"(  scf.if %use4 {{
  scf.for %q = %c0 to %n4 step %c1 {{
    %qo = arith.muli %q, %c4 : index
    %row = arith.addi %r0, %qo : index
{ptrs}{pre}{work}  }}
  }} else {{
{cut}  }}
)",
                                    fmt::arg("ptrs", blockPtrs(k)), fmt::arg("pre", pre(cIb)),
                                    fmt::arg("work", work(p + "q", ib, cIb)), fmt::arg("cut", cut));
    cur = &t6;
    return quads + full;
  };
  auto none = [](const char*) { return std::string(); };
  auto body = [&](const char* cIb) {
    if (s.chunkK && !s.swiglu) {
      // Per chunk, every block of the program (first from zeros, later from
      // the partial sums in C).
      std::string fromZero = rows("%kc", [&](const std::string& p, const char* a, const char* c) {
        return chunk(p, cur->zero, a, c);
      }, "g", none, cIb);
      std::string fromC = rows("%kc", [&](const std::string& p, const char* a, const char* c) {
        return chunk(p, "%cv", a, c);
      }, "h", [&](const char* c) {
        return fmt::format("    %cv = tile.load %cp{} : !tile.block_ptr<{}>\n", c, cur->cS);
      }, cIb);
      std::string next;
      if (s.prefetchNext)
        next = "    %nextRow = arith.addi %koff, %kce : index\n"
               "    %nextBase0 = arith.muli %nextRow, %bn : index\n"
               "    %nextBase = arith.divui %nextBase0, %bden : index\n";
      return fmt::format(R"(  scf.for %kc = %c0 to %K step %kcs {{
    %kce0 = arith.addi %kc, %kcs : index
    %kce = arith.minsi %kce0, %K : index
{next})",
                         fmt::arg("next", next)) + fmt::format(R"(    %first = arith.cmpi eq, %kc, %c0 : index
    %last = arith.cmpi eq, %kce, %K : index
    scf.if %first {{
{fromZero}    }} else {{
{fromC}    }}
  }}
)",
                         fmt::arg("fromZero", fromZero), fmt::arg("fromC", fromC));
    }
    return rows("%c0", [&](const std::string& p, const char* a, const char* c) { return wholeK(p, a, c); }, "w", none,
                cIb);
  };

  // Where the 6-row blocks start and how many there are (after 4-row
  // blocks or a cut block, see `rows`).
  std::string blocks = small ? fmt::format(R"(  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero4 = arith.constant dense<0.0> : {cT4}
  %rem4 = arith.cmpi eq, %rem, %c4 : index
  %rem2 = arith.cmpi eq, %rem, %c2 : index
  %hasFull = arith.cmpi sgt, %nfull, %c0 : index
  %split2 = arith.andi %rem2, %hasFull : i1
  %use4 = arith.ori %rem4, %split2 : i1
  %n4 = arith.select %split2, %c2, %c1 : index
  %q4 = arith.muli %n4, %c4 : index
  %quadEnd = arith.addi %r0, %q4 : index
  %fullStart = arith.select %use4, %quadEnd, %remEnd : index
  %nfullLess = arith.subi %nfull, %c1 : index
  %nfullE = arith.select %split2, %nfullLess, %nfull : index
)",
                                           fmt::arg("cT4", t4.cT))
                             : "  %fullStart = arith.addi %remEnd, %c0 : index\n"
                               "  %nfullE = arith.addi %nfull, %c0 : index\n";
  // Next-chunk prefetch: a chunk has kcs * bn / lw lines of lw floats.
  std::string nextConsts;
  if (s.prefetchNext) {
    // (Offsets in bytes of the panels: nibble panels hold two K steps a
    // byte.)
    const int64_t bden = s.quantNibbles ? 2 : 1, lines = s.chunkK * s.blockN / bden / s.prefetchNext;
    nextConsts = fmt::format(R"(  %lw = arith.constant {LW} : index
  %linesPerRow = arith.constant {LPR} : index
  %lastLines = arith.constant {LAST} : index
  %bden = arith.constant {BDEN} : index
  %bTotal0 = arith.muli %kend, %bn : index
  %bTotal = arith.divui %bTotal0, %bden : index
)",
                             fmt::arg("LW", s.prefetchNext), fmt::arg("LPR", s.chunkK / s.microM),
                             fmt::arg("LAST", std::max<int64_t>(0, lines - s.chunkK)), fmt::arg("BDEN", bden));
  }
  // Super-block scale rows (GemmKernelSpec::quantSuper): [K / S, blockN]
  // a panel, from row %ssoff.
  const std::string superConsts = s.quantSuper ? fmt::format(R"(  %csup = arith.constant {S} : index
  %ksup = arith.divui %K, %csup : index
  %ssoff = arith.muli %pn, %ksup : index
  %ssend = arith.addi %ssoff, %ksup : index
)",
                                                               fmt::arg("S", s.quantSuper))
                                               : "";
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %mr = arith.constant {MR} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %kcs = arith.constant {KC} : index
  %pfk = arith.constant {PFK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %mr1 = arith.subi %mr, %c1 : index
  %mbs0 = arith.addi %M, %mr1 : index
  %mBlocks = arith.divui %mbs0, %mr : index
  %bm1 = arith.subi %bm, %c1 : index
  %np0 = arith.addi %M, %bm1 : index
  %nprog = arith.divui %np0, %bm : index
  %np1 = arith.subi %nprog, %c1 : index
  %per0 = arith.addi %mBlocks, %np1 : index
  %perBlocks = arith.divui %per0, %nprog : index
  %per = arith.muli %perBlocks, %mr : index
  %after = arith.subi %np1, %pm : index
  %back = arith.muli %after, %per : index
  %r1 = arith.subi %M, %back : index
  %r0u = arith.subi %r1, %per : index
  %r0 = arith.maxsi %r0u, %c0 : index
  %nrows0 = arith.subi %r1, %r0 : index
  %nrows = arith.maxsi %nrows0, %c0 : index
  %nfull = arith.divui %nrows, %mr : index
  %done = arith.muli %nfull, %mr : index
  %rem = arith.subi %nrows, %done : index
  %hasRem = arith.cmpi sgt, %rem, %c0 : index
  %remEnd = arith.addi %r0, %rem : index
  %aWhole = arith.cmpi sge, %M, %mr : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %koff = arith.muli %pn, %K : index
  %kend = arith.addi %koff, %K : index
{quantConsts}{nextConsts}  %zero = arith.constant dense<0.0> : {cT}
{blocks}  scf.if %colsIn {{
{inside}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("BM", s.blockM),
                     fmt::arg("MR", s.microM), fmt::arg("BN", s.blockN), fmt::arg("BK", s.blockK),
                     fmt::arg("KC", s.chunkK ? s.chunkK : s.blockK),
                     // i8 panels: in pair rows, at least a quantization block ahead
                     // (GemmText::int8DotLoop prefetches once a block).
                     fmt::arg("PFK", s.int8Blocks() ? std::max(s.prefetchK, s.quantBlock) / 2 : s.prefetchK),
                     fmt::arg("cT", t6.cT),
                     fmt::arg("blocks", blocks), fmt::arg("inside", body(ib)), fmt::arg("edge", body("")),
                     fmt::arg("nextConsts", nextConsts),
                     fmt::arg("quantConsts", s.int8Blocks() ? fmt::format(R"(  %cqb = arith.constant {Q} : index
  %cp2 = arith.constant 2 : index
  %bnp = arith.constant {BNP} : index
  %kendp = arith.divui %kend, %cp2 : index
  %kblocks = arith.divui %K, %cqb : index
  %soff = arith.muli %pn, %kblocks : index
  %send = arith.addi %soff, %kblocks : index
{superConsts})",
                                                                   fmt::arg("Q", s.quantBlock),
                                                                   fmt::arg("BNP", (s.quantNibbles ? 1 : 2) * s.blockN),
                                                                   fmt::arg("superConsts", superConsts)) : ""));
}

}  // namespace strata::tile::gemm
