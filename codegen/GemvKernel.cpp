// The GEMV form of a GEMM region kernel (GemmKernelSpec::gemv): blockM
// rows of A against blockN rows of [N, K] weights per program, with no
// dots. The tiles are [1, blockK] rows spread over the warps (lane-linear
// on sm_90, like RMSNorm's, in 16-byte vectors), so a batch-1 decode
// streams each weight row in long contiguous runs from many small
// programs, where the mma form's 16-row A block is 15 rows of zeros and
// its programs few and long.
#include <fmt/format.h>

#include <functional>
#include <map>

#include "codegen/GemmKernel.h"
#include "codegen/GemmText.h"
#include "codegen/GemvText.h"
#include "codegen/QuantText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

namespace {

using gemv::GemvText;

// The quantized GEMV (GemmKernelSpec::int8Blocks): weight row n is K / Q
// blocks of Q values (quantBlock), its integers i8 [N, K] (nibbles: [N,
// K / 2] bytes, byte i of a block holding value i in its low nibble and
// value i + Q / 2 in its high one, both from 0) and one scale (and offset)
// a block, f16 (quantSuper = Q: the file's own) or f32 (quantSuper = 0).
// Each step reads KB = blockK / Q blocks of a row as a [KB, C] tile (the
// row viewed as [K / Q, C], C = Q or Q / 2 bytes), widens its integers,
// times its scales broadcast along the blocks (plus its offsets), and
// multiplies it with A's row viewed the same way ([KB, Wd] tiles, Wd = Q
// or, for nibbles, Q / 2 per half). The view of row n ends at row n's last
// block (n + 1 blocks-rows, N at most), so a row's tail never reads the
// next row and rows past N read zeros. The sums, [KB, Wd] each, become
// [1, KB Wd] rows for GemvText's epilogue.
struct QuantGemvText {
  const GemmKernelSpec& s;
  GemvText g{s};
  StorageText st{s.dtype};
  int64_t Q = s.quantBlock;
  int64_t halves() const { return s.quantNibbles ? 2 : 1; }
  int64_t Wd() const { return Q / halves(); }
  int64_t KB() const { return s.blockK / Q; }
  QuantBlockText blocks() const { return {Q, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, KB()}; }
  std::string scaleDt() const { return blocks().scaleDt(); }
  std::string xShape() const { return blocks().xShape(); }
  std::string accT() const { return fmt::format("tensor<{}xf32>", xShape()); }
  std::string bT() const { return blocks().intT(); }
  std::string colT(const std::string& dt) const { return blocks().colT(dt); }

  // Pointer names: %pa<a>_<h> (A row a, half h), %pb<w>_<r>, %ps<w>_<r>,
  // %po<w>_<r> (weight w row r: integers, scales, offsets).
  std::vector<std::pair<std::string, std::string>> pointers() const {
    std::vector<std::pair<std::string, std::string>> p;  // name, block pointer type
    for (int64_t a = 0; a < s.blockM; ++a)
      for (int64_t h = 0; h < halves(); ++h) p.push_back({fmt::format("%pa{}_{}", a, h), st.blockPtr(xShape())});
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        p.push_back({fmt::format("%pb{}_{}", w, r), "!tile.block_ptr<" + bT() + ">"});
        p.push_back({fmt::format("%ps{}_{}", w, r), "!tile.block_ptr<" + colT(scaleDt()) + ">"});
        if (s.quantOffsets) p.push_back({fmt::format("%po{}_{}", w, r), "!tile.block_ptr<" + colT(scaleDt()) + ">"});
      }
    return p;
  }

