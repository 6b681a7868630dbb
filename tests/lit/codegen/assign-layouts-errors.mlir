// RUN: strata-opt %s -split-input-file -assign-layouts -verify-diagnostics

// expected-error @+1 {{needs a warp count}}
func.func @no_warps(%x: !tile.ptr<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  %v = tile.load %p : !tile.block_ptr<tensor<16xf32>>
  tile.store %p, %v : !tile.block_ptr<tensor<16xf32>>
  return
}

// -----

// expected-error @+1 {{elementwise root: a tile of shape [6] cannot be split over 4 warps}}
func.func @indivisible(%x: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<6xf32>>
  %v = tile.load %p : !tile.block_ptr<tensor<6xf32>>
  tile.store %p, %v : !tile.block_ptr<tensor<6xf32>>
  return
}

// -----

// expected-error @+1 {{nothing to lay out}}
func.func @empty() attributes {tile.num_warps = 4 : i64} {
  return
}
