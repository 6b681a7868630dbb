// RUN: strata-opt %s -split-input-file -assign-layouts | FileCheck %s

// The paper's GEMM (section 2.1): a 256x256 workgroup tile on 32 warps, square
// tiling -> warpsPerCTA [8, 4], sizePerWarp [32, 64]; A and B get dot_op layouts.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [8, 4], order = [1, 0]}>
// CHECK: #dot_op = #tile.dot_op<{opIdx = 0, parent = #blocked}>
// CHECK: #dot_op1 = #tile.dot_op<{opIdx = 1, parent = #blocked}>
// CHECK-LABEL: func.func @matmul_kernel_with_block_pointers
// CHECK-SAME: tile.workload = "gemm"
// CHECK: arith.constant dense<0.000000e+00> : tensor<256x256xf32, #blocked>
// CHECK: tile.make_block_ptr {{.*}} -> <tensor<256x32xf16, #dot_op>>
// CHECK: tile.make_block_ptr {{.*}} -> <tensor<32x256xf16, #dot_op1>>
// CHECK: scf.for {{.*}} -> (tensor<256x256xf32, #blocked>, !tile.block_ptr<tensor<256x32xf16, #dot_op>>, !tile.block_ptr<tensor<32x256xf16, #dot_op1>>)
// CHECK: tile.dot {{.*}} : tensor<256x32xf16, #dot_op> * tensor<32x256xf16, #dot_op1> -> tensor<256x256xf32, #blocked>
// CHECK: tile.store {{.*}} : <tensor<256x256xf32, #blocked>>
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