  // The pointers at the start of K.
  std::string setup() const {
    std::string t;
    const std::string P = fmt::format("!tile.ptr<{}>", scaleDt());
    for (int64_t a = 0; a < s.blockM; ++a) {
      t += fmt::format("  %c{a}a = arith.constant {a} : index\n  %m{a}u = arith.addi %row, %c{a}a : index\n"
                       "  %m{a} = arith.minui %m{a}u, %Mlast : index\n  %m{a}e = arith.addi %m{a}, %c1 : index\n"
                       "  %ar{a}e = arith.muli %m{a}e, %kbt : index\n  %ar{a} = arith.muli %m{a}, %kbt : index\n",
                       fmt::arg("a", a));
      for (int64_t h = 0; h < halves(); ++h)
        t += fmt::format("  %pa{a}_{h} = tile.make_block_ptr %a, [%ar{a}e, %cq], [%cq, %c1], [%ar{a}, %ch{h}] : {P} -> {BP}\n",
                         fmt::arg("a", a), fmt::arg("h", h), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(xShape())));
    }
    for (int64_t r = 0; r < s.blockN; ++r) {
      t += fmt::format("  %c{r}r = arith.constant {r} : index\n  %n{r} = arith.addi %col, %c{r}r : index\n"
                       "  %n{r}e0 = arith.addi %n{r}, %c1 : index\n  %n{r}e = arith.minui %n{r}e0, %N : index\n"
                       "  %br{r}e = arith.muli %n{r}e, %kbt : index\n  %br{r} = arith.muli %n{r}, %kbt : index\n",
                       fmt::arg("r", r));
      for (int64_t w = 0; w < g.weights(); ++w) {
        const char* sfx = w ? "2" : "";
        t += fmt::format("  %pb{w}_{r} = tile.make_block_ptr %b{s}, [%br{r}e, %cc], [%cc, %c1], [%br{r}, %c0] : "
                         "!tile.ptr<i8> -> !tile.block_ptr<{B}>\n",
                         fmt::arg("w", w), fmt::arg("r", r), fmt::arg("s", sfx), fmt::arg("B", bT()));
        auto col = [&](const char* p, const char* buf) {
          t += fmt::format("  %{p}{w}_{r} = tile.make_block_ptr %{buf}{s}, [%br{r}e, %c1], [%c1, %c1], [%br{r}, %c0] : "
                           "{P} -> !tile.block_ptr<{T}>\n",
                           fmt::arg("p", p), fmt::arg("w", w), fmt::arg("r", r), fmt::arg("buf", buf), fmt::arg("s", sfx),
                           fmt::arg("P", P), fmt::arg("T", colT(scaleDt())));
        };
        col("ps", "bsc");
        if (s.quantOffsets) col("po", "boff");
      }
    }
    return t;
  }

  // Weight w row r's values for this step as f32 [KB, Wd] tiles, one per
  // half.
  // `ptr`: the loop's names of its integers', scales' and offsets' pointers.
  std::vector<std::string> weightTiles(std::string& body, int64_t w, int64_t r, const std::string (&ptr)[3],
                                       const char* ib, const std::string& vattrs) const {
    return blocks().widen(body, fmt::format("{}_{}", w, r), ptr[0], ptr[1], ptr[2], ib, vattrs);
  }

  // A loop over block rows [from, to) of K / Q, as GemvText::kLoop.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, bool inBounds) const {
    const int64_t nAcc = g.sums(), MA = s.blockM;
    const auto types = pointers();
    std::string args, tys, body, yields;
    for (int64_t i = 0; i < nAcc; ++i) {
      args += fmt::format("{}%acc{} = {}", i ? ", " : "", i, inits[i]);
      tys += (i ? ", " : "") + accT();
    }
    for (size_t i = 0; i < ptrs.size(); ++i) {
      args += fmt::format(", %p{} = {}", i, ptrs[i]);
      tys += ", " + types[i].second;
    }
    const char* ib = inBounds ? " {in_bounds}" : "";
    const std::string vattrs = inBounds ? fmt::format(" {{in_bounds, contiguous = 1 : i64, run = {} : i64}}", g.vec()) : "";
    // Loop-local names of each pointer: %p<index in `types`>.
    std::map<std::string, std::string> local;
    for (size_t i = 0; i < types.size(); ++i) local[types[i].first] = fmt::format("%p{}", i);
    std::vector<std::vector<std::string>> x(MA);
    for (int64_t a = 0; a < MA; ++a)
      for (int64_t h = 0; h < halves(); ++h) {
        const std::string name = fmt::format("x{}_{}", a, h);
        body += st.load(name, local[fmt::format("%pa{}_{}", a, h)], xShape(), vattrs);
        x[a].push_back("%" + name);
      }
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        const std::string id = fmt::format("{}_{}", w, r);
        const std::string wp[3] = {local["%pb" + id], local["%ps" + id], s.quantOffsets ? local["%po" + id] : ""};
        std::vector<std::string> wt = weightTiles(body, w, r, wp, ib, vattrs);
        for (int64_t a = 0; a < MA; ++a) {
          const int64_t i = (w * s.blockN + r) * MA + a;
          std::string acc = fmt::format("%acc{}", i);
          for (int64_t h = 0; h < halves(); ++h) {
            // Contracted into one FMA: the widening and scaling already
            // cost more instructions per byte than the 16-bit GEMV's.
            body += fmt::format("    %pr{i}_{h} = arith.mulf {w}, {x} fastmath<contract> : {T}\n"
                                "    %s{i}_{h} = arith.addf {acc}, %pr{i}_{h} fastmath<contract> : {T}\n",
                                fmt::arg("i", i), fmt::arg("h", h), fmt::arg("w", wt[h]), fmt::arg("x", x[a][h]),
                                fmt::arg("acc", acc), fmt::arg("T", accT()));
            acc = fmt::format("%s{}_{}", i, h);
          }
          yields += fmt::format("{}{}", i ? ", " : "", acc);
        }
      }
    for (size_t i = 0; i < types.size(); ++i) {
      body += fmt::format("    %q{}n = tile.advance %p{}, [%ckb, %c0] : {}\n", i, i, types[i].second);
      yields += fmt::format(", %q{}n", i);
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %ckb iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, nAcc + types.size(), from, to, args, tys, body, yields, tys);
  }

  // One path, as GemvText::path: the sums reshaped to rows, then the
  // epilogues.
  std::string path(const std::string& p, bool inBounds) const {
    const int64_t R = s.blockN, nAcc = g.sums(), MA = s.blockM;
    std::vector<std::string> zeros(nAcc, "%zero"), ptrs;
    for (const auto& [name, type] : pointers()) ptrs.push_back(name);
    std::string text, last = "%" + p;
    if (inBounds) {
      text = kLoop("%" + p, "%c0", "%kbfull", zeros, ptrs, true);
      std::vector<std::string> accs, next;
      for (int64_t i = 0; i < nAcc; ++i) accs.push_back(fmt::format("%{}#{}", p, i));
      for (size_t i = 0; i < ptrs.size(); ++i) next.push_back(fmt::format("%{}#{}", p, nAcc + i));
      text += kLoop("%" + p + "t", "%kbfull", "%kbt", accs, next, false);
      last = "%" + p + "t";
    } else {
      text = kLoop("%" + p, "%c0", "%kbt", zeros, ptrs, false);
    }
    GemvText e{s};
    e.accCols = KB() * Wd();
    for (int64_t i = 0; i < nAcc; ++i)
      text += fmt::format("    %{p}row{i} = tile.reshape {l}#{i} : {T} -> {R}\n", fmt::arg("p", p), fmt::arg("i", i),
                          fmt::arg("l", last), fmt::arg("T", accT()), fmt::arg("R", e.accT()));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t a = 0; a < MA; ++a)
        text += e.epilogue(MA == 1 ? fmt::format("{}{}", p, r) : fmt::format("{}{}_{}", p, r, a), a, r,
                           [&](int64_t w) { return fmt::format("%{}row{}", p, (w * R + r) * MA + a); },
                           inBounds ? " {in_bounds}" : "");
    return text;
  }
};

