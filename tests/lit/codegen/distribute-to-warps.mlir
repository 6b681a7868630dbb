// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps | FileCheck %s

// The paper's Listing 3: each of the 32 warps computes a 32x64 block of C
// from a 32x32 block of A (shared by the 4 warps of a row) and a 32x64 block
// of B; block pointer offsets become functions of program id and warp id.
// CHECK-LABEL: func.func @matmul_kernel_with_block_pointers
// CHECK: %[[W:.*]] = tile.warp_id
// CHECK: %[[Q:.*]] = arith.divui %[[W]], %c4
// CHECK: %[[ROW:.*]] = arith.remui %[[Q]], %c8
// CHECK: %[[Q2:.*]] = arith.divui %[[W]], %c1
// CHECK: %[[COL:.*]] = arith.remui %[[Q2]], %c4
// CHECK: %[[OFFY:.*]] = arith.muli %{{.*}}, %c256
// CHECK: %[[OFFX:.*]] = arith.muli %{{.*}}, %c256
// CHECK: arith.constant dense<0.000000e+00> : tensor<32x64xf32, #blocked>
// CHECK: %[[DY:.*]] = arith.muli %[[ROW]], %c32
// CHECK: %[[Y:.*]] = arith.addi %[[OFFY]], %[[DY]]
// CHECK: tile.make_block_ptr %arg0, {{.*}}, [%[[Y]], %c0] : <f16> -> <tensor<32x32xf16, #dot_op>>
// CHECK: %[[DX:.*]] = arith.muli %[[COL]], %c64
// CHECK: %[[X:.*]] = arith.addi %[[OFFX]], %[[DX]]
// CHECK: tile.make_block_ptr %arg1, {{.*}}, [%c0, %[[X]]] : <f16> -> <tensor<32x64xf16, #dot_op1>>
// CHECK: tile.dot {{.*}} : tensor<32x32xf16, #dot_op> * tensor<32x64xf16, #dot_op1> -> tensor<32x64xf32, #blocked>
// CHECK: tile.store {{.*}} : <tensor<32x64xf32, #blocked>>
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

// Paged decode: each warp takes its own keys; the row max combines across
// warps every step (alpha is then the same on every warp), while l and acc
// stay per-warp partial sums, scaled by that alpha (l * alpha + its rows'
// sum, acc * alpha + its p v), summed across warps once after the loop.
// CHECK-LABEL: func.func @paged_decode
// CHECK: %[[LOOP:.*]]:3 = scf.for
// CHECK: tile.block_lookup
// CHECK: tile.dot {{.*}} : tensor<4x128xf16, #dot_op> * tensor<128x4xf16, #dot_op1> -> tensor<4x4xf32, #blocked>
// CHECK: tile.reduce {{.*}} {axis = 1 : i64, cross_warp, kind = "max"} : tensor<4x4xf32, #blocked> -> tensor<4xf32, #slice>
// CHECK: %[[ROWS:.*]] = tile.reduce {{.*}} {axis = 1 : i64, kind = "sum"}
// CHECK: %[[LA:.*]] = arith.mulf %arg10, %{{.*}} : tensor<4xf32, #slice>
// CHECK: %[[L:.*]] = arith.addf %[[LA]], %[[ROWS]] : tensor<4xf32, #slice>
// CHECK: %[[ACCS:.*]] = arith.mulf %arg8, %{{.*}} : tensor<4x128xf32, #blocked1>
// CHECK: %[[ACC:.*]] = tile.dot {{.*}}, %[[ACCS]] : tensor<4x4xf16, #blocked> * tensor<4x128xf16, #blocked2> -> tensor<4x128xf32, #blocked1>
// CHECK-NOT: cross_warp
// CHECK: scf.yield %[[ACC]], %{{.*}}, %[[L]]
// CHECK: %[[LSUM:.*]] = tile.reduce %[[LOOP]]#2 {cross_warp, kind = "sum"} : tensor<4xf32, #slice>
// CHECK: %[[ACCSUM:.*]] = tile.reduce %[[LOOP]]#0 {cross_warp, kind = "sum"} : tensor<4x128xf32, #blocked1>
// CHECK: tile.expand_dims %[[LSUM]]
// CHECK: arith.divf %[[ACCSUM]]
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

