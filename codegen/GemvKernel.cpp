// The GEMV form of a GEMM region kernel (GemmKernelSpec::gemv): blockM
// rows of A against blockN rows of [N, K] weights per program, with no
// dots. The tiles are [1, blockK] rows spread over the warps (lane-linear
// on sm_90, like RMSNorm's, in 16-byte vectors), so a batch-1 decode
// streams each weight row in long contiguous runs from many small
// programs, where the mma form's 16-row A block is 15 rows of zeros and
// its programs few and long.
#include <fmt/format.h>

#include "codegen/GemmKernel.h"
#include "codegen/GemmText.h"
#include "codegen/GemvText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

using gemv::GemvText;

std::string emitGemvKernel(const GemmKernelSpec& s) {
  StorageText{s.dtype}.check("gemv");
  // Block-quantized weights: the integer form (A quantized to i8 first);
  // more rows take the mma form (GemmKernel.cpp).
  if (s.int8Blocks() && !s.int8Activations)
    fail("gemv '{}': block-quantized weights take i8 activations (int8Activations) in the GEMV form", s.name);
  if (s.int8Blocks()) return emitInt8ActivationGemvKernel(s);
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