// FlashAttention-2 with O [128, 64] on 8 warps: horizontal tiling; every
// other layout follows the paper's Table 5.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [16, 64], warpsPerCTA = [8, 1], order = [1, 0]}>
// CHECK: #dot_op = #tile.dot_op<{opIdx = 0, parent = #blocked}>
// CHECK: #dot_op1 = #tile.dot_op<{opIdx = 1, parent = #blocked}>
// CHECK: #dot_op2 = #tile.dot_op<{opIdx = 0, parent = #dot_op}>
// CHECK: #dot_op3 = #tile.dot_op<{opIdx = 1, parent = #dot_op}>
// CHECK: #slice = #tile.slice<{dim = 1, parent = #dot_op}>
// CHECK-LABEL: func.func @flash_attention_fwd
// CHECK-SAME: tile.workload = "attention"
// Q
// CHECK: tile.load {{.*}} : <tensor<128x64xf16, #dot_op2>>
// m, l
// CHECK: arith.constant dense<0xFF800000> : tensor<128xf32, #slice>
// CHECK: scf.for
// K
// CHECK: tile.load {{.*}} : <tensor<64x64xf16, #dot_op3>>
// QK
// CHECK: tile.dot {{.*}} : tensor<128x64xf16, #dot_op2> * tensor<64x64xf16, #dot_op3> -> tensor<128x64xf32, #dot_op>
// CHECK: tile.reduce {{.*}} : tensor<128x64xf32, #dot_op> -> tensor<128xf32, #slice>
// P
// CHECK: math.exp2 {{.*}} : tensor<128x64xf32, #dot_op>
// acc * broadcast(alpha): a broadcast joins two equivalent layouts
// CHECK: tile.broadcast {{.*}} : tensor<128x1xf32, #dot_op> -> tensor<128x64xf32, #blocked>
// V
// CHECK: tile.load {{.*}} : <tensor<64x64xf16, #dot_op1>>
// O
// CHECK: tile.dot {{.*}} : tensor<128x64xf16, #dot_op> * tensor<64x64xf16, #dot_op1> -> tensor<128x64xf32, #blocked>
func.func @flash_attention_fwd(%q: !tile.ptr<f16>, %k: !tile.ptr<f16>, %v: !tile.ptr<f16>, %o: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id 0
  %row0 = arith.muli %pid, %c128 : index
  %qp = tile.make_block_ptr %q, [%n, %c64], [%c64, %c1], [%row0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<128x64xf16>>
  %kp = tile.make_block_ptr %k, [%c64, %n], [%c1, %c64], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<64x64xf16>>
  %vp = tile.make_block_ptr %v, [%n, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<64x64xf16>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<128x64xf16>>
  %m0 = arith.constant dense<0xFF800000> : tensor<128xf32>
  %l0 = arith.constant dense<0.0> : tensor<128xf32>
  %acc0 = arith.constant dense<0.0> : tensor<128x64xf32>
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %r:5 = scf.for %j = %c0 to %n step %c64 iter_args(%acc = %acc0, %m = %m0, %l = %l0, %kb = %kp, %vb = %vp) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>, !tile.block_ptr<tensor<64x64xf16>>, !tile.block_ptr<tensor<64x64xf16>>) {
    %kt = tile.load %kb : !tile.block_ptr<tensor<64x64xf16>>
    %qk = tile.dot %qt, %kt, %zero : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %mx = tile.reduce %qk {kind = "max", axis = 1 : i64} : tensor<128x64xf32> -> tensor<128xf32>
    %mnew = arith.maximumf %m, %mx : tensor<128xf32>
    %me = tile.expand_dims %mnew {axis = 1 : i64} : tensor<128xf32> -> tensor<128x1xf32>
    %mb = tile.broadcast %me : tensor<128x1xf32> -> tensor<128x64xf32>
    %s = arith.subf %qk, %mb : tensor<128x64xf32>
    %p = math.exp2 %s : tensor<128x64xf32>
    %ls = tile.reduce %p {kind = "sum", axis = 1 : i64} : tensor<128x64xf32> -> tensor<128xf32>
    %dm = arith.subf %m, %mnew : tensor<128xf32>
    %alpha = math.exp2 %dm : tensor<128xf32>
    %la = arith.mulf %l, %alpha : tensor<128xf32>
    %lnew = arith.addf %la, %ls : tensor<128xf32>
    %ae = tile.expand_dims %alpha {axis = 1 : i64} : tensor<128xf32> -> tensor<128x1xf32>
    %ab = tile.broadcast %ae : tensor<128x1xf32> -> tensor<128x64xf32>
    %accs = arith.mulf %acc, %ab : tensor<128x64xf32>
    %p16 = tile.convert %p : tensor<128x64xf32> -> tensor<128x64xf16>
    %vt = tile.load %vb : !tile.block_ptr<tensor<64x64xf16>>
    %accn = tile.dot %p16, %vt, %accs : tensor<128x64xf16> * tensor<64x64xf16> -> tensor<128x64xf32>
    %kn = tile.advance %kb, [%c0, %c64] : !tile.block_ptr<tensor<64x64xf16>>
    %vn = tile.advance %vb, [%c64, %c0] : !tile.block_ptr<tensor<64x64xf16>>
    scf.yield %accn, %mnew, %lnew, %kn, %vn : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>, !tile.block_ptr<tensor<64x64xf16>>, !tile.block_ptr<tensor<64x64xf16>>
  }
  %le = tile.expand_dims %r#2 {axis = 1 : i64} : tensor<128xf32> -> tensor<128x1xf32>
  %lb = tile.broadcast %le : tensor<128x1xf32> -> tensor<128x64xf32>
  %out = arith.divf %r#0, %lb : tensor<128x64xf32>
  %op = tile.make_block_ptr %o, [%n, %c64], [%c64, %c1], [%row0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<128x64xf32>>
  tile.store %op, %out : !tile.block_ptr<tensor<128x64xf32>>
  return
}

// -----

// Paged decode (K/V through a block table): the root is q k^T, tiled
// vertically, so each warp owns a quarter of the keys of each cache block;
// P V then has K split over warps (B rows split, result held by all).
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [4, 4], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK: #blocked1 = #tile.blocked<{sizePerWarp = [4, 128], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK: #blocked2 = #tile.blocked<{sizePerWarp = [4, 128], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @paged_decode
// CHECK-SAME: tile.workload = "paged_decode"
// CHECK: tile.dot {{.*}} -> tensor<4x16xf32, #blocked>
// CHECK: tile.reduce {{.*}} : tensor<4x16xf32, #blocked> -> tensor<4xf32, #slice>
// CHECK: tile.dot {{.*}} : tensor<4x16xf16, #blocked> * tensor<16x128xf16, #blocked2> -> tensor<4x128xf32, #blocked1>
func.func @paged_decode(%q: !tile.ptr<f16>, %kc: !tile.ptr<f16>, %vc: !tile.ptr<f16>, %table: !tile.ptr<i32>, %o: !tile.ptr<f32>, %nblocks: index, %slots: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %qp = tile.make_block_ptr %q, [%c4, %c128], [%c128, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<4x128xf16>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<4x128xf16>>
  %zero = arith.constant dense<0.0> : tensor<4x16xf32>
  %acc0 = arith.constant dense<0.0> : tensor<4x128xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<4xf32>
  %l0 = arith.constant dense<0.0> : tensor<4xf32>
  %r:3 = scf.for %i = %c0 to %nblocks step %c1 iter_args(%acc = %acc0, %m = %m0, %l = %l0) -> (tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>) {
    %phys = tile.block_lookup %table[%i] : !tile.ptr<i32>
    %row = arith.muli %phys, %c16 : index
    %kp = tile.make_block_ptr %kc, [%c128, %slots], [%c1, %c128], [%c0, %row] : !tile.ptr<f16> -> !tile.block_ptr<tensor<128x16xf16>>
    %vp = tile.make_block_ptr %vc, [%slots, %c128], [%c128, %c1], [%row, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<16x128xf16>>
    %kt = tile.load %kp : !tile.block_ptr<tensor<128x16xf16>>
    %qk = tile.dot %qt, %kt, %zero : tensor<4x128xf16> * tensor<128x16xf16> -> tensor<4x16xf32>
    %mx = tile.reduce %qk {kind = "max", axis = 1 : i64} : tensor<4x16xf32> -> tensor<4xf32>
    %mnew = arith.maximumf %m, %mx : tensor<4xf32>
    %me = tile.expand_dims %mnew {axis = 1 : i64} : tensor<4xf32> -> tensor<4x1xf32>
    %mb = tile.broadcast %me : tensor<4x1xf32> -> tensor<4x16xf32>
    %s = arith.subf %qk, %mb : tensor<4x16xf32>
    %p = math.exp2 %s : tensor<4x16xf32>
    %ls = tile.reduce %p {kind = "sum", axis = 1 : i64} : tensor<4x16xf32> -> tensor<4xf32>
    %dm = arith.subf %m, %mnew : tensor<4xf32>
    %alpha = math.exp2 %dm : tensor<4xf32>
    %la = arith.mulf %l, %alpha : tensor<4xf32>
    %lnew = arith.addf %la, %ls : tensor<4xf32>
    %ae = tile.expand_dims %alpha {axis = 1 : i64} : tensor<4xf32> -> tensor<4x1xf32>
    %ab = tile.broadcast %ae : tensor<4x1xf32> -> tensor<4x128xf32>
    %accs = arith.mulf %acc, %ab : tensor<4x128xf32>
    %p16 = tile.convert %p : tensor<4x16xf32> -> tensor<4x16xf16>
    %vt = tile.load %vp : !tile.block_ptr<tensor<16x128xf16>>
    %accn = tile.dot %p16, %vt, %accs : tensor<4x16xf16> * tensor<16x128xf16> -> tensor<4x128xf32>
    scf.yield %accn, %mnew, %lnew : tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>
  }
  %le = tile.expand_dims %r#2 {axis = 1 : i64} : tensor<4xf32> -> tensor<4x1xf32>
  %lb = tile.broadcast %le : tensor<4x1xf32> -> tensor<4x128xf32>
  %out = arith.divf %r#0, %lb : tensor<4x128xf32>
  %op = tile.make_block_ptr %o, [%c4, %c128], [%c128, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x128xf32>>
  tile.store %op, %out : !tile.block_ptr<tensor<4x128xf32>>
  return
}

// -----

// The CPU piece form's accumulator rows live in memory: the zero fill before
// the key loop (and any scaling after it) meets the dots' chain only
// through the output buffer. Such a dot-free chain gets the row layout of
// its shape instead of failing to get any.
// CHECK-LABEL: func.func @attention_memory_accumulator
// CHECK-SAME: tile.workload = "paged_decode"
// CHECK: arith.constant dense<0.000000e+00> : tensor<2x8xf32, #blocked{{[0-9]*}}>
// CHECK: tile.store %{{.*}}, %{{.*}} : <tensor<2x8xf32, #blocked{{[0-9]*}}>>
func.func @attention_memory_accumulator(%q: !tile.ptr<f32>, %kc: !tile.ptr<f32>, %table: !tile.ptr<i64>, %o: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zp = tile.make_block_ptr %o, [%c2, %c8], [%c8, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x8xf32>>
  %pz = arith.constant dense<0.0> : tensor<2x8xf32>
  tile.store %zp, %pz : !tile.block_ptr<tensor<2x8xf32>>
  %qp = tile.make_block_ptr %q, [%c2, %c8], [%c8, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x8xf32>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<2x8xf32>>
  %zs = arith.constant dense<0.0> : tensor<2x8xf32>
  scf.for %i = %c0 to %n step %c1 {
    %phys = tile.block_lookup %table[%i] : !tile.ptr<i64>
    %row = arith.muli %phys, %c8 : index
    %kp = tile.make_block_ptr %kc, [%c8, %c64], [%c1, %c8], [%c0, %row] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x8xf32>>
    %kt = tile.load %kp : !tile.block_ptr<tensor<8x8xf32>>
    %s = tile.dot %qt, %kt, %zs : tensor<2x8xf32> * tensor<8x8xf32> -> tensor<2x8xf32>
    %p = math.exp2 %s : tensor<2x8xf32>
    %ap = tile.make_block_ptr %o, [%c2, %c8], [%c8, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x8xf32>>
    %a = tile.load %ap : !tile.block_ptr<tensor<2x8xf32>>
    %vp = tile.make_block_ptr %kc, [%c64, %c8], [%c8, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x8xf32>>
    %vt = tile.load %vp : !tile.block_ptr<tensor<8x8xf32>>
    %an = tile.dot %p, %vt, %a : tensor<2x8xf32> * tensor<8x8xf32> -> tensor<2x8xf32>
    tile.store %ap, %an : !tile.block_ptr<tensor<2x8xf32>>
  }
  return
}

// -----

// A `tiling` hint on the dot overrides the detector (paper, section 3.1).
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [16, 64], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @hinted_gemm
// CHECK: tile.dot {{.*}} -> tensor<64x64xf32, #blocked>
func.func @hinted_gemm(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ap = tile.make_block_ptr %a, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x32xf32>>
  %bp = tile.make_block_ptr %b, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x64xf32>>
  %x = tile.load %ap : !tile.block_ptr<tensor<64x32xf32>>
  %y = tile.load %bp : !tile.block_ptr<tensor<32x64xf32>>
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %y, %z {tiling = "horizontal"} : tensor<64x32xf32> * tensor<32x64xf32> -> tensor<64x64xf32>
  %cp = tile.make_block_ptr %c, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x64xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<64x64xf32>>
  return
}

// -----

// No dot: a row reduction (RMSNorm's mean of squares) puts rows on warps.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [2, 256], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK: #slice = #tile.slice<{dim = 1, parent = #blocked}>
// CHECK-LABEL: func.func @row_sum_of_squares
// CHECK-SAME: tile.workload = "reduction"
// CHECK: tile.reduce {{.*}} : tensor<8x256xf32, #blocked> -> tensor<8xf32, #slice>
func.func @row_sum_of_squares(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %xp = tile.make_block_ptr %x, [%rows, %c256], [%c256, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x256xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<8x256xf32>>
  %sq = arith.mulf %v, %v : tensor<8x256xf32>
  %s = tile.reduce %sq {kind = "sum", axis = 1 : i64} : tensor<8x256xf32> -> tensor<8xf32>
  %yp = tile.make_block_ptr %y, [%rows], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8xf32>>
  tile.store %yp, %s : !tile.block_ptr<tensor<8xf32>>
  return
}

// -----

// A one-row reduction (RMSNorm at decode) spreads the row's columns over
// the warps instead.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [1, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK: #slice = #tile.slice<{dim = 1, parent = #blocked}>
// CHECK-LABEL: func.func @one_row_sum_of_squares
// CHECK-SAME: tile.workload = "reduction"
// CHECK: tile.reduce {{.*}} : tensor<1x256xf32, #blocked> -> tensor<1xf32, #slice>
func.func @one_row_sum_of_squares(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %row = tile.program_id 0
  %xp = tile.make_block_ptr %x, [%rows, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x256xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<1x256xf32>>
  %sq = arith.mulf %v, %v : tensor<1x256xf32>
  %s = tile.reduce %sq {kind = "sum", axis = 1 : i64} : tensor<1x256xf32> -> tensor<1xf32>
  %e = tile.expand_dims %s {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %b = tile.broadcast %e : tensor<1x1xf32> -> tensor<1x256xf32>
  %r = arith.mulf %v, %b : tensor<1x256xf32>
  %yp = tile.make_block_ptr %y, [%rows, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x256xf32>>
  tile.store %yp, %r : !tile.block_ptr<tensor<1x256xf32>>
  return
}

// -----

// Elementwise (SiLU): the stored tile's rows go to warps.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [8, 64], warpsPerCTA = [2, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @silu
// CHECK-SAME: tile.workload = "elementwise"
// CHECK: tile.silu {{.*}} : tensor<16x64xf32, #blocked>
func.func @silu(%x: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %x, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  %v = tile.load %p : !tile.block_ptr<tensor<16x64xf32>>
  %s = tile.silu %v : tensor<16x64xf32>
  tile.store %p, %s : !tile.block_ptr<tensor<16x64xf32>>
  return
}

// -----

// Elementwise on one row (a fused elementwise region's row block): its
// columns go to warps (before, rows did, and one row did not split), and
// the per-row value it broadcasts (a col operand) takes that layout back
// through the broadcast, held whole by every warp.
// CHECK: #blocked = #tile.blocked<{sizePerWarp = [1, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-LABEL: func.func @one_row_elementwise
// CHECK-SAME: tile.workload = "elementwise"
// CHECK: tile.load {{.*}} : <tensor<1x1xf32, #blocked>>
// CHECK: tile.broadcast {{.*}} -> tensor<1x256xf32, #blocked>
// CHECK: tile.silu {{.*}} : tensor<1x256xf32, #blocked>
func.func @one_row_elementwise(%x: !tile.ptr<f32>, %c: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %row = tile.program_id 0
  %cp = tile.make_block_ptr %c, [%rows, %c1], [%c1, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %cv = tile.load %cp : !tile.block_ptr<tensor<1x1xf32>>
  %xp = tile.make_block_ptr %x, [%rows, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x256xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<1x256xf32>>
  %b = tile.broadcast %cv : tensor<1x1xf32> -> tensor<1x256xf32>
  %d = arith.subf %v, %b : tensor<1x256xf32>
  %s = tile.silu %d : tensor<1x256xf32>
  tile.store %xp, %s : !tile.block_ptr<tensor<1x256xf32>>
  return
}

// -----

// Two copies that never meet (the KV write's K and V rows): the chain the
// root does not reach is an elementwise workload of its own and gets the
// root layout for its shape.
// CHECK-DAG: #[[A:.*]] = #tile.blocked<{sizePerWarp = [4, 16], warpsPerCTA = [2, 1], order = [1, 0]}>
// CHECK-DAG: #[[B:.*]] = #tile.blocked<{sizePerWarp = [1, 32], warpsPerCTA = [2, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @two_chains
// CHECK: tile.load {{.*}} : <tensor<8x16xf32, #[[A]]>>
// CHECK: tile.load {{.*}} : <tensor<2x32xf32, #[[B]]>>
func.func @two_chains(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %x, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x16xf32>>
  %q = tile.make_block_ptr %y, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x32xf32>>
  %a = tile.load %p : !tile.block_ptr<tensor<8x16xf32>>
  %b = tile.load %q : !tile.block_ptr<tensor<2x32xf32>>
  tile.store %p, %a : !tile.block_ptr<tensor<8x16xf32>>
  tile.store %q, %b : !tile.block_ptr<tensor<2x32xf32>>
  return
}

// -----

// A GEMM whose K is walked in chunks: the first chunk's dot starts from
// zeros, a later chunk's from the partial sums reloaded from C. The second
// chain never meets the root, so it gets the root's layout for its shape
// and the root's (hinted) tiling: both dots lay out the same.
// CHECK: #[[C:.*]] = #tile.blocked<{sizePerWarp = [8, 32], warpsPerCTA = [1, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @gemm_chunks
// CHECK-SAME: tile.workload = "gemm"
// CHECK: tile.dot {{.*}} -> tensor<8x32xf32, #[[C]]>
// CHECK: tile.load {{.*}} : <tensor<8x32xf32, #[[C]]>>
// CHECK: tile.dot {{.*}} -> tensor<8x32xf32, #[[C]]>
func.func @gemm_chunks(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %ap = tile.make_block_ptr %a, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x4xf32>>
  %bp = tile.make_block_ptr %b, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x32xf32>>
  %cp = tile.make_block_ptr %c, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x32xf32>>
  %z = arith.constant dense<0.0> : tensor<8x32xf32>
  %x = tile.load %ap : !tile.block_ptr<tensor<8x4xf32>>
  %y = tile.load %bp : !tile.block_ptr<tensor<4x32xf32>>
  %d = tile.dot %x, %y, %z {tiling = "horizontal"} : tensor<8x4xf32> * tensor<4x32xf32> -> tensor<8x32xf32>
  tile.store %cp, %d : !tile.block_ptr<tensor<8x32xf32>>
  %ap2 = tile.advance %ap, [%c0, %c4] : !tile.block_ptr<tensor<8x4xf32>>
  %bp2 = tile.advance %bp, [%c4, %c0] : !tile.block_ptr<tensor<4x32xf32>>
  %part = tile.load %cp : !tile.block_ptr<tensor<8x32xf32>>
  %x2 = tile.load %ap2 : !tile.block_ptr<tensor<8x4xf32>>
  %y2 = tile.load %bp2 : !tile.block_ptr<tensor<4x32xf32>>
  %d2 = tile.dot %x2, %y2, %part : tensor<8x4xf32> * tensor<4x32xf32> -> tensor<8x32xf32>
  tile.store %cp, %d2 : !tile.block_ptr<tensor<8x32xf32>>
  return
}

// -----

// tile.mask keeps its operand's layout.
// CHECK-LABEL: func.func @masked_scores
// CHECK: tile.mask {{.*}} {causal} : tensor<4x16xf32, #blocked{{.*}}>
func.func @masked_scores(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %row: index, %col: index, %lim: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %s, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<4x16xf32>>
  %m = tile.mask %x, [%row, %col], %lim {causal} : tensor<4x16xf32>
  %q = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  tile.store %q, %m : !tile.block_ptr<tensor<4x16xf32>>
  return
}

// -----

// A split_k hint lays out the dot's A operand with K over the 4 warps
// ([16, 64] per warp); B follows with its K rows over warps and the result
// is held whole by every warp ([16, 32], warps laid along N only by name).
// CHECK-DAG: #[[C:.*]] = #tile.blocked<{sizePerWarp = [16, 32], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-DAG: #[[A:.*]] = #tile.blocked<{sizePerWarp = [16, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-DAG: #[[B:.*]] = #tile.blocked<{sizePerWarp = [64, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK-LABEL: func.func @split_k_gemv
// CHECK: tile.dot {{.*}} : tensor<16x256xbf16, #[[A]]> * tensor<256x32xbf16, #[[B]]> -> tensor<16x32xf32, #[[C]]>
func.func @split_k_gemv(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %pn = tile.program_id 1
  %col = arith.muli %pn, %c32 : index
  %init = arith.constant dense<1.0> : tensor<16x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x256xbf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%c1, %K], [%c0, %col] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<256x32xbf16>>
  %r:3 = scf.for %k = %c0 to %K step %c256 iter_args(%acc = %init, %pa = %ap, %pb = %bp) -> (tensor<16x32xf32>, !tile.block_ptr<tensor<16x256xbf16>>, !tile.block_ptr<tensor<256x32xbf16>>) {
    %x = tile.load %pa : !tile.block_ptr<tensor<16x256xbf16>>
    %y = tile.load %pb : !tile.block_ptr<tensor<256x32xbf16>>
    %d = tile.dot %x, %y, %acc {tiling = "split_k"} : tensor<16x256xbf16> * tensor<256x32xbf16> -> tensor<16x32xf32>
    %na = tile.advance %pa, [%c0, %c256] : !tile.block_ptr<tensor<16x256xbf16>>
    %nb = tile.advance %pb, [%c256, %c0] : !tile.block_ptr<tensor<256x32xbf16>>
    scf.yield %d, %na, %nb : tensor<16x32xf32>, !tile.block_ptr<tensor<16x256xbf16>>, !tile.block_ptr<tensor<256x32xbf16>>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %col] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x32xf32>>
  tile.store %cp, %r#0 : !tile.block_ptr<tensor<16x32xf32>>
  return
}

// -----

// A tile loaded in either branch of an scf.if (a GEMM epilogue's residual,
// read in pairs or not) takes the root's layout through the if's result.
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

// -----

// A reshape keeps each warp's run of the row-major order: the reduced
// [1, 256] row (the root) splits its columns over the 4 warps, so the
// [8, 32] blocks it is reshaped from split their rows, as do the column of
// block scales and its broadcast along the rows (a quantized GEMV's step).
// CHECK: #[[BLOCKS:.*]] = #tile.blocked<{sizePerWarp = [2, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
// CHECK: #[[ROW:.*]] = #tile.blocked<{sizePerWarp = [1, 64], warpsPerCTA = [1, 4], order = [1, 0]}>
// CHECK-LABEL: func.func @reshape_runs
// CHECK: tile.load {{.*}} : <tensor<8x1xf32, #[[BLOCKS]]>>
// CHECK: tile.broadcast {{.*}} -> tensor<8x32xf32, #[[BLOCKS]]>
// CHECK: tile.reshape {{.*}} : tensor<8x32xf32, #[[BLOCKS]]> -> tensor<1x256xf32, #[[ROW]]>
// CHECK: tile.reduce {{.*}} : tensor<1x256xf32, #[[ROW]]>
func.func @reshape_runs(%w: !tile.ptr<f32>, %s: !tile.ptr<f32>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %wp = tile.make_block_ptr %w, [%c8, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x32xf32>>
  %sp = tile.make_block_ptr %s, [%c8, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x1xf32>>
  %wv = tile.load %wp : !tile.block_ptr<tensor<8x32xf32>>
  %sv = tile.load %sp : !tile.block_ptr<tensor<8x1xf32>>
  %sb = tile.broadcast %sv : tensor<8x1xf32> -> tensor<8x32xf32>
  %x = arith.mulf %wv, %sb : tensor<8x32xf32>
  %row = tile.reshape %x : tensor<8x32xf32> -> tensor<1x256xf32>
  %r = tile.reduce %row {kind = "sum", axis = 1 : i64} : tensor<1x256xf32> -> tensor<1xf32>
  %e = tile.expand_dims %r {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %op = tile.make_block_ptr %o, [%c1, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %op, %e : !tile.block_ptr<tensor<1x1xf32>>
  return
}
