#include "codegen/GemmKernel.h"

#include <fmt/format.h>

#include "codegen/UArch.h"

namespace strata::tile {

GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows) {
  const UArch& u = uarchFor(target);
  GemmKernelSpec s;
  s.weightsNK = weightsNK;
  if (rows <= 1) {
    s.name = "gemv";
    s.numWarps = 1;
    s.blockM = 1;
    s.blockN = 4 * u.vectorBytes / 4;
    s.blockK = 8;
    return s;
  }
  s.numWarps = 4;
  s.blockM = 4 * s.numWarps;               // 4 accumulator rows per warp
  s.blockN = 2 * u.vectorBytes / 4;        // two f32 vector registers per row
  s.blockK = 8;
  return s;
}

std::string emitGemmKernel(const GemmKernelSpec& s) {
  std::string hint = s.tiling.empty() ? "" : fmt::format(" {{tiling = \"{}\"}}", s.tiling);
  // B's view is [K, N] either way; for [N, K] storage it is transposed
  // (strides [1, K]).
  std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
  return fmt::format(R"(func.func @{name}(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {{tile.num_warps = {W} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %col = arith.muli %pn, %bn : index
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{BM}x{BK}xf32>>
  %bp = tile.make_block_ptr %b, [%K, %N], {bStrides}, [%c0, %col] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{BK}x{BN}xf32>>
  %zero = arith.constant dense<0.0> : tensor<{BM}x{BN}xf32>
  %r:3 = scf.for %k = %c0 to %K step %bk iter_args(%acc = %zero, %pa = %ap, %pb = %bp) -> (tensor<{BM}x{BN}xf32>, !tile.block_ptr<tensor<{BM}x{BK}xf32>>, !tile.block_ptr<tensor<{BK}x{BN}xf32>>) {{
    %x = tile.load %pa : !tile.block_ptr<tensor<{BM}x{BK}xf32>>
    %y = tile.load %pb : !tile.block_ptr<tensor<{BK}x{BN}xf32>>
    %d = tile.dot %x, %y, %acc{hint} : tensor<{BM}x{BK}xf32> * tensor<{BK}x{BN}xf32> -> tensor<{BM}x{BN}xf32>
    %na = tile.advance %pa, [%c0, %bk] : !tile.block_ptr<tensor<{BM}x{BK}xf32>>
    %nb = tile.advance %pb, [%bk, %c0] : !tile.block_ptr<tensor<{BK}x{BN}xf32>>
    scf.yield %d, %na, %nb : tensor<{BM}x{BN}xf32>, !tile.block_ptr<tensor<{BM}x{BK}xf32>>, !tile.block_ptr<tensor<{BK}x{BN}xf32>>
  }}
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{BM}x{BN}xf32>>
  tile.store %cp, %r#0 : !tile.block_ptr<tensor<{BM}x{BN}xf32>>
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("W", s.numWarps), fmt::arg("BM", s.blockM),
                     fmt::arg("BN", s.blockN), fmt::arg("BK", s.blockK), fmt::arg("bStrides", bStrides),
                     fmt::arg("hint", hint));
}

}  // namespace strata::tile
