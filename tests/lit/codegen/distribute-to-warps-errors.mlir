// RUN: strata-opt %s -split-input-file -distribute-to-warps -verify-diagnostics

// expected-error @+1 {{run assign-layouts first (no tile.num_warps attribute)}}
func.func @no_warps() {
  return
}

// -----

func.func @unlaid(%x: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{tile without a layout: run assign-layouts first}}
  %p = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  return
}
