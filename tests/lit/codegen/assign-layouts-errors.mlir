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

// -----

// A dot's square tiling puts a 2 x 2 grid of warps on its result: no warp
// holds one run of the row-major order.
func.func @reshape_square(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  %ap = tile.make_block_ptr %a, [%c32, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<32x16xf16>>
  %bp = tile.make_block_ptr %b, [%c16, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<16x32xf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<32x16xf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x32xf16>>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %d = tile.dot %x, %y, %zero : tensor<32x16xf16> * tensor<16x32xf16> -> tensor<32x32xf32>
  // expected-error @+1 {{cannot keep each warp's run of the row-major order through the reshape}}
  %r = tile.reshape %d : tensor<32x32xf32> -> tensor<1x1024xf32>
  %op = tile.make_block_ptr %o, [%c1, %c1024], [%c1024, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1024xf32>>
  tile.store %op, %r : !tile.block_ptr<tensor<1x1024xf32>>
  return
}
