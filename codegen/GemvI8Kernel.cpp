// The quantized GEMV's integer form (GemmKernelSpec::int8Activations):
// A's rows come quantized to i8 per block of the weights' (QuantizeKernel.h:
// integers, scales, block sums d sum(q)), and each block of a weight row is
// multiplied with them in four-way byte dot products (tile.segment_dot:
// dp4a on sm_90), whose i32 sum is scaled once a block by the product of
// the two scales, plus the weight block's offset times A's block sum. A
// lane holds one block row of a step ([KB, Wd] tiles, a lane vector of Wd
// bytes: Q values, or Q / 2 bytes a nibble half), so a block's dot
// products, its scaling and its accumulation stay in that lane; the
// [KB, 1] sums become [1, KB] rows for the GEMV epilogue. Against the
// widening form (GemvKernel.cpp) it spends four bytes of weights per
// instruction instead of one, at the cost of A's rounding to 8 bits
// (ggml's quantized dot products round A the same way, in blocks of 32).
#include <fmt/format.h>

#include <map>

#include "codegen/GemmKernel.h"
#include "codegen/GemvText.h"
#include "codegen/QuantText.h"
#include "ops/error.h"

namespace strata::tile {

namespace {

struct I8GemvText {
  const GemmKernelSpec& s;
  gemv::GemvText g{s};
  int64_t Q = s.quantBlock;
  int64_t halves() const { return s.quantNibbles ? 2 : 1; }
  int64_t Wd() const { return Q / halves(); }  // a block row's bytes a half: the lane vector and the segment
  int64_t KB() const { return s.blockK / Q; }
  QuantBlockText blocks() const { return {Q, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, KB()}; }
  std::string scaleDt() const { return blocks().scaleDt(); }
  std::string intT() const { return blocks().intT(); }  // [KB, Wd] i8
  std::string colT(const std::string& dt) const { return blocks().colT(dt); }
  std::string sumT() const { return colT("i32"); }
  std::string accT() const { return colT("f32"); }
  int64_t sums() const { return g.sums(); }
  int64_t acc(int64_t w, int64_t r, int64_t a) const { return (w * s.blockN + r) * s.blockM + a; }

  // Pointer names: %pa<a>_<h> (A row a's integers, half h), %pas<a>,
  // %pao<a> (its scales and block sums), %pb<w>_<r>, %ps<w>_<r>, %po<w>_<r>
  // (weight w row r: integers, scales, offsets).
  std::vector<std::pair<std::string, std::string>> pointers() const {
    std::vector<std::pair<std::string, std::string>> p;  // name, block pointer type
    auto bp = [](const std::string& t) { return "!tile.block_ptr<" + t + ">"; };
    for (int64_t a = 0; a < s.blockM; ++a) {
      for (int64_t h = 0; h < halves(); ++h) p.push_back({fmt::format("%pa{}_{}", a, h), bp(intT())});
      p.push_back({fmt::format("%pas{}", a), bp(colT("f32"))});
      if (s.quantOffsets) p.push_back({fmt::format("%pao{}", a), bp(colT("f32"))});
    }
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        p.push_back({fmt::format("%pb{}_{}", w, r), bp(intT())});
        p.push_back({fmt::format("%ps{}_{}", w, r), bp(colT(scaleDt()))});
        if (s.quantOffsets) p.push_back({fmt::format("%po{}_{}", w, r), bp(colT(scaleDt()))});
      }
    return p;
  }

