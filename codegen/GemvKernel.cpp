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
  return gemv::kernelText(s, t.vec(), fmt::format("  %bk = arith.constant {} : index\n", s.blockK),
                          fmt::format(R"(  %colsIn = arith.cmpi sle, %colEnd, %N : index
  %cv = arith.constant {V} : index
  %kv = arith.remui %K, %cv : index
  %kVec = arith.cmpi eq, %kv, %c0 : index
  %fast = arith.andi %colsIn, %kVec : i1
  %kblocks = arith.divui %K, %bk : index
  %kfull = arith.muli %kblocks, %bk : index
)",
                                      fmt::arg("V", t.vec())) +
                              rows,
                          t.accT(), t.path("f", true), t.path("e", false));
}

}  // namespace strata::tile
