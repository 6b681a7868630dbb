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
#include "codegen/QuantText.h"

namespace strata::tile {

using gemm::GemmText;

std::string gemmSignature(const GemmKernelSpec& s) {
  std::string args;
  auto buffer = [&](const char* name, const std::string& dt) { args += fmt::format("%{}: !tile.ptr<{}>, ", name, dt); };
  if (s.int8Activations) {
    buffer("a", "i8");
    buffer("asc", "f32");
    buffer("asum", "f32");
  } else {
    buffer("a", s.dtype);
  }
  buffer("b", s.bDtype());
  // A quantized weight's scales and offsets (GemmKernelSpec::quantSuper).
  auto scaleBuffers = [&](const char* w) {
    if (!s.int8Blocks()) return;
    const std::string rows = s.quantSuper ? "f16" : "f32";
    buffer(fmt::format("bsc{}", w).c_str(), rows);
    if (s.quantSuper && s.quantSubScales) buffer(fmt::format("bss{}", w).c_str(), "i8");
    if (!s.quantOffsets) return;
    buffer(fmt::format("boff{}", w).c_str(), rows);
    if (s.quantSuper && s.quantSubScales) buffer(fmt::format("bos{}", w).c_str(), "i8");
  };
  scaleBuffers("");
  if (s.swiglu) buffer("b2", s.bDtype());
  if (s.swiglu) scaleBuffers("2");
  buffer("c", s.dtype);
  if (s.bias) buffer("bias", s.dtype);
  if (s.bias && s.swiglu) buffer("bias2", s.dtype);
  if (s.residual) buffer("res", s.dtype);
  args += "%M: index, %N: index, %K: index";
  if (s.tma) args += s.swiglu ? ", %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>, %bmap2: !tile.ptr<i8>"
                              : ", %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>";
  if (storesCByTma(s)) args += ", %cmap: !tile.ptr<i8>";
  if (s.splitKPrograms) args += ", %kSplits: index, %ws: !tile.ptr<f32>, %ctr: !tile.ptr<i32>";
  return args;
}

namespace gemm {

GemmText gemmText(const GemmKernelSpec& s) {
  const int64_t M = s.microM ? s.microM : s.blockM, N = s.blockN, K = s.blockK;
  GemmText t{s, fmt::format("tensor<{}x{}x{}>", M, K, s.dtype), fmt::format("tensor<{}x{}x{}>", K, N, s.dtype),
             fmt::format("tensor<{}x{}xf32>", M, N), "", "",
             s.tiling.empty() ? "" : fmt::format(" {{tiling = \"{}\"}}", s.tiling),
             fmt::format("tensor<{}x{}x{}>", M, N, s.dtype), fmt::format("{}x{}", M, N)};
  t.aP = "!tile.block_ptr<" + t.aT + ">";
  // i8 panels are read a quantization block of K pairs at a time
  // (GemmText::int8DotLoop); the grid form's blocks, widened into local
  // memory, are read in the dot's type.
  t.bS = s.int8Blocks() && s.packedB ? fmt::format("tensor<{}x{}xi8>", s.quantBlock / 2, (s.quantNibbles ? 1 : 2) * N)
                                     : fmt::format("tensor<{}x{}x{}>", K, N, s.int8Blocks() ? s.dtype : s.bDtype());
  t.bP = "!tile.block_ptr<" + t.bS + ">";
  return t;
}


}  // namespace gemm

namespace {

// The K blocks of quantized weights a staged kernel's K loop holds in
// registers ahead of their stores into local memory (stagedBody).
constexpr int64_t kQuantSets = 2;

// Grid form staged through workgroup-local memory (GemmKernelSpec::stages):
// the body of the branch taken when K (and N for [K, N] weights) is a
// multiple of 8. Local rows are padded by 8 elements (16 bytes), so the 8
// rows an ldmatrix reads fall in distinct banks. Buffer stage s holds A's
// rows [s BM, (s + 1) BM) of a [S BM, BK] array and B's block s of a
// [BK, S BN] ([N, K] weights: stored N-major, K contiguous) or [S BK, BN]
// ([K, N]) array. K block j is copied into stage j % S, S - 1 blocks ahead:
// at step i the wait leaves S - 2 groups in flight (block i has landed),
// the barrier makes it visible and frees the stage step i - 1 read, which
// then receives block i + S - 1.
// Warpgroup dots (GemmKernelSpec::groupDot) read swizzled buffers
// (tile.alloc's `swizzle`: rows of BK = 64 elements, no padding). With
// GemmKernelSpec::dotsInFlight (TMA copies) a step's dots stay in flight
// while the next step waits for its block and issues its own
// (tile.group_dot_wait {pending = 1}); a step issues its dots first, and
// once its wait has left one group in flight, the barrier frees the stage
// step i - 1 read and it receives block i + S - 1 (still S - 1 ahead).
std::string stagedBody(const GemmKernelSpec& s, const GemmText& t) {
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK, S = s.stages, P = s.groupDot ? K : K + 8, PN = N + 8;
  const bool inFlight = s.dotsInFlight;
  const int64_t ahead = S - 1;
  std::string dt = s.dtype;
  // Local array shapes and strides (constants defined below).
  std::string bLocal = s.weightsNK ? "[%sbk, %lbc], [%c1, %lp]" : "[%lbr, %sbn], [%lpn, %c1]";
  int64_t bSize = s.weightsNK ? S * N * P : S * K * PN;
  int bDim = s.weightsNK ? 0 : 1;
  // Local views of stage `st` (an index SSA name).
  auto aView = [&](const std::string& name, const std::string& st) {
    return fmt::format("    %{n}o = arith.muli {st}, %sbm : index\n"
                       "    %{n} = tile.make_block_ptr %sa, [%lar, %sbk], [%lp, %c1], [%{n}o, %c0] : !tile.ptr<{dt}> -> {aP}\n",
                       fmt::arg("n", name), fmt::arg("st", st), fmt::arg("dt", dt), fmt::arg("aP", t.aP));
  };
  // Local views of B operand `w` (0: b, 1: SwiGLU's b2; buffer %sb / %sb2).
  auto bView = [&](int w, const std::string& name, const std::string& st) {
    std::string off = s.weightsNK ? fmt::format("[%c0, %{}o]", name) : fmt::format("[%{}o, %c0]", name);
    return fmt::format("    %{n}o = arith.muli {st}, {step} : index\n"
                       "    %{n} = tile.make_block_ptr %sb{w}, {shape}, {off} : !tile.ptr<{dt}> -> {bP}\n",
                       fmt::arg("n", name), fmt::arg("st", st), fmt::arg("step", s.weightsNK ? "%sbn" : "%sbk"),
                       fmt::arg("w", w ? "2" : ""), fmt::arg("shape", bLocal), fmt::arg("off", off),
                       fmt::arg("dt", dt), fmt::arg("bP", t.bP));
  };
  const int nb = s.swiglu ? 2 : 1;  // B operands
  // Copies of K block `j` into stage `st`.
  // `ibA` / `ibB`: A's / B's copies lie inside their arrays (no bounds
  // arithmetic per run).
  // %{p}ko: the first K element of this program's K block `j` (its K
  // blocks start at %kbLo when K is split across programs).
  auto kOffset = [&](const std::string& p, const std::string& j) {
    return s.splitKPrograms ? fmt::format("    %{p}kj = arith.addi {j}, %kbLo : index\n"
                                          "    %{p}ko = arith.muli %{p}kj, %bk : index\n",
                                          fmt::arg("p", p), fmt::arg("j", j))
                            : fmt::format("    %{p}ko = arith.muli {j}, %bk : index\n", fmt::arg("p", p),
                                          fmt::arg("j", j));
  };
  // Block-quantized weights (int8Blocks): a K block's weight blocks (K / Q
  // a weight row) are loaded by the lanes (quantLoad), widened with their
  // scales (QuantBlockText) and stored into the block's stage of the local
  // buffer in the dot's type (quantStore), where the next barriers make
  // them visible to the dots as cp.async's copies are (the same pipeline;
  // A stays on cp.async). In the K loop the loads run kQuantSets K blocks
  // ahead of their stores, into registers the loop carries, so their
  // latency passes under the steps between. quantLoad loads the K block
  // from K element `ko` (an SSA name); `ib`: the weight rows inside N and K
  // whole blocks.
  const QuantBlockText qb{s.quantBlock, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, N};
  using Loaded = std::vector<QuantBlockText::Loaded>;  // weight w's block b at w K / Q + b
  auto quantLoad = [&](const std::string& p, const std::string& ko, bool ib, std::string& c) {
    const int64_t Q = s.quantBlock;
    const std::string intB = "!tile.block_ptr<" + qb.intT() + ">", colB = "!tile.block_ptr<" + qb.colT(qb.scaleDt()) + ">";
    const std::string colAttrs = ib ? " {in_bounds}" : "",
                      intAttrs = ib ? " {in_bounds, contiguous = 1 : i64, run = 2 : i64}" : "";
    c += fmt::format("    %{p}kq = arith.divui {ko}, %cq : index\n", fmt::arg("p", p), fmt::arg("ko", ko));
    Loaded out;
    for (int w = 0; w < nb; ++w)
      for (int64_t blk = 0; blk < K / Q; ++blk) {
        const std::string id = fmt::format("{}{}_{}", p, w, blk), sfx = w ? "2" : "";
        c += fmt::format(R"(    %{id}c = arith.constant {blk} : index
    %{id}kb = arith.addi %{p}kq, %{id}c : index
    %{id}kc = arith.muli %{id}kb, %cqb : index
    %{id}pi = tile.make_block_ptr %b{w}, [%N, %kbytes], [%kbytes, %c1], [%col, %{id}kc] : !tile.ptr<i8> -> {intB}
    %{id}ps = tile.make_block_ptr %bsc{w}, [%N, %kq], [%kq, %c1], [%col, %{id}kb] : !tile.ptr<{sdt}> -> {colB}
)",
                         fmt::arg("id", id), fmt::arg("blk", blk), fmt::arg("p", p), fmt::arg("w", sfx),
                         fmt::arg("intB", intB), fmt::arg("sdt", qb.scaleDt()), fmt::arg("colB", colB));
        if (s.quantOffsets)
          c += fmt::format("    %{id}po = tile.make_block_ptr %boff{w}, [%N, %kq], [%kq, %c1], [%col, %{id}kb] : "
                           "!tile.ptr<{sdt}> -> {colB}\n",
                           fmt::arg("id", id), fmt::arg("w", sfx), fmt::arg("sdt", qb.scaleDt()), fmt::arg("colB", colB));
        out.push_back(qb.load(c, id, "%" + id + "pi", "%" + id + "ps", s.quantOffsets ? "%" + id + "po" : "", colAttrs,
                              intAttrs));
      }
    return out;
  };
  auto quantStore = [&](const std::string& p, const Loaded& blocks, const std::string& st) {
    const int64_t Q = s.quantBlock;
    const std::string valT = fmt::format("tensor<{}x{}x{}>", N, qb.Wd(), dt);
    std::string c = fmt::format("    %{p}so = arith.muli {st}, %sbn : index\n", fmt::arg("p", p), fmt::arg("st", st));
    for (int w = 0; w < nb; ++w)
      for (int64_t blk = 0; blk < K / Q; ++blk) {
        const std::string id = fmt::format("w{}{}_{}", p, w, blk);
        const std::vector<std::string> halves = qb.widenLoaded(c, id, blocks[size_t(w * (K / Q) + blk)]);
        for (size_t h = 0; h < halves.size(); ++h)
          c += fmt::format(R"(    %{id}v{h} = tile.convert {x} : {F} -> {V}
    %{id}o{h} = arith.constant {off} : index
    %{id}d{h} = tile.make_block_ptr %sb{w}, [%lbc, %lp], [%lp, %c1], [%{p}so, %{id}o{h}] : !tile.ptr<{dt}> -> !tile.block_ptr<{V}>
    tile.store %{id}d{h}, %{id}v{h} {{in_bounds, contiguous = 1 : i64, run = 2 : i64}} : !tile.block_ptr<{V}>
)",
                           fmt::arg("id", id), fmt::arg("h", h), fmt::arg("x", halves[h]),
                           fmt::arg("F", fmt::format("tensor<{}x{}xf32>", N, qb.Wd())), fmt::arg("V", valT),
                           fmt::arg("off", blk * Q + int64_t(h) * qb.Wd()), fmt::arg("w", w ? "2" : ""),
                           fmt::arg("p", p), fmt::arg("dt", dt));
      }
    return c;
  };
  // The register sets the K loop carries (kQuantSets of them: K blocks j +
  // 1, ..., j + kQuantSets, where step i stores block j = i + S - 1); the
  // set the step stores is set 0. `fields`: a set's values (and types) in
  // the order the loop carries them; set d's are %rg<d>_<k>.
  auto fields = [&](Loaded& l) {
    std::vector<std::pair<std::string*, std::string>> f;
    for (QuantBlockText::Loaded& b : l) {
      f.push_back({&b.ints, qb.intT()});
      f.push_back({&b.scales, qb.colT(qb.scaleDt())});
      if (s.quantOffsets) f.push_back({&b.offsets, qb.colT(qb.scaleDt())});
    }
    return f;
  };
  auto carried = [&](int64_t set) {
    Loaded l(size_t(nb * (K / s.quantBlock)));
    int64_t k = 0;
    for (auto& [v, type] : fields(l)) *v = fmt::format("%rg{}_{}", set, k++);
    return l;
  };
  auto copy = [&](const std::string& p, const std::string& j, const std::string& st, bool ibA, bool ibB) {
    std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
    std::string c = kOffset(p, j) +
                    fmt::format("    %{p}ga = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %{p}ko] : !tile.ptr<{dt}> -> {aP}\n"
                                "{la}    tile.async_copy %{p}la, %{p}ga {{contiguous = 1 : i64{ib}}} : {aP}\n",
                                fmt::arg("p", p), fmt::arg("j", j), fmt::arg("dt", dt), fmt::arg("aP", t.aP),
                                fmt::arg("ib", ibA ? ", in_bounds" : ""),
                                fmt::arg("la", aView(p + "la", st)));
    if (s.int8Blocks()) {
      // The prologue's blocks straight through; the loop's from set 0.
      if (p == "p") return c + quantStore(p, quantLoad("qp", "%" + p + "ko", ibB, c), st);
      return c + quantStore(p, carried(0), st);
    }
    for (int w = 0; w < nb; ++w) {
      std::string q = p + (w ? "2" : "");
      c += fmt::format("    %{q}gb = tile.make_block_ptr %b{w}, [%K, %N], {bs}, [%{p}ko, %col] : !tile.ptr<{dt}> -> {bP}\n"
                       "{lb}    tile.async_copy %{q}lb, %{q}gb {{contiguous = {bd} : i64{ib}}} : {bP}\n",
                       fmt::arg("p", p), fmt::arg("q", q), fmt::arg("ib", ibB ? ", in_bounds" : ""), fmt::arg("w", w ? "2" : ""), fmt::arg("dt", dt),
                       fmt::arg("bP", t.bP), fmt::arg("bs", bStrides), fmt::arg("bd", bDim),
                       fmt::arg("lb", bView(w, q + "lb", st)));
    }
    return c;
  };
  std::string loads = fmt::format("{la}    %x = tile.load %ua {{in_bounds, contiguous = 1 : i64, run = 8 : i64}} : {aP}\n",
                                  fmt::arg("la", aView("ua", "%st")), fmt::arg("aP", t.aP));
  std::string swz = s.groupDot ? ", swizzle = 128 : i64" : "";
  std::string allocs = fmt::format("    %sa = tile.alloc {{size = {} : i64{}}} : !tile.ptr<{}>\n", S * M * P, swz, dt);
  std::string accs, types, yields;
  for (int w = 0; w < nb; ++w) {
    std::string q = w ? "2" : "";
    loads += fmt::format("{lb}    %y{q} = tile.load %ub{q} {{in_bounds, contiguous = {bd} : i64, run = 8 : i64}} : {bP}\n"
                         "    %d{q} = tile.dot %x, %y{q}, %acc{q}{hint} : {aT} * {bT} -> {cT}\n",
                         fmt::arg("lb", bView(w, "ub" + q, "%st")), fmt::arg("q", q), fmt::arg("bP", t.bP),
                         fmt::arg("bd", bDim), fmt::arg("hint", t.hint), fmt::arg("aT", t.aT), fmt::arg("bT", t.bT),
                         fmt::arg("cT", t.cT));
    allocs += fmt::format("    %sb{} = tile.alloc {{size = {} : i64{}}} : !tile.ptr<{}>\n", q, bSize, swz, dt);
    accs += fmt::format("{}%acc{} = %zero", w ? ", " : "", q);
    types += (w ? ", " : "") + t.cT;
    yields += fmt::format("{}%d{}", w ? ", " : "", q);
  }
  // The pipeline: S - 1 blocks copied ahead, then the K loop, each step
  // waiting for its block, freeing the stage the last step read (the
  // workgroup barrier) and refilling it with block i + S - 1. `copies(p,
  // j, st)` copies K block j into stage st; `open` starts a step (the wait
  // and anything before it), `close` ends a copy group, `after` follows a
  // step's copies.
  // `refillLast` (dots in flight): a step issues its dots first and
  // refills after its `tail` (the wait that leaves one group in flight,
  // so the stage step i - 1 read is free once every warp has passed it).
  using Copies = std::function<std::string(const std::string&, const std::string&, const std::string&)>;
  // `carry`: values the K loop carries besides the accumulators (the
  // quantized form's register sets), set up by `pre` before it.
  struct Carry {
    std::string pre, args, types, yields;
    int64_t count = 0;
  };
  auto pipelineText = [&](const Copies& copies, const std::string& open, const std::string& close,
                          const std::string& after, const std::string& tail = "", const std::string& drain = "",
                          bool refillLast = false, const Carry& carry = {}) {
    std::string refill = fmt::format(R"(    tile.barrier
    %j = arith.addi %i, %ns1 : index
    %jin = arith.cmpi slt, %j, %nk : index
    scf.if %jin {{
    %js = arith.remui %j, %ns : index
{lcopy}    }}
{close}{after})",
                                     fmt::arg("lcopy", copies("l", "%j", "%js")), fmt::arg("close", close),
                                     fmt::arg("after", after));
    return fmt::format(R"(    scf.for %s = %c0 to %ns1 step %c1 {{
    %pin = arith.cmpi slt, %s, %nk : index
    scf.if %pin {{
{pcopy}    }}
{close}    }}
{pre}    %sr:{nr} = scf.for %i = %c0 to %nk step %c1 iter_args({accs}) -> ({types}) {{
{open}{body}      scf.yield {yields} : {types}
    }}
{drain})",
                       fmt::arg("pcopy", copies("p", "%s", "%s")), fmt::arg("open", open), fmt::arg("close", close),
                       fmt::arg("body", refillLast ? loads + tail + refill : refill + loads + tail),
                       fmt::arg("nr", nb + carry.count), fmt::arg("pre", carry.pre), fmt::arg("accs", accs + carry.args),
                       fmt::arg("types", types + carry.types), fmt::arg("yields", yields + carry.yields),
                       fmt::arg("drain", drain));
  };
  // cp.async: commit groups; at step i the wait leaves S - 2 groups in
  // flight (block i has landed). `ibA` / `ibB`: A's / B's copies without
  // bounds arithmetic (when K is whole K blocks: A's for a program whose
  // rows lie inside M, B's for one whose columns lie inside N).
  // The quantized form's register sets: set d starts as K block S - 1 + d
  // (the last one where fewer), and step i loads block j + kQuantSets
  // (likewise) after storing set 0 (block j = i + S - 1).
  auto quantCarry = [&](bool ib) {
    Carry c;
    for (int64_t d = 0; d < kQuantSets; ++d) {
      const std::string p = fmt::format("ig{}x", d);
      c.pre += fmt::format("    %{p}j0 = arith.constant {b} : index\n    %{p}j = arith.minui %{p}j0, %nk1 : index\n"
                           "    %{p}ko = arith.muli %{p}j, %bk : index\n",
                           fmt::arg("p", p), fmt::arg("b", ahead + d));
      Loaded in = quantLoad(p, "%" + p + "ko", ib, c.pre), it = carried(d);
      const auto init = fields(in), iter = fields(it);
      for (size_t k = 0; k < init.size(); ++k) {
        c.args += fmt::format(", {} = {}", *iter[k].first, *init[k].first);
        c.types += ", " + init[k].second;
      }
      c.count += int64_t(init.size());
      if (d) for (const auto& [name, type] : iter) c.yields += ", " + *name;
    }
    return c;
  };
  auto quantAfter = [&](bool ib, Carry& c) {
    std::string t = "    %ngj0 = arith.addi %j, %cqs : index\n    %ngj = arith.minui %ngj0, %nk1 : index\n"
                    "    %ngko = arith.muli %ngj, %bk : index\n";
    Loaded next = quantLoad("ng", "%ngko", ib, t);
    for (const auto& [name, type] : fields(next)) c.yields += ", " + *name;
    return t;
  };
  auto pipeline = [&](bool ibA, bool ibB) {
    Carry carry;
    std::string after = "    %st = arith.remui %i, %ns : index\n";
    if (s.int8Blocks()) {
      carry = quantCarry(ibB);
      after += quantAfter(ibB, carry);
    }
    return pipelineText([&](const std::string& p, const std::string& j, const std::string& st) { return copy(p, j, st, ibA, ibB); },
                        fmt::format("    tile.async_wait {{pending = {} : i64}}\n", S - 2),
                        "    tile.async_commit\n", after, "", "", false, carry);
  };
  // TMA: stage st's copies are one arrival each on mbarrier st, whose
  // phase n holds K block n S + st, so step i waits for parity (i / S) mod
  // 2 of barrier i % S. Copies read zeros outside the arrays, so one
  // pipeline serves interior and edge programs.
  auto tmaCopy = [&](const std::string& p, const std::string& j, const std::string& st) {
    std::string c = kOffset(p, j) +
                    fmt::format("{la}"
                                "    tile.tma_copy %{p}la, %amap[%{p}ko, %row], %bars[{st}] : {aP}, !tile.ptr<i8>, !tile.ptr<i64>\n",
                                fmt::arg("p", p), fmt::arg("st", st), fmt::arg("aP", t.aP),
                                fmt::arg("la", aView(p + "la", st)));
    for (int w = 0; w < nb; ++w) {
      std::string q = p + (w ? "2" : "");
      c += fmt::format("{lb}    tile.tma_copy %{q}lb, %bmap{w}[%{p}ko, %col], %bars[{st}] : {bP}, !tile.ptr<i8>, !tile.ptr<i64>\n",
                       fmt::arg("lb", bView(w, q + "lb", st)), fmt::arg("q", q), fmt::arg("p", p),
                       fmt::arg("w", w ? "2" : ""), fmt::arg("st", st), fmt::arg("bP", t.bP));
    }
    return c;
  };
  auto tmaPipeline = [&]() {
    return fmt::format("    tile.mbarrier_init %bars {{arrivals = {} : i64}} : !tile.ptr<i64>\n", nb + 1) +
           pipelineText(tmaCopy,
                        "    %st = arith.remui %i, %ns : index\n    %round = arith.divui %i, %ns : index\n"
                        "    %parity = arith.remui %round, %c2 : index\n"
                        "    tile.mbarrier_wait %bars[%st], %parity : !tile.ptr<i64>\n",
                        "", "", inFlight ? "    tile.group_dot_wait {pending = 1 : i64}\n" : "",
                        inFlight ? "    tile.group_dot_wait {pending = 0 : i64}\n" : "", inFlight);
  };
  std::string acc2 = s.swiglu ? "%sr#1" : "";
  // The block-quantized weights' constants (dequantCopy): Q, a block's
  // bytes, K's blocks and a weight row's bytes.
  const std::string quantConsts =
      !s.int8Blocks() ? ""
                      : fmt::format(R"(    %cq = arith.constant {Q} : index
    %cqb = arith.constant {QB} : index
    %kq = arith.divui %K, %cq : index
    %kbytes = arith.muli %kq, %cqb : index
    %cqs = arith.constant {D} : index
)",
                                    fmt::arg("Q", s.quantBlock), fmt::arg("QB", s.quantNibbles ? s.quantBlock / 2 : s.quantBlock),
                                    fmt::arg("D", kQuantSets)) +
                            QuantBlockText{s.quantBlock, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, N}.constants();
  std::string consts = quantConsts + fmt::format(R"(    %sbm = arith.constant {BM} : index
    %sbn = arith.constant {BN} : index
    %sbk = arith.constant {BK} : index
    %lar = arith.constant {LAR} : index
    %lbc = arith.constant {LBC} : index
    %lbr = arith.constant {LBR} : index
    %lp = arith.constant {P} : index
    %lpn = arith.constant {PN} : index
    %ns = arith.constant {S} : index
    %ns1 = arith.constant {S1} : index
{nk})",
                                   fmt::arg("BM", M), fmt::arg("BN", N), fmt::arg("BK", K),
                     fmt::arg("LAR", S * M), fmt::arg("LBC", S * N), fmt::arg("LBR", S * K), fmt::arg("P", P),
                                   fmt::arg("PN", PN), fmt::arg("S", S), fmt::arg("S1", ahead),
                                   // K blocks: all of them, or this program's share.
                                   fmt::arg("nk", s.splitKPrograms ? "    %nk = arith.addi %nkS, %c0 : index\n"
                                                                   : "    %bk1 = arith.subi %bk, %c1 : index\n"
                                                                     "    %kb0 = arith.addi %K, %bk1 : index\n"
                                                                     "    %nk = arith.divui %kb0, %bk : index\n"
                                                                     "    %nk1 = arith.subi %nk, %c1 : index\n"));
  std::string fast = t.finish("sf", "%sr#0", acc2, " {in_bounds}", storesCByTma(s)),
              edge = t.finish("se", "%sr#0", acc2, "");
  if (s.tma) {
    // Kernels that store C by TMA store a row-edge block's (columns inside
    // N: every program where M is below one block) by TMA too, the map
    // dropping its rows past M: stored element by element, checked, a
    // 128 x 128 SwiGLU at 96-112 rows trailed 128 rows by 3-6 us with
    // every row of A loaded (H100, 2026-11-25, docs/cuda.md of bd79745 "Padded
    // activations and row-edge TMA stores").
    if (storesCByTma(s))
      edge = fmt::format("    scf.if %colsIn {{\n{}    }} else {{\n{}    }}\n",
                         t.finish("sw", "%sr#0", acc2, "", true), edge);
    return fmt::format(R"({allocs}    %bars = tile.alloc {{size = {S} : i64}} : !tile.ptr<i64>
    %c2 = arith.constant 2 : index
{consts}{pipeline}    scf.if %interior {{
{fast}    }} else {{
{edge}    }}
)",
                       fmt::arg("allocs", allocs), fmt::arg("S", S), fmt::arg("consts", consts),
                       fmt::arg("pipeline", tmaPipeline()), fmt::arg("fast", fast), fmt::arg("edge", edge));
  }
  // Three pipelines: every copy unchecked (interior programs, K whole),
  // only A's checked (columns inside N, rows not: every program when M is
  // below the block's rows, as at decode; K whole), all checked.
  return fmt::format(R"({allocs}{consts}    %kbr = arith.remui %K, %bk : index
    %kwhole = arith.cmpi eq, %kbr, %c0 : index
    %full = arith.andi %interior, %kwhole : i1
    %colsWhole = arith.andi %colsIn, %kwhole : i1
    scf.if %full {{
{inside}{fast}    }} else {{
    scf.if %colsWhole {{
{rowEdge}{edge}    }} else {{
{checked}    scf.if %interior {{
{fast}    }} else {{
{edge}    }}
    }}
    }}
)",
                     fmt::arg("allocs", allocs), fmt::arg("consts", consts), fmt::arg("inside", pipeline(true, true)),
                     fmt::arg("rowEdge", pipeline(false, true)), fmt::arg("checked", pipeline(false, false)),
                     fmt::arg("fast", fast), fmt::arg("edge", edge));
}