  // The pointers at the start of K: A's row a and weight row r viewed as
  // [blocks, Q] (integers; [blocks, 1] scales), each view ending with its
  // row's last block, so a tail never reads the next row.
  std::string setup() const {
    std::string t;
    const std::string SP = fmt::format("!tile.ptr<{}>", scaleDt());
    auto col = [&](const std::string& name, const std::string& buf, const std::string& ptr, const std::string& dt,
                   const std::string& end, const std::string& start) {
      t += fmt::format("  {n} = tile.make_block_ptr {buf}, [{e}, %c1], [%c1, %c1], [{s}, %c0] : {P} -> "
                       "!tile.block_ptr<{T}>\n",
                       fmt::arg("n", name), fmt::arg("buf", buf), fmt::arg("e", end), fmt::arg("s", start),
                       fmt::arg("P", ptr), fmt::arg("T", colT(dt)));
    };
    for (int64_t a = 0; a < s.blockM; ++a) {
      t += fmt::format("  %c{a}a = arith.constant {a} : index\n  %m{a}u = arith.addi %row, %c{a}a : index\n"
                       "  %m{a} = arith.minui %m{a}u, %Mlast : index\n  %m{a}e = arith.addi %m{a}, %c1 : index\n"
                       "  %ar{a}e = arith.muli %m{a}e, %kbt : index\n  %ar{a} = arith.muli %m{a}, %kbt : index\n",
                       fmt::arg("a", a));
      for (int64_t h = 0; h < halves(); ++h)
        t += fmt::format("  %pa{a}_{h} = tile.make_block_ptr %a, [%ar{a}e, %cq], [%cq, %c1], [%ar{a}, %ch{h}] : "
                         "!tile.ptr<i8> -> !tile.block_ptr<{T}>\n",
                         fmt::arg("a", a), fmt::arg("h", h), fmt::arg("T", intT()));
      col(fmt::format("%pas{}", a), "%asc", "!tile.ptr<f32>", "f32", fmt::format("%ar{}e", a), fmt::format("%ar{}", a));
      if (s.quantOffsets)
        col(fmt::format("%pao{}", a), "%asum", "!tile.ptr<f32>", "f32", fmt::format("%ar{}e", a), fmt::format("%ar{}", a));
    }
    for (int64_t r = 0; r < s.blockN; ++r) {
      t += fmt::format("  %c{r}r = arith.constant {r} : index\n  %n{r} = arith.addi %col, %c{r}r : index\n"
                       "  %n{r}e0 = arith.addi %n{r}, %c1 : index\n  %n{r}e = arith.minui %n{r}e0, %N : index\n"
                       "  %br{r}e = arith.muli %n{r}e, %kbt : index\n  %br{r} = arith.muli %n{r}, %kbt : index\n",
                       fmt::arg("r", r));
      for (int64_t w = 0; w < g.weights(); ++w) {
        const char* sfx = w ? "2" : "";
        t += fmt::format("  %pb{w}_{r} = tile.make_block_ptr %b{s}, [%br{r}e, %cc], [%cc, %c1], [%br{r}, %c0] : "
                         "!tile.ptr<i8> -> !tile.block_ptr<{T}>\n",
                         fmt::arg("w", w), fmt::arg("r", r), fmt::arg("s", sfx), fmt::arg("T", intT()));
        const std::string end = fmt::format("%br{}e", r), start = fmt::format("%br{}", r);
        col(fmt::format("%ps{}_{}", w, r), fmt::format("%bsc{}", sfx), SP, scaleDt(), end, start);
        if (s.quantOffsets) col(fmt::format("%po{}_{}", w, r), fmt::format("%boff{}", sfx), SP, scaleDt(), end, start);
      }
    }
    return t;
  }

