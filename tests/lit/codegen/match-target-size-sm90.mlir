// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 | FileCheck %s --check-prefix=SM90

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

// -----

// Paged decode, keys over two warps, an accumulator from ones: its sum across warps every
// step is taken per [16, 8] accumulator piece of the partial p v (one
// class with the value it joins, not the [16, 64] a broadcast of alpha
// would derive).
// SM90-LABEL: func.func @decode_keys_over_warps
// SM90: scf.for
// SM90-COUNT-8: tile.dot {{.*}} -> tensor<16x8xf32>
// SM90-COUNT-8: tile.reduce {{.*}} {cross_warp, kind = "sum"} : tensor<16x8xf32> -> tensor<16x8xf32>
// SM90: scf.yield
func.func @decode_keys_over_warps(%q: !tile.ptr<bf16>, %kc: !tile.ptr<bf16>, %vc: !tile.ptr<bf16>, %table: !tile.ptr<i64>, %o: !tile.ptr<f32>, %n: index, %rows: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %qp = tile.make_block_ptr %q, [%c16, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x64xbf16>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<16x64xbf16>>
  %zero = arith.constant dense<0.0> : tensor<16x32xf32>
  %acc0 = arith.constant dense<1.0> : tensor<16x64xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<16xf32>
  %l0 = arith.constant dense<0.0> : tensor<16xf32>
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0, %m = %m0, %l = %l0) -> (tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>) {
    %blk = tile.block_lookup %table[%i] : !tile.ptr<i64>
    %row = arith.muli %blk, %c32 : index
    %kp = tile.make_block_ptr %kc, [%c64, %rows], [%c1, %c64], [%c0, %row] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    %kt = tile.load %kp : !tile.block_ptr<tensor<64x32xbf16>>
    %qk = tile.dot %qt, %kt, %zero : tensor<16x64xbf16> * tensor<64x32xbf16> -> tensor<16x32xf32>
    %mx = tile.reduce %qk {kind = "max", axis = 1 : i64} : tensor<16x32xf32> -> tensor<16xf32>
    %mnew = arith.maximumf %m, %mx : tensor<16xf32>
    %me = tile.expand_dims %mnew {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
    %mb = tile.broadcast %me : tensor<16x1xf32> -> tensor<16x32xf32>
    %s = arith.subf %qk, %mb : tensor<16x32xf32>
    %p = math.exp2 %s : tensor<16x32xf32>
    %ls = tile.reduce %p {kind = "sum", axis = 1 : i64} : tensor<16x32xf32> -> tensor<16xf32>
    %dm = arith.subf %m, %mnew : tensor<16xf32>
    %alpha = math.exp2 %dm : tensor<16xf32>
    %la = arith.mulf %l, %alpha : tensor<16xf32>
    %lnew = arith.addf %la, %ls : tensor<16xf32>
    %ae = tile.expand_dims %alpha {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
    %ab = tile.broadcast %ae : tensor<16x1xf32> -> tensor<16x64xf32>
    %accs = arith.mulf %acc, %ab : tensor<16x64xf32>
    %pb = tile.convert %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %vp = tile.make_block_ptr %vc, [%rows, %c64], [%c64, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x64xbf16>>
    %vt = tile.load %vp : !tile.block_ptr<tensor<32x64xbf16>>
    %accn = tile.dot %pb, %vt, %accs : tensor<16x32xbf16> * tensor<32x64xbf16> -> tensor<16x64xf32>
    scf.yield %accn, %mnew, %lnew : tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>
  }
  %le = tile.expand_dims %r#2 {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
  %lb = tile.broadcast %le : tensor<16x1xf32> -> tensor<16x64xf32>
  %out = arith.divf %r#0, %lb : tensor<16x64xf32>
  %op = tile.make_block_ptr %o, [%c16, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  tile.store %op, %out : !tile.block_ptr<tensor<16x64xf32>>
  return
}

// -----

// A tile an scf.if yields joins the def-use class of what consumes it: the
// residual loaded in either branch takes the accumulator's [16, 8] pieces
// (a 64 x 64 dot on 4 warps: 8 a warp), and the if yields those.
// SM90-LABEL: func.func @if_yields_residual
// SM90: scf.if %{{.*}} -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
// SM90: } else {
// SM90-COUNT-8: arith.addf {{.*}} : tensor<16x8xf32>
// CHECK-LABEL: func.func @if_yields_residual
// CHECK: scf.if %{{.*}} -> (tensor<64x64xf32, #blocked>) {
// CHECK: tile.load {{.*}} : <tensor<64x64xf32, #blocked>>
// CHECK: } else {
// CHECK: tile.load {{.*}} : <tensor<64x64xf32, #blocked>>
// CHECK: arith.addf {{.*}} : tensor<64x64xf32, #blocked>
func.func @if_yields_residual(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %c: !tile.ptr<f32>, %pairs: i1) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %ap = tile.make_block_ptr %a, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<64x64xf16>>
  %bp = tile.make_block_ptr %b, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<64x64xf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<64x64xf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<64x64xf16>>
  %d = tile.dot %x, %y, %zero : tensor<64x64xf16> * tensor<64x64xf16> -> tensor<64x64xf32>
  %cp = tile.make_block_ptr %c, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x64xf32>>
  %r = scf.if %pairs -> tensor<64x64xf32> {
    %p = tile.load %cp {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xf32>>
    scf.yield %p : tensor<64x64xf32>
  } else {
    %e = tile.load %cp {in_bounds} : !tile.block_ptr<tensor<64x64xf32>>
    scf.yield %e : tensor<64x64xf32>
  }
  %s = arith.addf %d, %r : tensor<64x64xf32>
  tile.store %cp, %s : !tile.block_ptr<tensor<64x64xf32>>
  return
}
