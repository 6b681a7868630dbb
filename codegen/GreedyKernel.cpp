#include "codegen/GreedyKernel.h"

#include <fmt/format.h>

#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

std::string emitArgmaxKernel(const ArgmaxKernelSpec& s) {
  if (s.blockN <= 0 || s.blockN % 32) fail("argmax kernel: block of {} columns (a multiple of 32)", s.blockN);
  const StorageText st{s.dtype};
  st.check("argmax");
  const std::string row = fmt::format("1x{}", s.blockN);
  // Per step: the block's max and argmax (columns past the split's end
  // masked to -inf), kept when strictly larger than the running max, so
  // the earlier column wins a tie.
  return fmt::format(R"(func.func @{name}(%x: {P}, %mx: !tile.ptr<f32>, %ix: !tile.ptr<f32>, %R: index, %N: index, %chunk: index, %S: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
  %s = tile.program_id 0
  %row = tile.program_id 1
  %lo = arith.muli %s, %chunk : index
  %end = arith.addi %lo, %chunk : index
  %hi = arith.minui %end, %N : index
  %xp = tile.make_block_ptr %x, [%R, %N], [%N, %c1], [%row, %lo] : {P} -> {BP}
  %ninf = arith.constant dense<0xFF800000> : tensor<1xf32>
  %loi = arith.index_cast %lo : index to i64
  %lof = arith.sitofp %loi : i64 to f32
  %first = tile.splat %lof : f32 -> tensor<1xf32>
  %r:3 = scf.for %c = %lo to %hi step %cB iter_args(%m = %ninf, %i = %first, %p = %xp) -> (tensor<1xf32>, tensor<1xf32>, {BP}) {{
{loadV}    %vm = tile.mask %v, [%c0, %c], %hi : tensor<{row}xf32>
    %bm = tile.reduce %vm {{kind = "max", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
    %bi = tile.reduce %vm {{kind = "argmax", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
    %ci = arith.index_cast %c : index to i64
    %cf = arith.sitofp %ci : i64 to f32
    %ct = tile.splat %cf : f32 -> tensor<1xf32>
    %gi = arith.addf %bi, %ct : tensor<1xf32>
    %gt = arith.cmpf ogt, %bm, %m : tensor<1xf32>
    %mn = arith.select %gt, %bm, %m : tensor<1xi1>, tensor<1xf32>
    %in = arith.select %gt, %gi, %i : tensor<1xi1>, tensor<1xf32>
    %pn = tile.advance %p, [%c0, %cB] : {BP}
    scf.yield %mn, %in, %pn : tensor<1xf32>, tensor<1xf32>, {BP}
  }}
  %me = tile.expand_dims %r#0 {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %ie = tile.expand_dims %r#1 {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %mp = tile.make_block_ptr %mx, [%R, %S], [%S, %c1], [%row, %s] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %ip = tile.make_block_ptr %ix, [%R, %S], [%S, %c1], [%row, %s] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %mp, %me : !tile.block_ptr<tensor<1x1xf32>>
  tile.store %ip, %ie : !tile.block_ptr<tensor<1x1xf32>>
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("B", s.blockN), fmt::arg("row", row), fmt::arg("P", st.ptr()),
                     fmt::arg("BP", st.blockPtr(row)), fmt::arg("loadV", st.load("v", "%p", row)));
}

}  // namespace strata::tile