  // A loop over block rows [from, to) of K / Q, as GemvText::kLoop.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, bool inBounds) const {
    const auto types = pointers();
    std::string args, tys, body, yields;
    for (int64_t i = 0; i < sums(); ++i) {
      args += fmt::format("{}%acc{} = {}", i ? ", " : "", i, inits[i]);
      tys += (i ? ", " : "") + accT();
    }
    for (size_t i = 0; i < ptrs.size(); ++i) {
      args += fmt::format(", %p{} = {}", i, ptrs[i]);
      tys += ", " + types[i].second;
    }
    const char* ib = inBounds ? " {in_bounds}" : "";
    const std::string vattrs = inBounds ? fmt::format(" {{in_bounds, contiguous = 1 : i64, run = {} : i64}}", Wd()) : "";
    std::map<std::string, std::string> local;  // pointer -> its loop-local name
    for (size_t i = 0; i < types.size(); ++i) local[types[i].first] = fmt::format("%p{}", i);
    // A column of f32 values (scales of f16 widened).
    auto column = [&](const std::string& name, const std::string& ptr, const std::string& dt) {
      body += fmt::format("    %{n}l = tile.load {p}{a} : !tile.block_ptr<{T}>\n", fmt::arg("n", name),
                          fmt::arg("p", local[ptr]), fmt::arg("a", ib), fmt::arg("T", colT(dt)));
      if (dt == "f32") return "%" + name + "l";
      body += fmt::format("    %{n} = tile.convert %{n}l : {T} -> {F}\n", fmt::arg("n", name), fmt::arg("T", colT(dt)),
                          fmt::arg("F", accT()));
      return "%" + name;
    };
    std::vector<std::vector<std::string>> x(s.blockM);
    std::vector<std::string> xs(s.blockM), xo(s.blockM);
    for (int64_t a = 0; a < s.blockM; ++a) {
      for (int64_t h = 0; h < halves(); ++h) {
        body += fmt::format("    %x{a}_{h} = tile.load {p}{v} : !tile.block_ptr<{T}>\n", fmt::arg("a", a), fmt::arg("h", h),
                            fmt::arg("p", local[fmt::format("%pa{}_{}", a, h)]), fmt::arg("v", vattrs),
                            fmt::arg("T", intT()));
        x[a].push_back(fmt::format("%x{}_{}", a, h));
      }
      xs[a] = column(fmt::format("xs{}", a), fmt::format("%pas{}", a), "f32");
      if (s.quantOffsets) xo[a] = column(fmt::format("xo{}", a), fmt::format("%pao{}", a), "f32");
    }
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        const std::string id = fmt::format("{}_{}", w, r);
        body += fmt::format("    %q{id} = tile.load {p}{v} : !tile.block_ptr<{T}>\n", fmt::arg("id", id),
                            fmt::arg("p", local["%pb" + id]), fmt::arg("v", vattrs), fmt::arg("T", intT()));
        // The weights' bytes a half: nibbles are 0..15, unsigned.
        std::vector<std::string> wv = {"%q" + id};
        if (s.quantNibbles) {
          body += fmt::format("    %lo{id} = arith.andi %q{id}, %c15b : {T}\n    %hi{id} = arith.shrui %q{id}, %c4b : {T}\n",
                              fmt::arg("id", id), fmt::arg("T", intT()));
          wv = {"%lo" + id, "%hi" + id};
        }
        const std::string sw = column("sw" + id, "%ps" + id, scaleDt());
        const std::string off = s.quantOffsets ? column("of" + id, "%po" + id, scaleDt()) : "";
        for (int64_t a = 0; a < s.blockM; ++a) {
          const int64_t i = acc(w, r, a);
          std::string d = "%zi";
          for (int64_t h = 0; h < halves(); ++h) {
            body += fmt::format("    %d{i}_{h} = tile.segment_dot {x}, {wv}, {d}{u} : {T}, {T} -> {S}\n", fmt::arg("i", i),
                                fmt::arg("h", h), fmt::arg("x", x[a][h]), fmt::arg("wv", wv[h]), fmt::arg("d", d),
                                fmt::arg("u", s.quantNibbles ? " {b_unsigned}" : ""), fmt::arg("T", intT()),
                                fmt::arg("S", sumT()));
            d = fmt::format("%d{}_{}", i, h);
          }
          body += fmt::format(R"(    %df{i} = tile.convert {d} : {S} -> {F}
    %sc{i} = arith.mulf {sw}, {xs} : {F}
    %t{i} = arith.mulf %df{i}, %sc{i} fastmath<contract> : {F}
    %s{i} = arith.addf %acc{i}, %t{i} fastmath<contract> : {F}
)",
                              fmt::arg("i", i), fmt::arg("d", d), fmt::arg("S", sumT()), fmt::arg("F", accT()),
                              fmt::arg("sw", sw), fmt::arg("xs", xs[a]));
          std::string next = fmt::format("%s{}", i);
          if (s.quantOffsets) {
            body += fmt::format("    %o{i} = arith.mulf {off}, {xo} fastmath<contract> : {F}\n"
                                "    %so{i} = arith.addf %s{i}, %o{i} fastmath<contract> : {F}\n",
                                fmt::arg("i", i), fmt::arg("off", off), fmt::arg("xo", xo[a]), fmt::arg("F", accT()));
            next = fmt::format("%so{}", i);
          }
          yields += fmt::format("{}{}", i ? ", " : "", next);
        }
      }
    // Accumulators are yielded in index order (w, r, a nest as acc()).
    for (size_t i = 0; i < types.size(); ++i) {
      body += fmt::format("    %q{}n = tile.advance %p{}, [%ckb, %c0] : {}\n", i, i, types[i].second);
      yields += fmt::format(", %q{}n", i);
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %ckb iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, sums() + types.size(), from, to, args, tys, body, yields, tys);
  }

  // One path: the whole steps in bounds then the tail checked (or all of K
  // checked), the sums as rows, the epilogues.
  std::string path(const std::string& p, bool inBounds) const {
    const int64_t R = s.blockN, MA = s.blockM;
    std::vector<std::string> zeros(sums(), "%zero"), ptrs;
    for (const auto& [name, type] : pointers()) ptrs.push_back(name);
    std::string text, last = "%" + p;
    if (inBounds) {
      text = kLoop("%" + p, "%c0", "%kbfull", zeros, ptrs, true);
      std::vector<std::string> accs, next;
      for (int64_t i = 0; i < sums(); ++i) accs.push_back(fmt::format("%{}#{}", p, i));
      for (size_t i = 0; i < ptrs.size(); ++i) next.push_back(fmt::format("%{}#{}", p, sums() + i));
      text += kLoop("%" + p + "t", "%kbfull", "%kbt", accs, next, false);
      last = "%" + p + "t";
    } else {
      text = kLoop("%" + p, "%c0", "%kbt", zeros, ptrs, false);
    }
    gemv::GemvText e{s};
    e.accCols = KB();
    for (int64_t i = 0; i < sums(); ++i)
      text += fmt::format("    %{p}row{i} = tile.reshape {l}#{i} : {T} -> {R}\n", fmt::arg("p", p), fmt::arg("i", i),
                          fmt::arg("l", last), fmt::arg("T", accT()), fmt::arg("R", e.accT()));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t a = 0; a < MA; ++a)
        text += e.epilogue(MA == 1 ? fmt::format("{}{}", p, r) : fmt::format("{}{}_{}", p, r, a), a, r,
                           [&](int64_t w) { return fmt::format("%{}row{}", p, acc(w, r, a)); },
                           inBounds ? " {in_bounds}" : "");
    return text;
  }
};

}  // namespace

