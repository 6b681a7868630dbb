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

// The quantized GEMV's widening form (GemmKernelSpec::int8Blocks without
// int8Activations; the weights' layout and views: QuantRowsText). Each
// step widens a weight row's [KB, Wd] integers to f32, times its scales
// broadcast along the blocks (plus its offsets), and multiplies them with
// A's row viewed the same way ([KB, Wd] tiles, one a half). The sums,
// [KB, Wd] each, become [1, KB Wd] rows for GemvText's epilogue.
struct QuantGemvText : gemv::QuantRowsText {
  StorageText st{s.dtype};
  std::string xShape() const { return blocks().xShape(); }
  std::string accT() const { return fmt::format("tensor<{}xf32>", xShape()); }

  // Pointer names: %pa<a>_<h> (A row a, half h), then the weights'.
  std::vector<std::pair<std::string, std::string>> pointers() const {
    std::vector<std::pair<std::string, std::string>> p;  // name, block pointer type
    for (int64_t a = 0; a < s.blockM; ++a)
      for (int64_t h = 0; h < halves(); ++h) p.push_back({fmt::format("%pa{}_{}", a, h), st.blockPtr(xShape())});
    weightPointers(p);
    return p;
  }

  // The pointers at the start of K.
  std::string setup() const {
    std::string t;
    for (int64_t a = 0; a < s.blockM; ++a) {
      t += aRow(a);
      for (int64_t h = 0; h < halves(); ++h)
        t += fmt::format("  %pa{a}_{h} = tile.make_block_ptr %a, [%ar{a}e, %cq], [%cq, %c1], [%ar{a}, %ch{h}] : {P} -> {BP}\n",
                         fmt::arg("a", a), fmt::arg("h", h), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(xShape())));
    }
    for (int64_t r = 0; r < s.blockN; ++r) t += weightRow(r);
    return t;
  }

  // A loop over block rows [from, to) of K / Q, as GemvText::kLoop.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, bool inBounds) const {
    const int64_t MA = s.blockM;
    const auto types = pointers();
    std::string body, yields;
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
        std::vector<std::string> wt = blocks().widen(body, id, local["%pb" + id], local["%ps" + id],
                                                     s.quantOffsets ? local["%po" + id] : "", ib, vattrs);
        for (int64_t a = 0; a < MA; ++a) {
          const int64_t i = acc(w, r, a);
          std::string sum = fmt::format("%acc{}", i);
          for (int64_t h = 0; h < halves(); ++h) {
            // Contracted into one FMA: the widening and scaling already
            // cost more instructions per byte than the 16-bit GEMV's.
            body += fmt::format("    %pr{i}_{h} = arith.mulf {w}, {x} fastmath<contract> : {T}\n"
                                "    %s{i}_{h} = arith.addf {acc}, %pr{i}_{h} fastmath<contract> : {T}\n",
                                fmt::arg("i", i), fmt::arg("h", h), fmt::arg("w", wt[h]), fmt::arg("x", x[a][h]),
                                fmt::arg("acc", sum), fmt::arg("T", accT()));
            sum = fmt::format("%s{}_{}", i, h);
          }
          yields += fmt::format("{}{}", i ? ", " : "", sum);
        }
      }
    return loop(res, from, to, inits, accT(), ptrs, types, body, yields);
  }

  std::string path(const std::string& p, bool inBounds) const {
    std::vector<std::string> ptrs;
    for (const auto& [name, type] : pointers()) ptrs.push_back(name);
    return QuantRowsText::path(p, inBounds, ptrs, accT(), KB() * Wd(),
                               [&](auto&&... a) { return kLoop(std::forward<decltype(a)>(a)...); });
  }
};

std::string emitQuantGemvKernel(const GemmKernelSpec& s) {
  QuantGemvText t{{s}};
  const int64_t Q = s.quantBlock, W = s.numWarps;
  if (!(Q == 16 || Q == 32) || (s.quantSuper && s.quantSuper != Q) || s.quantSubScales || !s.weightsNK ||
      s.blockM < 1 || s.blockN < 1 || W < 1 || s.blockK % (Q * W) || s.stages || s.groupDot || s.splitKPrograms ||
      s.packedB || (t.KB() / W * t.Wd()) % (32 * t.g.vec()))
    fail("quantized gemv '{}': [N, K] weights in blocks of 16 or 32 with f16 (quant_super = block) or f32 scales, "
         "blockK a multiple of block x warps whose per-warp [rows, {}] tiles are whole rounds of 32 lanes x {}, no "
         "staging, dots or K split",
         s.name, t.Wd(), t.g.vec());
  return t.kernel(t.g.vec(), t.blocks().constants(), t.setup(), t.accT(), t.path("f", true), t.path("e", false));
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