// Two key loops (a mask-free one, then the masked tail): the second carries
// on from the first's per-warp partials; one sum across warps after it.
// CHECK-LABEL: func.func @paged_decode_two_loops
// CHECK: %[[L1:.*]]:3 = scf.for
// CHECK-NOT: cross_warp, kind = "sum"
// CHECK: scf.yield
// CHECK-NOT: tile.reduce
// CHECK: %[[L2:.*]]:3 = scf.for {{.*}} iter_args(%{{.*}} = %[[L1]]#0, %{{.*}} = %[[L1]]#1, %{{.*}} = %[[L1]]#2)
// CHECK-NOT: cross_warp, kind = "sum"
// CHECK: scf.yield
// CHECK: tile.reduce %[[L2]]#2 {cross_warp, kind = "sum"}
// CHECK: tile.reduce %[[L2]]#0 {cross_warp, kind = "sum"}
// CHECK-NOT: tile.reduce
func.func @paged_decode_two_loops(%q: !tile.ptr<f16>, %kc: !tile.ptr<f16>, %vc: !tile.ptr<f16>, %table: !tile.ptr<i32>, %o: !tile.ptr<f32>, %n1: index, %n2: index, %slots: index) attributes {tile.num_warps = 4 : i64} {
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
  %r1:3 = scf.for %i = %c0 to %n1 step %c1 iter_args(%acc = %acc0, %m = %m0, %l = %l0) -> (tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>) {
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
  %r2:3 = scf.for %i = %n1 to %n2 step %c1 iter_args(%acc = %r1#0, %m = %r1#1, %l = %r1#2) -> (tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>) {
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
  %le = tile.expand_dims %r2#2 {axis = 1 : i64} : tensor<4xf32> -> tensor<4x1xf32>
  %lb = tile.broadcast %le : tensor<4x1xf32> -> tensor<4x128xf32>
  %out = arith.divf %r2#0, %lb : tensor<4x128xf32>
  %op = tile.make_block_ptr %o, [%c4, %c128], [%c128, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x128xf32>>
  tile.store %op, %out : !tile.block_ptr<tensor<4x128xf32>>
  return
}

// -----

// An accumulator that does not start from zeros sums across warps every
// step (a per-warp partial could not hold its start once); l, from zeros,
// still sums once after the loop.
// CHECK-LABEL: func.func @paged_decode_nonzero_start
// CHECK: %[[LOOP:.*]]:3 = scf.for
// CHECK: tile.reduce {{.*}} {axis = 1 : i64, cross_warp, kind = "max"}
// CHECK: tile.reduce {{.*}} {axis = 1 : i64, kind = "sum"}
// CHECK: %[[PART:.*]] = tile.dot
// CHECK: %[[SUM:.*]] = tile.reduce %[[PART]] {cross_warp, kind = "sum"}
// CHECK: arith.addf %{{.*}}, %[[SUM]] : tensor<4x128xf32, #blocked1>
// CHECK: scf.yield
// CHECK: tile.reduce %[[LOOP]]#2 {cross_warp, kind = "sum"}
// CHECK-NOT: tile.reduce
func.func @paged_decode_nonzero_start(%q: !tile.ptr<f16>, %kc: !tile.ptr<f16>, %vc: !tile.ptr<f16>, %table: !tile.ptr<i32>, %o: !tile.ptr<f32>, %n1: index, %n2: index, %slots: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %qp = tile.make_block_ptr %q, [%c4, %c128], [%c128, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<4x128xf16>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<4x128xf16>>
  %zero = arith.constant dense<0.0> : tensor<4x16xf32>
  %acc0 = arith.constant dense<1.0> : tensor<4x128xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<4xf32>
  %l0 = arith.constant dense<0.0> : tensor<4xf32>
  %r:3 = scf.for %i = %c0 to %n1 step %c1 iter_args(%acc = %acc0, %m = %m0, %l = %l0) -> (tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>) {
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

// CHECK-LABEL: func.func @flash_attention_fwd
// CHECK: tile.make_block_ptr {{.*}} -> <tensor<16x64xf16, #dot_op2>>
// CHECK: tile.dot {{.*}} : tensor<16x64xf16, #dot_op2> * tensor<64x64xf16, #dot_op3> -> tensor<16x64xf32, #dot_op>
// CHECK: tile.reduce {{.*}} {axis = 1 : i64, kind = "max"} : tensor<16x64xf32, #dot_op> -> tensor<16xf32, #slice>
// CHECK: tile.dot {{.*}} : tensor<16x64xf16, #dot_op> * tensor<64x64xf16, #dot_op1> -> tensor<16x64xf32, #blocked>
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

// A mask's row/column bases move with the warp's block like a block
// pointer's offsets: rows are split over 2 warps here.
// CHECK-LABEL: func.func @masked_scores
// CHECK: %[[ROW:.*]] = arith.addi %arg2, %{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[ROW]], %arg3], %arg4 {causal} : tensor<2x16xf32, #blocked{{.*}}>
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

// An iota's base moves with the warp's block along its axis: rows are
// split over 2 warps here, so warp w counts rows from base + 2 w.
// CHECK-LABEL: func.func @iota_rows
// CHECK: tile.load
// CHECK: %[[OFF:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[BASE:.*]] = arith.addi %arg2, %[[OFF]] : index
// CHECK: tile.iota %[[BASE]] {axis = 0 : i64} : tensor<2x16xf32, #blocked{{.*}}>
func.func @iota_rows(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %base: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %s, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<4x16xf32>>
  %i = tile.iota %base {axis = 0 : i64} : tensor<4x16xf32>
  %y = arith.addf %x, %i : tensor<4x16xf32>
  %q = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  tile.store %q, %y : !tile.block_ptr<tensor<4x16xf32>>
  return
}

// -----

// split_k: each warp loads its 64 of every 256 K (offset warp * 64) and
// accumulates a partial sum from zeros in the loop; the cross-warp sum is
// taken once after the loop and added to the loop's initial value.
// CHECK-LABEL: func.func @split_k_gemv
// CHECK: %[[W:.*]] = tile.warp_id
// CHECK: %[[INIT:.*]] = arith.constant dense<1.000000e+00> : tensor<16x32xf32
// CHECK: tile.make_block_ptr %arg0, {{.*}}, [%c0, %{{.*}}] : <bf16> -> <tensor<16x64xbf16
// CHECK: tile.make_block_ptr %arg1, {{.*}} : <bf16> -> <tensor<64x32xbf16
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<16x32xf32
// CHECK: %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]],
// CHECK: tile.dot %{{.*}}, %{{.*}}, %[[ACC]] {tiling = "split_k"} : tensor<16x64xbf16, {{.*}}> * tensor<64x32xbf16, {{.*}}> -> tensor<16x32xf32
// CHECK-NOT: tile.reduce
// CHECK: scf.yield
// CHECK: %[[SUM:.*]] = tile.reduce %[[LOOP]]#0 {cross_warp, kind = "sum"}
// CHECK: %[[TOTAL:.*]] = arith.addf %[[INIT]], %[[SUM]]
// CHECK: tile.store %{{.*}}, %[[TOTAL]]
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

// A workgroup-level copy's views (used only by tile.async_copy) take no
// layout and stay whole: every thread of the workgroup takes part in the
// copy. The view the dot's A operand is loaded from is split between warps.
// CHECK-LABEL: func.func @staged_copy
// CHECK: tile.make_block_ptr {{.*}} -> <tensor<32x16xbf16>>
// CHECK: tile.make_block_ptr {{.*}} -> <tensor<32x16xbf16>>
// CHECK: tile.async_copy %{{.*}}, %{{.*}} {contiguous = 1 : i64} : <tensor<32x16xbf16>>
// CHECK: tile.load %{{.*}} : <tensor<16x16xbf16, #dot_op>>
func.func @staged_copy(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %sa = tile.alloc {size = 768 : i64} : !tile.ptr<bf16>
  %ga = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %ca = tile.make_block_ptr %sa, [%c32, %c16], [%c24, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  tile.async_copy %ca, %ga {contiguous = 1 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
  tile.async_commit
  tile.async_wait {pending = 0 : i64}
  tile.barrier
  %la = tile.make_block_ptr %sa, [%c32, %c16], [%c24, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x32xbf16>>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %d = tile.dot %x, %y, %zero : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<32x32xf32>>
  return
}
