// RUN: strata-opt %s -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 | FileCheck %s --check-prefix=SM90

// Hopper (mma.sync m16n8k16, ldmatrix.x4 16x16 b16): 4 A loads, 8 B loads,
// 2x8x2 = 32 mma-sized dots.
// SM90-LABEL: func.func @matmul_kernel_with_block_pointers
// SM90: scf.for
// SM90-COUNT-12: tile.load {{.*}} : <tensor<16x16xf16>>
// SM90-NOT: tile.load
// SM90-COUNT-32: tile.dot {{.*}} : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
// SM90-NOT: tile.dot
// SM90: scf.yield
func.func @matmul_kernel_with_block_pointers(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %c: !tile.ptr<f32>) attributes {tile.num_warps = 32 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c4096 = arith.constant 4096 : index
  %pid = tile.program_id 0
  %pm = arith.divui %pid, %c16 : index
  %pn = arith.remui %pid, %c16 : index
  %offY = arith.muli %pm, %c256 : index
  %offX = arith.muli %pn, %c256 : index
  %zero = arith.constant dense<0.0> : tensor<256x256xf32>
  %ap = tile.make_block_ptr %a, [%c4096, %c4096], [%c4096, %c1], [%offY, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<256x32xf16>>
  %bp = tile.make_block_ptr %b, [%c4096, %c4096], [%c4096, %c1], [%c0, %offX] : !tile.ptr<f16> -> !tile.block_ptr<tensor<32x256xf16>>
  %r:3 = scf.for %k = %c0 to %c4096 step %c32 iter_args(%acc = %zero, %pa = %ap, %pb = %bp) -> (tensor<256x256xf32>, !tile.block_ptr<tensor<256x32xf16>>, !tile.block_ptr<tensor<32x256xf16>>) {
    %x = tile.load %pa : !tile.block_ptr<tensor<256x32xf16>>
    %y = tile.load %pb : !tile.block_ptr<tensor<32x256xf16>>
    %d = tile.dot %x, %y, %acc : tensor<256x32xf16> * tensor<32x256xf16> -> tensor<256x256xf32>
    %na = tile.advance %pa, [%c0, %c32] : !tile.block_ptr<tensor<256x32xf16>>
    %nb = tile.advance %pb, [%c32, %c0] : !tile.block_ptr<tensor<32x256xf16>>
    scf.yield %d, %na, %nb : tensor<256x256xf32>, !tile.block_ptr<tensor<256x32xf16>>, !tile.block_ptr<tensor<32x256xf16>>
  }
  %cp = tile.make_block_ptr %c, [%c4096, %c4096], [%c4096, %c1], [%offY, %offX] : !tile.ptr<f32> -> !tile.block_ptr<tensor<256x256xf32>>
  tile.store %cp, %r#0 : !tile.block_ptr<tensor<256x256xf32>>
  return
}
