#include "codegen/PenaltyKernel.h"

#include <fmt/format.h>

namespace strata::tile {

std::string emitRepetitionPenaltyKernel(const RepetitionPenaltyKernelSpec& s) {
  // One element a program: a 1x1 tile read, penalized and written back.
  return fmt::format(R"(func.func @{name}(%x: !tile.ptr<f32>, %entries: !tile.ptr<i64>, %penalty: !tile.ptr<f32>, %R: index, %N: index, %E: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tile.program_id 0
  %ce = arith.addi %e, %E : index
  %row = tile.block_lookup %entries[%e] : !tile.ptr<i64>
  %col = tile.block_lookup %entries[%ce] : !tile.ptr<i64>
  %xp = tile.make_block_ptr %x, [%R, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %pp = tile.make_block_ptr %penalty, [%R, %c1], [%c1, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %v = tile.load %xp {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
  %p = tile.load %pp {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
  %zero = arith.constant dense<0.0> : tensor<1x1xf32>
  %pos = arith.cmpf ogt, %v, %zero : tensor<1x1xf32>
  %down = arith.divf %v, %p : tensor<1x1xf32>
  %up = arith.mulf %v, %p : tensor<1x1xf32>
  %y = arith.select %pos, %down, %up : tensor<1x1xi1>, tensor<1x1xf32>
  tile.store %xp, %y {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
  return
}}
)",
                     fmt::arg("name", s.name));
}

}  // namespace strata::tile