std::string emitInt8ActivationGemvKernel(const GemmKernelSpec& s) {
  I8GemvText t{s};
  const int64_t Q = s.quantBlock, W = s.numWarps;
  if (!(Q == 16 || Q == 32) || (s.quantSuper && s.quantSuper != Q) || s.quantSubScales || !s.weightsNK ||
      s.blockM < 1 || s.blockN < 1 || W < 1 || s.blockK % (Q * W) || (t.KB() / W) % 32 || s.stages || s.groupDot ||
      s.splitKPrograms || s.packedB || s.gelu)
    fail("quantized gemv '{}' (i8 activations): [N, K] weights in blocks of 16 or 32 with f16 (quant_super = block) or "
         "f32 scales, blockK a multiple of block x warps with whole rounds of 32 blocks a warp, no staging, dots, K "
         "split or GELU",
         s.name);
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {V} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cq = arith.constant {Q} : index
  %cc = arith.constant {C} : index
  %ch0 = arith.constant 0 : index
  %ch1 = arith.constant {V} : index
  %ckb = arith.constant {KB} : index
  %bn = arith.constant {R} : index
  %bm = arith.constant {MA} : index
{nibbles}  %zi = arith.constant dense<0> : {S}
  %pn = tile.program_id 0
  %pm = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %Mlast = arith.subi %M, %c1 : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %fast = arith.cmpi sle, %colEnd, %N : index
  %kbt = arith.divui %K, %cq : index
  %kbsteps = arith.divui %kbt, %ckb : index
  %kbfull = arith.muli %kbsteps, %ckb : index
{setup}  %zero = arith.constant dense<0.0> : {F}
  scf.if %fast {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("W", W),
                     fmt::arg("V", t.Wd()), fmt::arg("Q", Q), fmt::arg("C", s.quantNibbles ? Q / 2 : Q),
                     fmt::arg("KB", t.KB()), fmt::arg("R", s.blockN), fmt::arg("MA", s.blockM),
                     fmt::arg("nibbles", t.blocks().constants()), fmt::arg("S", t.sumT()),
                     fmt::arg("setup", t.setup()), fmt::arg("F", t.accT()), fmt::arg("fast", t.path("f", true)),
                     fmt::arg("edge", t.path("e", false)));
}

}  // namespace strata::tile
