#include "codegen/TopKKernel.h"

#include <fmt/format.h>

#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

std::string emitTopKKernel(const TopKKernelSpec& s) {
  if (s.blockN <= 0 || s.blockN % 32) fail("top-k kernel: block of {} columns (a multiple of 32)", s.blockN);
  if (s.candidates <= 0 || s.candidates > s.blockN)
    fail("top-k kernel: {} candidates per split of {} columns (1 to the split's width)", s.candidates, s.blockN);
  const StorageText st{s.dtype};
  st.check("top-k");
  const std::string row = fmt::format("1x{}", s.blockN);
  // The split is loaded once and stays in registers: the mass is taken
  // from it, then each round takes its largest value (argmax: the lower
  // column on ties) and puts -inf where that column was (compared against
  // the column iota), so the next round finds the next one.
  return fmt::format(R"(func.func @{name}(%x: {P}, %val: !tile.ptr<f32>, %idx: !tile.ptr<f32>, %mass: !tile.ptr<f32>, %scale: !tile.ptr<f32>, %R: index, %N: index, %S: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
  %cC = arith.constant {C} : index
  %s = tile.program_id 0
  %row = tile.program_id 1
  %lo = arith.muli %s, %cB : index
  %xp = tile.make_block_ptr %x, [%R, %N], [%N, %c1], [%row, %lo] : {P} -> {BP}
{loadV}  %w0 = tile.mask %v, [%c0, %lo], %N : tensor<{row}xf32>
  %m = tile.reduce %w0 {{kind = "max", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
  %me = tile.expand_dims %m {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %mb = tile.broadcast %me : tensor<1x1xf32> -> tensor<{row}xf32>
  %tp = tile.make_block_ptr %scale, [%R, %c1], [%c1, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %t = tile.load %tp : !tile.block_ptr<tensor<1x1xf32>>
  %tb = tile.broadcast %t : tensor<1x1xf32> -> tensor<{row}xf32>
  %d = arith.subf %w0, %mb : tensor<{row}xf32>
  %ds = arith.mulf %d, %tb : tensor<{row}xf32>
  %e = math.exp2 %ds : tensor<{row}xf32>
  %z = tile.reduce %e {{kind = "sum", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
  %ze = tile.expand_dims %z {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %zp = tile.make_block_ptr %mass, [%R, %S], [%S, %c1], [%row, %s] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %zp, %ze : !tile.block_ptr<tensor<1x1xf32>>
  %SC = arith.muli %S, %cC : index
  %first = arith.muli %s, %cC : index
  %vp = tile.make_block_ptr %val, [%R, %SC], [%SC, %c1], [%row, %first] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %ip = tile.make_block_ptr %idx, [%R, %SC], [%SC, %c1], [%row, %first] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %cols = tile.iota %c0 {{axis = 1 : i64}} : tensor<{row}xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<{row}xf32>
  %loi = arith.index_cast %lo : index to i64
  %lof = arith.sitofp %loi : i64 to f32
  %base = tile.splat %lof : f32 -> tensor<1xf32>
  %r:3 = scf.for %j = %c0 to %cC step %c1 iter_args(%w = %w0, %pv = %vp, %pi = %ip) -> (tensor<{row}xf32>, !tile.block_ptr<tensor<1x1xf32>>, !tile.block_ptr<tensor<1x1xf32>>) {{
    %bm = tile.reduce %w {{kind = "max", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
    %bi = tile.reduce %w {{kind = "argmax", axis = 1 : i64}} : tensor<{row}xf32> -> tensor<1xf32>
    %gi = arith.addf %bi, %base : tensor<1xf32>
    %bme = tile.expand_dims %bm {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
    %gie = tile.expand_dims %gi {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
    tile.store %pv, %bme : !tile.block_ptr<tensor<1x1xf32>>
    tile.store %pi, %gie : !tile.block_ptr<tensor<1x1xf32>>
    %bie = tile.expand_dims %bi {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
    %bib = tile.broadcast %bie : tensor<1x1xf32> -> tensor<{row}xf32>
    %hit = arith.cmpf oeq, %cols, %bib : tensor<{row}xf32>
    %wn = arith.select %hit, %ninf, %w : tensor<{row}xi1>, tensor<{row}xf32>
    %pvn = tile.advance %pv, [%c0, %c1] : !tile.block_ptr<tensor<1x1xf32>>
    %pin = tile.advance %pi, [%c0, %c1] : !tile.block_ptr<tensor<1x1xf32>>
    scf.yield %wn, %pvn, %pin : tensor<{row}xf32>, !tile.block_ptr<tensor<1x1xf32>>, !tile.block_ptr<tensor<1x1xf32>>
  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("B", s.blockN), fmt::arg("C", s.candidates),
                     fmt::arg("row", row), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(row)),
                     fmt::arg("loadV", st.load("v", "%xp", row)));
}

}  // namespace strata::tile
