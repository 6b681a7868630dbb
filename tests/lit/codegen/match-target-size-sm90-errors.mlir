// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 -verify-diagnostics

// A dot on swizzled local buffers is a warpgroup dot: 16 rows per warp in
// the horizontal tiling. Without the hint, assign-layouts' square grid
// gives each of the 4 warps 32 rows.
func.func @group_dot_square(%c: !tile.ptr<f32>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %lb = tile.make_block_ptr %sb, [%c64, %c64], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %x = tile.load %la {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %y = tile.load %lb {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{a dot on swizzled local memory runs as a warpgroup dot: it needs the `horizontal` tiling with 16 rows per warp, N a multiple of 8 up to 256 and K a multiple of 16 (got 32x32x64)}}
  %d = tile.dot %x, %y, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %cp = tile.make_block_ptr %c, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x64xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<64x64xf32>>
  return
}

// -----

// A warpgroup dot's B operand stays in swizzled local memory (A may come
// from registers, B may not).
func.func @group_dot_mixed(%b: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %gb = tile.make_block_ptr %b, [%c64, %c64], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %x = tile.load %la {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %y = tile.load %gb {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{a warpgroup dot takes B from swizzled local memory (A from there or from registers)}}
  %d = tile.dot %x, %y, %zero {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %cp = tile.make_block_ptr %c, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x64xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<64x64xf32>>
  return
}