// CPU form: panel-packed weights, programs of several register blocks, K

}  // namespace

std::string emitGemmKernel(const GemmKernelSpec& s) {
  StorageText{s.dtype}.check("gemm");
  if (s.packedB) return gemm::emitPackedGemm(s);
  if (s.gemv) return emitGemvKernel(s);
  // Block-quantized weights in the grid form: staged only (dequantCopy
  // widens them into the local buffers), [N, K], mma.sync dots on
  // cp.async'd A. K is whole blocks (the launcher checks), so always a
  // multiple of 8: the staged path is the only one.
  const bool quant = s.int8Blocks();
  if (quant && (!s.weightsNK || s.stages < 2 || s.groupDot || s.tma || s.splitKPrograms || s.quantSubScales ||
                !(s.quantBlock == 16 || s.quantBlock == 32) || (s.quantSuper && s.quantSuper != s.quantBlock) ||
                s.blockK % s.quantBlock || !StorageText{s.dtype}.sixteenBit()))
    fail("gemm '{}': block-quantized weights in the grid form take [N, K] weights in blocks of 16 or 32 (f16 scales "
         "a block or f32), K steps of whole blocks, 16-bit storage, staging in 2 buffers or more, no warpgroup dots, "
         "TMA or K split",
         s.name);
  if (!quant && !s.weightDtype.empty() && s.weightDtype != s.dtype)
    fail("gemm kernel: weights of another type ({} under {}) are the panel-packed (CPU), GEMV and quantized forms' only",
         s.weightDtype, s.dtype);
  if (s.gelu) fail("gemm '{}': the GELU epilogue is the packed (CPU) and GEMV forms' only", s.name);
  // B's view is [K, N] either way; for [N, K] storage it is transposed
  // (strides [1, K]).
  std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK;
  GemmText t = gemm::gemmText(s);
  std::string args = gemmSignature(s);

  std::vector<std::string> zeros = {"%zero", "%zero"}, ptrs = {"%ap", "%bp", "%bp2"};
  const char* kStart = s.splitKPrograms ? "%klo" : "%c0";
  std::string b2 = s.swiglu && !quant ? fmt::format("  %bp2 = tile.make_block_ptr %b2, [%K, %N], {}, [{}, %col] : !tile.ptr<{}> -> {}\n",
                                          bStrides, kStart, s.dtype, t.bP)
                            : "";
  // Interior programs (the whole C block inside C) run the full K blocks
  // without bounds checks, then the K tail checked; programs whose columns
  // are inside but rows are not (every decode program when M < blockM)
  // check only A's loads and C's accesses in the full K blocks; the other
  // edge programs check everything. Ragged shapes thus cost checks only
  // where they are ragged.
  const char* ib = " {in_bounds}";
  // The K range the loops walk: all of K, or this program's share of the K
  // blocks (K split across programs: [%klo, %khi); %kfullS: where its whole
  // blocks end).
  const bool split = s.splitKPrograms;
  const char *kFrom = split ? "%klo" : "%c0", *kTo = split ? "%khi" : "%K", *kWhole = split ? "%kfullS" : "%kfull";
  // (The quantized form has no unstaged path.)
  std::string fast = quant ? "" : t.kLoop("%f", kFrom, kWhole, zeros, ptrs, ib, ib) +
                     t.kLoop("%ft", kWhole, kTo, {"%f#0", "%f#3"}, {"%f#1", "%f#2", "%f#4"}, "", "") +
                     t.finish("f", "%ft#0", "%ft#3", " {in_bounds}");
  std::string rowEdge = quant ? "" : t.kLoop("%r", kFrom, kWhole, zeros, ptrs, "", ib) +
                        t.kLoop("%rt", kWhole, kTo, {"%r#0", "%r#3"}, {"%r#1", "%r#2", "%r#4"}, "", "") +
                        t.finish("r", "%rt#0", "%rt#3", "");
  std::string edge = quant ? "" : t.kLoop("%e", kFrom, kTo, zeros, ptrs, "", "") + t.finish("e", "%e#0", "%e#3", "");
  // 16-bit storage: the fast path's 4-element loads along K need K % 4 = 0.
  std::string kEven = t.st.sixteenBit() ? R"(  %c4 = arith.constant 4 : index
  %kRem = arith.remui %K, %c4 : index
  %kEven = arith.cmpi eq, %kRem, %c0 : index
  %fast = arith.andi %interior, %kEven : i1
  %colsFast = arith.andi %colsIn, %kEven : i1
)"
                                     : "  %colsFast = arith.andi %colsIn, %colsIn : i1\n";

  // K split across programs: program (pm, pn, pk) takes K [klo, khi),
  // whole K blocks ([kbLo, kbLo + nkS)), ceil(K blocks / kSplits) each (the
  // last ones fewer or none); %gridN numbers the C blocks for the counters.
  const std::string kSplitRange = R"(  %pk = tile.program_id 2
  %bkm1 = arith.subi %bk, %c1 : index
  %kbAll0 = arith.addi %K, %bkm1 : index
  %kbAll = arith.divui %kbAll0, %bk : index
)" + splitShare("k", "%kbAll", "%kSplits", "%pk", "%bk", "%K") +
                                  R"(  %kbLo = arith.divui %klo, %bk : index
  %kSpan = arith.subi %khi, %klo : index
  %kSpanUp = arith.addi %kSpan, %bkm1 : index
  %nkS = arith.divui %kSpanUp, %bk : index
  %kfullS0 = arith.minui %kfull, %khi : index
  %kfullS = arith.maxui %kfullS0, %klo : index
  %bnm1 = arith.subi %bn, %c1 : index
  %gridN0 = arith.addi %N, %bnm1 : index
  %gridN = arith.divui %gridN0, %bn : index
)";
  // Staged kernels take the unstaged body only where the copies' 16-byte
  // runs would not be aligned.
  std::string body = fmt::format(R"(  scf.if {fastCond} {{
{fast}  }} else {{
  scf.if %colsFast {{
{rowEdge}  }} else {{
{edge}  }}
  }}
)",
                                 fmt::arg("fastCond", t.st.sixteenBit() ? "%fast" : "%interior"),
                                 fmt::arg("fast", fast), fmt::arg("rowEdge", rowEdge), fmt::arg("edge", edge));
  if (s.stages) {
    if (!t.st.sixteenBit() || s.stages < 2)
      fail("gemm '{}': staging through local memory takes 16-bit storage and at least 2 stages", s.name);
    if (s.groupDot && (!s.weightsNK || s.blockK != 64 || s.numWarps % 4 != 0 ||
                       s.blockM != 16 * s.numWarps || s.tiling != "horizontal"))
      fail("gemm '{}': warpgroup dots take [N, K] weights, K blocks of 64 and 16 rows per warp in the horizontal "
           "tiling", s.name);
    if (s.tma && (!s.groupDot || s.blockM > 256 || s.blockN > 256))
      fail("gemm '{}': TMA copies stage warpgroup-dot operands in boxes of at most 256 rows", s.name);
    if (s.dotsInFlight && !s.tma)
      fail("gemm '{}': dots left in flight take TMA copies (cp.async waits for its copies by count)", s.name);
    // 16-byte runs: K (and N with [K, N] weights) a multiple of 8.
    std::string aligned = "  %c8 = arith.constant 8 : index\n  %k8r = arith.remui %K, %c8 : index\n";
    aligned += s.weightsNK ? "  %staged = arith.cmpi eq, %k8r, %c0 : index\n"
                           : "  %n8r = arith.remui %N, %c8 : index\n  %kn8 = arith.ori %k8r, %n8r : index\n"
                             "  %staged = arith.cmpi eq, %kn8, %c0 : index\n";
    body = quant ? stagedBody(s, t) : aligned + "  scf.if %staged {\n" + stagedBody(s, t) + "  } else {\n" + body + "  }\n";
  }

  // The program's rows [row, row + BM). With TMA, a last row block that
  // would reach past M (M >= BM) moves up to end at M: TMA fills a box's
  // rows outside A with zeros at about the cost of loading them (H100,
  // 2026-11-23: K = 14336, N = 4096, 105 us at 129 rows against 81 at
  // 192; docs/cuda.md of bd79745 "The prefill class at 129-256 rows"), so the block
  // reads only rows of A and is interior. Rows it shares with the block
  // before are computed by both programs with the same instructions on
  // the same inputs and stored twice with the same bits (C aliases
  // neither A nor the residual).
  const std::string rows = s.tma ? R"(  %row0 = arith.muli %pm, %bm : index
  %rowEnd0 = arith.addi %row0, %bm : index
  %past = arith.cmpi sgt, %rowEnd0, %M : index
  %lastRow = arith.subi %M, %bm : index
  %fits = arith.cmpi sge, %lastRow, %c0 : index
  %shift = arith.andi %past, %fits : i1
  %row = arith.select %shift, %lastRow, %row0 : index
)"
                                 : "  %row = arith.muli %pm, %bm : index\n";
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64{minBlocks}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
{rows}  %rowEnd = arith.addi %row, %bm : index
  %rowsIn = arith.cmpi sle, %rowEnd, %M : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %interior = arith.andi %rowsIn, %colsIn : i1
  %cpair = arith.constant 2 : index
  %npr = arith.remui %N, %cpair : index
  %nPairs = arith.cmpi eq, %npr, %c0 : index
{kEven}  %kblocks = arith.divui %K, %bk : index
  %kfull = arith.muli %kblocks, %bk : index
{kRange}  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, {kStart}] : !tile.ptr<{dt}> -> {aP}
{bp}{b2}  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<{dt}> -> !tile.block_ptr<{cS}>
  %zero = arith.constant dense<0.0> : {cT}
{body}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("W", s.numWarps),
                     fmt::arg("minBlocks", s.minBlocksPerSM
                                               ? fmt::format(", tile.min_blocks_per_sm = {} : i64", s.minBlocksPerSM)
                                               : std::string()),
                     fmt::arg("BM", M),
                     fmt::arg("BN", N), fmt::arg("BK", K), fmt::arg("aP", t.aP), fmt::arg("bP", t.bP),
                     fmt::arg("bp", quant ? std::string()
                                          : fmt::format("  %bp = tile.make_block_ptr %b, [%K, %N], {}, [{}, %col] : "
                                                        "!tile.ptr<{}> -> {}\n",
                                                        bStrides, kStart, s.dtype, t.bP)),
                     fmt::arg("b2", b2), fmt::arg("cT", t.cT), fmt::arg("cS", t.cS),
                     fmt::arg("dt", s.dtype), fmt::arg("kEven", kEven), fmt::arg("body", body),
                     fmt::arg("kStart", kStart), fmt::arg("kRange", split ? kSplitRange : std::string()),
                     fmt::arg("rows", rows));
}


}  // namespace strata::tile