std::string emitQuantGemvKernel(const GemmKernelSpec& s) {
  QuantGemvText t{s};
  const int64_t Q = s.quantBlock, W = s.numWarps;
  if (!(Q == 16 || Q == 32) || (s.quantSuper && s.quantSuper != Q) || s.quantSubScales || !s.weightsNK ||
      s.blockM < 1 || s.blockN < 1 || W < 1 || s.blockK % (Q * W) || s.stages || s.groupDot || s.splitKPrograms ||
      s.packedB || (t.KB() / W * t.Wd()) % (32 * t.g.vec()))
    fail("quantized gemv '{}': [N, K] weights in blocks of 16 or 32 with f16 (quant_super = block) or f32 scales, "
         "blockK a multiple of block x warps whose per-warp [rows, {}] tiles are whole rounds of 32 lanes x {}, no "
         "staging, dots or K split",
         s.name, t.Wd(), t.g.vec());
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {V} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cq = arith.constant {Q} : index
  %cc = arith.constant {C} : index
  %ch0 = arith.constant 0 : index
  %ch1 = arith.constant {Wd} : index
  %ckb = arith.constant {KB} : index
  %bn = arith.constant {R} : index
  %bm = arith.constant {MA} : index
{nibbles}  %pn = tile.program_id 0
  %pm = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %Mlast = arith.subi %M, %c1 : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %fast = arith.cmpi sle, %colEnd, %N : index
  %kbt = arith.divui %K, %cq : index
  %kbsteps = arith.divui %kbt, %ckb : index
  %kbfull = arith.muli %kbsteps, %ckb : index
{setup}  %zero = arith.constant dense<0.0> : {accT}
  scf.if %fast {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("W", W),
                     fmt::arg("V", t.g.vec()), fmt::arg("Q", Q), fmt::arg("C", s.quantNibbles ? Q / 2 : Q),
                     fmt::arg("Wd", t.Wd()), fmt::arg("KB", t.KB()), fmt::arg("R", s.blockN), fmt::arg("MA", s.blockM),
                     fmt::arg("nibbles", t.blocks().constants()),
                     fmt::arg("setup", t.setup()), fmt::arg("accT", t.accT()),
                     fmt::arg("fast", t.path("f", true)), fmt::arg("edge", t.path("e", false)));
}

}  // namespace

