// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=xe:pvc | FileCheck %s --check-prefix=XE
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size="target=xe:pvc max-dot=8,16,16 max-load=32,32" | FileCheck %s --check-prefix=XE
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=xe:dg2 | FileCheck %s --check-prefix=DG2

// The paper's Listing 4 on the Xe table (max load 32x32 f16, DPAS 8x16x16):
// A's 32x32 load stays, B's 32x64 load splits in two, the 32x64x32 dot becomes
// 32 dots of 8x16x16 on extracted sub-blocks, C is stored in 8x16 pieces.
// XE-LABEL: func.func @matmul_kernel_with_block_pointers
// XE-SAME: tile.target = "xe:pvc"
// XE: arith.constant dense<0.000000e+00> : tensor<8x16xf32>
// XE: tile.make_block_ptr %arg0, {{.*}} -> <tensor<32x32xf16>>
// XE: tile.make_block_ptr %arg1, {{.*}}, [%c0, %[[X:.*]]] : <f16> -> <tensor<32x32xf16>>
// XE: %[[X1:.*]] = arith.addi %[[X]], %c32
// XE: tile.make_block_ptr %arg1, {{.*}}, [%c0, %[[X1]]] : <f16> -> <tensor<32x32xf16>>
// XE: scf.for {{.*}} -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, !tile.block_ptr<tensor<32x32xf16>>, !tile.block_ptr<tensor<32x32xf16>>, !tile.block_ptr<tensor<32x32xf16>>)
// Extracts sit right after the load they read (loop-invariant when it is).
// XE: %[[A:.*]] = tile.load %{{.*}} : <tensor<32x32xf16>>
// XE-NEXT: %[[A0:.*]] = tile.extract %[[A]][0] : tensor<32x32xf16> -> tensor<8x16xf16>
// XE: %[[B0:.*]] = tile.load %{{.*}} : <tensor<32x32xf16>>
// XE-NEXT: %[[B00:.*]] = tile.extract %[[B0]][0] : tensor<32x32xf16> -> tensor<16x16xf16>
// XE: tile.load %{{.*}} : <tensor<32x32xf16>>
// XE-NOT: tile.load
// XE: tile.dot %[[A0]], %[[B00]], %{{.*}} : tensor<8x16xf16> * tensor<16x16xf16> -> tensor<8x16xf32>
// XE-COUNT-31: tile.dot {{.*}} : tensor<8x16xf16> * tensor<16x16xf16> -> tensor<8x16xf32>
// XE-NOT: tile.dot
// XE: scf.yield
// XE-COUNT-16: tile.store {{.*}} : <tensor<8x16xf32>>
// XE-NOT: tile.store
// The same kernel on Arc A-series (DG2): DPAS 8x8x16 (the 8-wide form) and
// no 2D block loads, so every load is one row (sub-group block reads): 64
// dots of 8x8x16 and 32 C pieces of 8x8 for the warp's 32x64 tile.
// DG2-LABEL: func.func @matmul_kernel_with_block_pointers
// DG2-SAME: tile.target = "xe:dg2"
// DG2-NOT: tile.load {{.*}} : <tensor<{{[2-9]|[1-9][0-9]}}x
// DG2: tile.load {{.*}} : <tensor<1x32xf16>>
// DG2-COUNT-64: tile.dot {{.*}} : tensor<8x16xf16> * tensor<16x8xf16> -> tensor<8x8xf32>
// DG2-NOT: tile.dot
// DG2: scf.yield
// DG2-COUNT-32: tile.store {{.*}} : <tensor<8x8xf32>>
// DG2-NEXT: return

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

// FlashAttention-2 per warp (16x64 rows of O) on Xe: the row max of a 16x64
// q k^T combines the four 8x16 pieces of each 8 rows elementwise and
// reduces the result once; P feeds the second dot's 8x16 A blocks directly
// (same pieces as the first dot's result).
// XE-LABEL: func.func @flash_attention_fwd
// XE: scf.for
// XE: %[[W0:.*]] = arith.maximumf %{{.*}}, %{{.*}} : tensor<8x16xf32>
// XE: %[[W1:.*]] = arith.maximumf %[[W0]], %{{.*}} : tensor<8x16xf32>
// XE: %[[W2:.*]] = arith.maximumf %[[W1]], %{{.*}} : tensor<8x16xf32>
// XE-NEXT: %[[R0:.*]] = tile.reduce %[[W2]] {axis = 1 : i64, kind = "max"} : tensor<8x16xf32> -> tensor<8xf32>
// XE: %[[R1:.*]] = tile.reduce %{{.*}} {axis = 1 : i64, kind = "max"} : tensor<8x16xf32> -> tensor<8xf32>
// XE-NOT: tile.reduce {{.*}}kind = "max"
// XE: arith.maximumf %{{.*}}, %[[R0]] : tensor<8xf32>
// XE: tile.convert {{.*}} : tensor<8x16xf32> -> tensor<8x16xf16>
// XE: tile.dot {{.*}} : tensor<8x16xf16> * tensor<16x16xf16> -> tensor<8x16xf32>
// XE: scf.yield
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
