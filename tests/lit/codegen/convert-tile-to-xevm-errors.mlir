// RUN: strata-opt %s -split-input-file -convert-tile-to-xevm -verify-diagnostics

// The lowering reads the sub-group size and DPAS shape off the target row.
// expected-error @+1 {{convert-tile-to-xevm needs the function's tile.target: run match-target-size}}
func.func @no_target() attributes {tile.num_warps = 1 : i64} {
  return
}

// -----

// xe:dg2's sub-group-8 DPAS form is not lowered.
// expected-error @+1 {{convert-tile-to-xevm lowers the sub-group-16 rows (xe:pvc, xe:bmg); xe:dg2 has sub-group 8 and DPAS 8x8x16}}
func.func @dg2() attributes {tile.num_warps = 1 : i64, tile.target = "xe:dg2"} {
  return
}

// -----

// Tiles are [R, 16 k]: a lane holds a column of each 16-column block.
func.func @narrow(%p: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64, tile.target = "xe:pvc"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bp = tile.make_block_ptr %p, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x8xf32>>
  // expected-error @+1 {{the xe lowering holds [R, 16 k] and [16 k] tiles (a column per lane) and [R, 1] / [1] column tiles; got 'tensor<8x8xf32>'}}
  %x = tile.load %bp : !tile.block_ptr<tensor<8x8xf32>>
  return
}

// -----

// A reduction of 16 rows would give [16], which the layout holds as a row
// (16 columns, one a lane), not as a column.
func.func @reduce_rows(%p: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64, tile.target = "xe:pvc"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bp = tile.make_block_ptr %p, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  %x = tile.load %bp : !tile.block_ptr<tensor<16x16xf32>>
  // expected-error @+1 {{the xe lowering reduces along the rows of [R, 16 k] tiles with R not a multiple of 16 (the result is a column); got 'tensor<16x16xf32>'}}
  %r = tile.reduce %x {kind = "sum", axis = 1 : i64} : tensor<16x16xf32> -> tensor<16xf32>
  return
}

// -----

// Across sub-groups a reduction needs shared local memory.
func.func @reduce_cross(%p: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64, tile.target = "xe:pvc"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bp = tile.make_block_ptr %p, [%c1, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x16xf32>>
  %x = tile.load %bp : !tile.block_ptr<tensor<1x16xf32>>
  // expected-error @+1 {{the xe lowering reduces within a sub-group; across sub-groups needs shared local memory (not yet)}}
  %r = tile.reduce %x {kind = "sum", axis = 1 : i64, cross_warp} : tensor<1x16xf32> -> tensor<1xf32>
  return
}

// -----

// argmax runs along the rows of a tile whose result is a column; 16 rows
// give a lane-spread [16] result, which it does not produce.
func.func @argmax_sixteen_rows(%p: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64, tile.target = "xe:pvc"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bp = tile.make_block_ptr %p, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  %x = tile.load %bp : !tile.block_ptr<tensor<16x16xf32>>
  // expected-error @+1 {{the xe lowering's argmax runs along the rows of [R, 16 k] tiles with R not a multiple of 16; got 'tensor<16x16xf32>'}}
  %r = tile.reduce %x {kind = "argmax", axis = 1 : i64} : tensor<16x16xf32> -> tensor<16xf32>
  return
}