std::string emitGemvKernel(const GemmKernelSpec& s) {
  StorageText{s.dtype}.check("gemv");
  if (s.int8Blocks()) return s.int8Activations ? emitInt8ActivationGemvKernel(s) : emitQuantGemvKernel(s);
  if (s.int8Activations) fail("gemv '{}': i8 activations take i8 block weights", s.name);
  if (!s.weightDtype.empty() && s.weightDtype != s.dtype)
    fail("gemv '{}': weights of another type ({} under {}) are i8 blocks only", s.name, s.weightDtype, s.dtype);
  if (!s.weightsNK || s.blockM < 1 || s.blockN < 1 || s.numWarps < 1 || s.blockK % (32 * s.numWarps) != 0 ||
      s.stages || s.groupDot || s.splitKPrograms || s.packedB)
    fail("gemv '{}': [N, K] weights, blockK a multiple of 32 x warps, no staging, dots or K split", s.name);
  GemvText t{s};
  std::string rows;
  for (int64_t a = 0; a < s.blockM; ++a)
    rows += fmt::format(R"(  %c{a}a = arith.constant {a} : index
  %m{a}u = arith.addi %row, %c{a}a : index
  %m{a} = arith.minui %m{a}u, %Mlast : index
  %pa{a} = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%m{a}, %c0] : {P} -> {BP}
)",
                        fmt::arg("a", a), fmt::arg("P", t.st.ptr()), fmt::arg("BP", t.ptrT()));
  for (int64_t r = 0; r < s.blockN; ++r) {
    rows += fmt::format("  %c{r}r = arith.constant {r} : index\n  %n{r} = arith.addi %col, %c{r}r : index\n",
                        fmt::arg("r", r));
    for (int64_t w = 0; w < t.weights(); ++w)
      rows += fmt::format("  %pb{w}_{r} = tile.make_block_ptr {b}, [%N, %K], [%K, %c1], [%n{r}, %c0] : {P} -> {BP}\n",
                          fmt::arg("w", w), fmt::arg("r", r), fmt::arg("b", w ? "%b2" : "%b"),
                          fmt::arg("P", t.st.ptr()), fmt::arg("BP", t.ptrT()));
  }
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {V} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bn = arith.constant {R} : index
  %bk = arith.constant {BK} : index
  %bm = arith.constant {MA} : index
  %pn = tile.program_id 0
  %pm = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %Mlast = arith.subi %M, %c1 : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %cv = arith.constant {V} : index
  %kv = arith.remui %K, %cv : index
  %kVec = arith.cmpi eq, %kv, %c0 : index
  %fast = arith.andi %colsIn, %kVec : i1
  %kblocks = arith.divui %K, %bk : index
  %kfull = arith.muli %kblocks, %bk : index
{rows}  %zero = arith.constant dense<0.0> : {accT}
  scf.if %fast {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("W", s.numWarps),
                     fmt::arg("V", t.vec()), fmt::arg("MA", s.blockM), fmt::arg("R", s.blockN), fmt::arg("BK", s.blockK), fmt::arg("P", t.st.ptr()),
                     fmt::arg("BP", t.ptrT()), fmt::arg("rows", rows), fmt::arg("accT", t.accT()),
                     fmt::arg("fast", t.path("f", true)), fmt::arg("edge", t.path("e", false)));
}

}  // namespace strata::tile
