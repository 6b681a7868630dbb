// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 -convert-tile-to-nvvm | FileCheck %s
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 | FileCheck %s --check-prefix=TILE
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=sm_90 -convert-tile-to-nvvm \
// RUN:   | mlir-opt -split-input-file --canonicalize --expand-strided-metadata --lower-affine --convert-scf-to-cf --convert-vector-to-llvm \
// RUN:       --finalize-memref-to-llvm --convert-math-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:       --reconcile-unrealized-casts > %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t.llvm.mlir

// A 32x32 bf16 GEMM block with 4 warps (a 2x2 grid of 16x16 warp tiles):
// per warp and K step one A fragment [16, 16] (8 elements per lane), one
// [16, 16] B load split into two [16, 8] column halves (4 elements each),
// two mma.sync into two [16, 8] accumulators (4 f32 per lane). Loads
// outside {in_bounds} are guarded per element by the view's sizes.
// CHECK-LABEL: func.func @gemm_block
// CHECK-SAME: (%{{.*}}: memref<?xbf16>, %{{.*}}: memref<?xbf16>, %{{.*}}: memref<?xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK-SAME: tile.num_warps = 4
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: nvvm.read.ptx.sreg.ctaid.x
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, memref<?x?xbf16, strided<[?, 1], offset: ?>>, memref<?x?xbf16, strided<[?, 1], offset: ?>>)
// CHECK-COUNT-8: memref.load {{.*}} : memref<?x?xbf16, strided<[?, 1], offset: ?>>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-COUNT-8: memref.load {{.*}} : memref<?x?xbf16, strided<[?, 1], offset: ?>>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [4], strides = [1]} : vector<8xbf16> to vector<4xbf16>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [4], sizes = [4], strides = [1]} : vector<8xbf16> to vector<4xbf16>
// CHECK: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// The store after the loop: 4 guarded elements per fragment, two fragments.
// CHECK-COUNT-4: scf.if
// CHECK: memref.store {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// LLVM-LABEL: llvm.func @gemm_block
// LLVM: nvvm.mma.sync
func.func @gemm_block(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pm = tile.program_id 0
  %row = arith.muli %pm, %c32 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %r:3 = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %zero, %pa = %ap, %pb = %bp) -> (tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>) {
    %x = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<32x16xbf16>>
    %y = tile.load %pb {in_bounds} : !tile.block_ptr<tensor<16x32xbf16>>
    %d = tile.dot %x, %y, %acc : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
    %na = tile.advance %pa, [%c0, %c16] : !tile.block_ptr<tensor<32x16xbf16>>
    %nb = tile.advance %pb, [%c16, %c0] : !tile.block_ptr<tensor<16x32xbf16>>
    scf.yield %d, %na, %nb : tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  tile.store %cp, %r#0 : !tile.block_ptr<tensor<32x32xf32>>
  return
}

// -----

// An epilogue on the accumulator: the [32] f16 bias row is loaded in the
// accumulator's lane order with the broadcast row at coordinate 0 (a 1-D
// view indexed by the column only), widened, added, then SiLU (through ex2:
// NVPTX has no exp) and a narrowing store.
// CHECK-LABEL: func.func @bias_silu
// CHECK: nvvm.mma.sync
// CHECK: memref.load {{.*}} : memref<?xf16, strided<[1], offset: ?>>
// CHECK: arith.extf {{.*}} : vector<4xf16> to vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: math.exp2 {{.*}} : vector<4xf32>
// CHECK: arith.truncf {{.*}} : vector<4xf32> to vector<4xf16>
// CHECK: memref.store {{.*}} : memref<?x?xf16, strided<[?, 1], offset: ?>>
func.func @bias_silu(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %bias: !tile.ptr<f16>, %c: !tile.ptr<f16>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<32x16xf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<16x32xf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<32x16xf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x32xf16>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xf16> * tensor<16x32xf16> -> tensor<32x32xf32>
  %vp = tile.make_block_ptr %bias, [%N], [%c1], [%c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<32xf16>>
  %v = tile.load %vp : !tile.block_ptr<tensor<32xf16>>
  %w = tile.convert %v : tensor<32xf16> -> tensor<32xf32>
  %e = tile.expand_dims %w {axis = 0 : i64} : tensor<32xf32> -> tensor<1x32xf32>
  %bb = tile.broadcast %e : tensor<1x32xf32> -> tensor<32x32xf32>
  %s = arith.addf %d, %bb : tensor<32x32xf32>
  %act = tile.silu %s : tensor<32x32xf32>
  %o = tile.convert %act : tensor<32x32xf32> -> tensor<32x32xf16>
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<32x32xf16>>
  tile.store %cp, %o : !tile.block_ptr<tensor<32x32xf16>>
  return
}

// -----

// `contiguous` loads: A ([M, K], K = dim 1) and B from [N, K] weights viewed
// as [K, N] (K = dim 0) promise aligned unit-stride pairs along K, so each
// fragment loads as 2-element vectors (4 for A, 2 per B half) with 4-byte
// alignment through the flat base buffer; the B view of [K, N] weights
// (no promise) keeps element loads.
// CHECK-LABEL: func.func @paired_loads
// CHECK: scf.for
// CHECK-COUNT-4: vector.load %{{.*}}[%{{.*}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-COUNT-4: vector.load %{{.*}}[%{{.*}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK: nvvm.mma.sync
// CHECK-NOT: memref.load
// CHECK: scf.yield
// LLVM-LABEL: llvm.func @paired_loads
// LLVM: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<2xbf16>
func.func @paired_loads(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pm = tile.program_id 0
  %row = arith.muli %pm, %c32 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%c1, %K], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %r:3 = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %zero, %pa = %ap, %pb = %bp) -> (tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>) {
    %x = tile.load %pa {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
    %y = tile.load %pb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<16x32xbf16>>
    %d = tile.dot %x, %y, %acc : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
    %na = tile.advance %pa, [%c0, %c16] : !tile.block_ptr<tensor<32x16xbf16>>
    %nb = tile.advance %pb, [%c16, %c0] : !tile.block_ptr<tensor<16x32xbf16>>
    scf.yield %d, %na, %nb : tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  tile.store %cp, %r#0 {in_bounds} : !tile.block_ptr<tensor<32x32xf32>>
  return
}

// -----

// A `contiguous` store of an accumulator in 16-bit storage: each lane's
// column pairs (2t, 2t + 1) of a fragment row go out as one 4-byte vector
// store (a 32 x 32 block over 4 warps: 8 elements a lane, 4 pairs);
// without the promise every element is its own store.
// CHECK-LABEL: func.func @paired_stores
// CHECK-COUNT-4: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 4 : i64} : memref<?xbf16>, vector<2xbf16>
// CHECK-NOT: memref.store
// CHECK: return
// CHECK-LABEL: func.func @paired_stores_unpromised
// CHECK-NOT: vector.store
// CHECK: memref.store
// LLVM-LABEL: llvm.func @paired_stores
// LLVM: llvm.store %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr
func.func @paired_stores(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<bf16>, %M: index, %N: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%c16, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %x = tile.load %ap {in_bounds} : !tile.block_ptr<tensor<32x16xbf16>>
  %y = tile.load %bp {in_bounds} : !tile.block_ptr<tensor<16x32xbf16>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
  %h = tile.convert %d : tensor<32x32xf32> -> tensor<32x32xbf16>
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x32xbf16>>
  tile.store %cp, %h {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x32xbf16>>
  return
}
func.func @paired_stores_unpromised(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<bf16>, %M: index, %N: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%c16, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %x = tile.load %ap {in_bounds} : !tile.block_ptr<tensor<32x16xbf16>>
  %y = tile.load %bp {in_bounds} : !tile.block_ptr<tensor<16x32xbf16>>
  %d = tile.dot %x, %y, %zero : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
  %h = tile.convert %d : tensor<32x32xf32> -> tensor<32x32xbf16>
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x32xbf16>>
  tile.store %cp, %h {in_bounds} : !tile.block_ptr<tensor<32x32xbf16>>
  return
}
// f32 accumulators (a split-K partial) store their column pairs as 8-byte
// vectors and load them back the same way.
// CHECK-LABEL: func.func @paired_f32
// CHECK-COUNT-4: vector.load %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK-COUNT-4: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK-NOT: memref.store
// CHECK: return
func.func @paired_f32(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %w: !tile.ptr<f32>, %M: index, %N: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ap = tile.make_block_ptr %a, [%M, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%c16, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %wp = tile.make_block_ptr %w, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  %x = tile.load %ap {in_bounds} : !tile.block_ptr<tensor<32x16xbf16>>
  %y = tile.load %bp {in_bounds} : !tile.block_ptr<tensor<16x32xbf16>>
  %acc = tile.load %wp {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x32xf32>>
  %d = tile.dot %x, %y, %acc : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
  tile.store %wp, %d {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x32xf32>>
  return
}

// -----

// With `run = 4`, the 4 K elements a lane holds per fragment row (K is
// permuted: lane t holds the block's K positions 4t .. 4t + 3) load as one
// 8-byte vector: 2 per A fragment, 1 per B half.
// CHECK-LABEL: func.func @run_loads
// CHECK: scf.for
// CHECK-COUNT-2: vector.load %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK-COUNT-2: vector.load %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// CHECK: vector.from_elements {{.*}} : vector<8xbf16>
// CHECK: nvvm.mma.sync
// CHECK-NOT: memref.load
// CHECK: scf.yield
// LLVM-LABEL: llvm.func @run_loads
// LLVM: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> vector<4xbf16>
func.func @run_loads(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pm = tile.program_id 0
  %row = arith.muli %pm, %c32 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
  %bp = tile.make_block_ptr %b, [%K, %N], [%c1, %K], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %r:3 = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %zero, %pa = %ap, %pb = %bp) -> (tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>) {
    %x = tile.load %pa {in_bounds, contiguous = 1 : i64, run = 4 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
    %y = tile.load %pb {in_bounds, contiguous = 0 : i64, run = 4 : i64} : !tile.block_ptr<tensor<16x32xbf16>>
    %d = tile.dot %x, %y, %acc : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
    %na = tile.advance %pa, [%c0, %c16] : !tile.block_ptr<tensor<32x16xbf16>>
    %nb = tile.advance %pb, [%c16, %c0] : !tile.block_ptr<tensor<16x32xbf16>>
    scf.yield %d, %na, %nb : tensor<32x32xf32>, !tile.block_ptr<tensor<32x16xbf16>>, !tile.block_ptr<tensor<16x32xbf16>>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  tile.store %cp, %r#0 {in_bounds} : !tile.block_ptr<tensor<32x32xf32>>
  return
}

// -----

// A kernel without dots holds its tiles lane-linear: a [1, 40] f32 row is
// one full round of 32 lanes plus a round only lanes 0..7 hold (guarded by
// the lane id); the sum is each lane's own elements (the missing one
// replaced by 0) and five butterfly shuffles; the [1, 1] result is held by
// every lane and stored by lane 0 only. match-target-size leaves the tiles
// whole.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK: memref.load {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[PART:.*]] = arith.cmpi ult, %[[LANE]], %c8
// CHECK: scf.if %[[PART]] -> (f32)
// CHECK: memref.load
// CHECK: vector.from_elements {{.*}} : vector<2xf32>
// CHECK: arith.select
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if
// CHECK: memref.store
// LLVM-LABEL: llvm.func @row_sum
// LLVM-COUNT-5: nvvm.shfl.sync bfly
func.func @row_sum(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %R: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c40], [%c40, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x40xf32>>
  %v = tile.load %p {in_bounds} : !tile.block_ptr<tensor<1x40xf32>>
  %s = tile.reduce %v {kind = "sum", axis = 1 : i64} : tensor<1x40xf32> -> tensor<1xf32>
  %e = tile.expand_dims %s {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %q = tile.make_block_ptr %y, [%R, %c1], [%c1, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %q, %e {in_bounds} : !tile.block_ptr<tensor<1x1xf32>>
  return
}

// -----

// Lane vectors (tile.lane_vector = 8): a [1, 256] bf16 row over one warp is
// one round of 8 contiguous elements a lane (element i of lane l at 8 l +
// i); the load promising aligned runs of 8 reads them as one 16-byte
// vector, the one without the promise element by element at 8 l + i, and
// the elementwise product and the sum take the lane's 8 alike.
// CHECK-LABEL: func.func @lane_vectors
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK: %[[BASE:.*]] = arith.muli %[[LANE]], %c8
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: arith.addi %{{.*}}, %c7
// CHECK: memref.load
// CHECK: arith.mulf {{.*}} : vector<8xf32>
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// LLVM-LABEL: llvm.func @lane_vectors
// LLVM: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
func.func @lane_vectors(%x: !tile.ptr<bf16>, %w: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %R: index) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<1x256xbf16>>
  %v = tile.load %p {in_bounds, contiguous = 1 : i64, run = 8 : i64} : !tile.block_ptr<tensor<1x256xbf16>>
  %q = tile.make_block_ptr %w, [%c1, %c256], [%c256, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<1x256xbf16>>
  %u = tile.load %q {in_bounds} : !tile.block_ptr<tensor<1x256xbf16>>
  %vf = tile.convert %v : tensor<1x256xbf16> -> tensor<1x256xf32>
  %uf = tile.convert %u : tensor<1x256xbf16> -> tensor<1x256xf32>
  %m = arith.mulf %vf, %uf : tensor<1x256xf32>
  %s = tile.reduce %m {kind = "sum", axis = 1 : i64} : tensor<1x256xf32> -> tensor<1xf32>
  %e = tile.expand_dims %s {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %o = tile.make_block_ptr %y, [%R, %c1], [%c1, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %o, %e {in_bounds} : !tile.block_ptr<tensor<1x1xf32>>
  return
}

// -----

// A masked load promising runs (no in_bounds): each lane's 16-byte run lies
// wholly inside or outside the [R, 16] view (a quantized GEMV's block rows
// past its weight row), so it is checked at its first element and loaded
// or zeroed as one vector, never byte by byte.
// CHECK-LABEL: func.func @lane_vectors_masked_runs
// CHECK: %[[OK:.*]] = arith.andi
// CHECK: scf.if %[[OK]] -> (vector<16xi8>)
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xi8>, vector<16xi8>
// CHECK: } else {
// CHECK: arith.constant dense<0> : vector<16xi8>
// CHECK-NOT: memref.load
// LLVM-LABEL: llvm.func @lane_vectors_masked_runs
// LLVM: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<16xi8>
func.func @lane_vectors_masked_runs(%x: !tile.ptr<i8>, %y: !tile.ptr<i32>, %R: index) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %x, [%R, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<32x16xi8>>
  %v = tile.load %p {contiguous = 1 : i64, run = 16 : i64} : !tile.block_ptr<tensor<32x16xi8>>
  %z = arith.constant dense<0> : tensor<32x1xi32>
  %d = tile.segment_dot %v, %v, %z : tensor<32x16xi8>, tensor<32x16xi8> -> tensor<32x1xi32>
  %o = tile.make_block_ptr %y, [%c16, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<i32> -> !tile.block_ptr<tensor<32x1xi32>>
  tile.store %o, %d : !tile.block_ptr<tensor<32x1xi32>>
  return
}

// -----

// 32-bit lane vectors (tile.lane_vector = 4, the paged decode combine's f32
// partial rows): a [1, 128] f32 row is one round of 4 contiguous elements a
// lane, and the load promising aligned runs of 4 reads them as one 16-byte
// vector; a weighted sum marked contract becomes one FMA per element.
// CHECK-LABEL: func.func @lane_vectors_f32
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK-NOT: memref.load
// LLVM-LABEL: llvm.func @lane_vectors_f32
// LLVM: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// LLVM: llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<4xf32>
func.func @lane_vectors_f32(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %R: index, %w: f32) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c128], [%c128, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x128xf32>>
  %v = tile.load %p {in_bounds, contiguous = 1 : i64, run = 4 : i64} : !tile.block_ptr<tensor<1x128xf32>>
  %ws = tile.splat %w : f32 -> tensor<1x128xf32>
  %m = arith.mulf %v, %ws fastmath<contract> : tensor<1x128xf32>
  %a = arith.addf %m, %v fastmath<contract> : tensor<1x128xf32>
  %o = tile.make_block_ptr %y, [%R, %c128], [%c128, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x128xf32>>
  tile.store %o, %a {in_bounds} : !tile.block_ptr<tensor<1x128xf32>>
  return
}

// -----

// A store promising aligned runs of 4 (tile.lane_vector = 4, RoPE's rows):
// each lane writes its 4 contiguous 16-bit elements of a [2, 64] tile as
// one 8-byte vector (the tile is one round: 128 elements); without the
// promise, element stores.
// CHECK-LABEL: func.func @lane_vector_store
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// CHECK-NOT: memref.store
// CHECK-LABEL: func.func @lane_vector_store_unpromised
// CHECK-COUNT-4: memref.store
// CHECK-NOT: vector.store
func.func @lane_vector_store(%x: !tile.ptr<bf16>, %R: index) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c64], [%c64, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<2x64xbf16>>
  %v = tile.load %p {in_bounds, contiguous = 1 : i64, run = 4 : i64} : !tile.block_ptr<tensor<2x64xbf16>>
  tile.store %p, %v {in_bounds, contiguous = 1 : i64, run = 4 : i64} : !tile.block_ptr<tensor<2x64xbf16>>
  return
}
func.func @lane_vector_store_unpromised(%x: !tile.ptr<bf16>, %R: index) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c64], [%c64, %c1], [%row, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<2x64xbf16>>
  %v = tile.load %p {in_bounds, contiguous = 1 : i64, run = 4 : i64} : !tile.block_ptr<tensor<2x64xbf16>>
  tile.store %p, %v {in_bounds} : !tile.block_ptr<tensor<2x64xbf16>>
  return
}

// -----

// One row over 4 warps (RMSNorm at decode): each warp reduces its [1, 64]
// (2 elements a lane, five butterfly shuffles), then the warps' sums meet
// in the shared-memory scratch: one float per lane and warp (4 x 32), a
// barrier, the 4 warps' values added, a barrier. Every lane then scales
// its 2 elements by the row's sum.
// CHECK: memref.global "private" @row_sum_over_warps_scratch : memref<128xf32, 3> {alignment = 16 : i64}
// CHECK-LABEL: func.func @row_sum_over_warps
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: memref.store {{.*}} : memref<128xf32, 3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-4: memref.load {{.*}} : memref<128xf32, 3>
// CHECK: nvvm.barrier0
// CHECK: arith.mulf {{.*}} : vector<2xf32>
// LLVM-LABEL: llvm.func @row_sum_over_warps
func.func @row_sum_over_warps(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %R: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %row = tile.program_id 0
  %p = tile.make_block_ptr %x, [%R, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x256xf32>>
  %v = tile.load %p {in_bounds} : !tile.block_ptr<tensor<1x256xf32>>
  %s = tile.reduce %v {kind = "sum", axis = 1 : i64} : tensor<1x256xf32> -> tensor<1xf32>
  %e = tile.expand_dims %s {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %b = tile.broadcast %e : tensor<1x1xf32> -> tensor<1x256xf32>
  %r = arith.mulf %v, %b : tensor<1x256xf32>
  %q = tile.make_block_ptr %y, [%R, %c256], [%c256, %c1], [%row, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x256xf32>>
  tile.store %q, %r {in_bounds} : !tile.block_ptr<tensor<1x256xf32>>
  return
}

// -----

// Greedy sampling's step: a [1, 64] block masked past column %n (lane-
// linear: each lane's 2 elements keep their value or become -inf), its max
// and argmax. The argmax keeps a (value, index) pair per lane (indices lane
// and lane + 32 as f32) and exchanges both in five butterfly rounds (ten
// shuffles); a pair wins on a larger value or an equal one at a lower index.
// CHECK-LABEL: func.func @masked_argmax
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi slt
// CHECK: vector.from_elements {{.*}} : vector<2xi1>
// CHECK: arith.select {{.*}} : vector<2xi1>, vector<2xf32>
// CHECK-COUNT-5: nvvm.shfl.sync bfly
// CHECK: arith.uitofp {{.*}} : i32 to f32
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpf olt
// CHECK-COUNT-10: nvvm.shfl.sync bfly
// CHECK-NOT: nvvm.shfl.sync
// LLVM-LABEL: llvm.func @masked_argmax
func.func @masked_argmax(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %p = tile.make_block_ptr %x, [%c1, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x64xf32>>
  %v = tile.load %p {in_bounds} : !tile.block_ptr<tensor<1x64xf32>>
  %vm = tile.mask %v, [%c0, %c0], %n : tensor<1x64xf32>
  %m = tile.reduce %vm {kind = "max", axis = 1 : i64} : tensor<1x64xf32> -> tensor<1xf32>
  %i = tile.reduce %vm {kind = "argmax", axis = 1 : i64} : tensor<1x64xf32> -> tensor<1xf32>
  %me = tile.expand_dims %m {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %ie = tile.expand_dims %i {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %q0 = tile.make_block_ptr %y, [%c1, %c2], [%c2, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  %q1 = tile.make_block_ptr %y, [%c1, %c2], [%c2, %c1], [%c0, %c1] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %q0, %me {in_bounds} : !tile.block_ptr<tensor<1x1xf32>>
  tile.store %q1, %ie {in_bounds} : !tile.block_ptr<tensor<1x1xf32>>
  return
}

// -----

// Sampling's top-k round: the picked column (argmax) leaves the tile by
// comparing a column iota against it. Lane-linear: each lane's 2 iota
// elements are base + lane and base + lane + 32, as f32.
// CHECK-LABEL: func.func @topk_round
// CHECK: arith.sitofp {{.*}} : i64 to f32
// CHECK: arith.sitofp {{.*}} : i64 to f32
// CHECK: vector.from_elements {{.*}} : vector<2xf32>
// CHECK: arith.cmpf oeq, {{.*}} : vector<2xf32>
// CHECK: arith.select {{.*}} : vector<2xi1>, vector<2xf32>
// LLVM-LABEL: llvm.func @topk_round
func.func @topk_round(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %base: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %p = tile.make_block_ptr %x, [%c1, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x64xf32>>
  %v = tile.load %p {in_bounds} : !tile.block_ptr<tensor<1x64xf32>>
  %i = tile.reduce %v {kind = "argmax", axis = 1 : i64} : tensor<1x64xf32> -> tensor<1xf32>
  %ie = tile.expand_dims %i {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %ib = tile.broadcast %ie : tensor<1x1xf32> -> tensor<1x64xf32>
  %cols = tile.iota %base {axis = 1 : i64} : tensor<1x64xf32>
  %hit = arith.cmpf oeq, %cols, %ib : tensor<1x64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<1x64xf32>
  %w = arith.select %hit, %ninf, %v : tensor<1x64xi1>, tensor<1x64xf32>
  %q = tile.make_block_ptr %y, [%c1, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x64xf32>>
  tile.store %q, %w {in_bounds} : !tile.block_ptr<tensor<1x64xf32>>
  return
}

// -----

// split_k: per warp and K step 4 x 4 mma.sync (K 64 of 256, N 32), no
// barrier in the loop. The cross-warp sum of the partial sums after it goes
// through the kernel's shared-memory scratch (4 warps x 32 lanes x 4 floats): per
// [16, 8] accumulator piece, 4 stores, a barrier, 4 x 4 loads summed, a
// barrier.
// CHECK: memref.global "private" @split_k_gemv_scratch : memref<512xf32, 3> {alignment = 16 : i64}
// CHECK-LABEL: func.func @split_k_gemv
// CHECK: %[[S:.*]] = memref.get_global @split_k_gemv_scratch : memref<512xf32, 3>
// CHECK: scf.for
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: nvvm.barrier0
// CHECK: scf.yield
// CHECK-COUNT-4: memref.store %{{.*}}, %[[S]][%{{.*}}] : memref<512xf32, 3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-16: memref.load %[[S]][%{{.*}}] : memref<512xf32, 3>
// CHECK: nvvm.barrier0
// LLVM: llvm.mlir.global private @split_k_gemv_scratch() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x f32>
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

// A page lookup whose value the loop carries to its next step (the paged
// decode form's look-ahead) is one pinned ld.global.b64 (LLVM would sink an
// ordinary load to its use); the lookup before the loop is an ordinary load.
// CHECK-LABEL: func.func @lookup_ahead
// CHECK: memref.load {{.*}} : memref<?xi64>
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "ld.global.b64 $0, [$1];", "=l,l"
// CHECK: scf.yield
func.func @lookup_ahead(%t: !tile.ptr<i64>, %x: !tile.ptr<f32>, %o: !tile.ptr<f32>, %n: index, %rows: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<1x32xf32>
  %b0 = tile.block_lookup %t[%c0] : !tile.ptr<i64>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%blk = %b0, %acc = %zero) -> (index, tensor<1x32xf32>) {
    %p = tile.make_block_ptr %x, [%rows, %c32], [%c32, %c1], [%blk, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x32xf32>>
    %v = tile.load %p : !tile.block_ptr<tensor<1x32xf32>>
    %a = arith.addf %acc, %v : tensor<1x32xf32>
    %i1 = arith.addi %i, %c1 : index
    %nb = tile.block_lookup %t[%i1] : !tile.ptr<i64>
    scf.yield %nb, %a : index, tensor<1x32xf32>
  }
  %op = tile.make_block_ptr %o, [%c1, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x32xf32>>
  tile.store %op, %r#1 : !tile.block_ptr<tensor<1x32xf32>>
  return
}

// -----

// Copies of several runs a thread on one warp (A: a 32x64 bf16 block, 256
// runs, 8 each; B: 64x16 from [N, K] storage, 128 runs, 4 each) compute
// their place, row room and run bytes once per copy: the room passes one
// opaque i32 move (so the per-run row tests stay 32-bit) and every run adds
// a constant to the first run's address.
// CHECK-LABEL: func.func @copy_runs
// CHECK: llvm.inline_asm asm_dialect = att "mov.b32 $0, $1;", "=r,r"
// CHECK-COUNT-8: nvvm.cp.async.shared.global
// CHECK: llvm.inline_asm asm_dialect = att "mov.b32 $0, $1;", "=r,r"
// CHECK-COUNT-4: nvvm.cp.async.shared.global
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
func.func @copy_runs(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c72 = arith.constant 72 : index
  %sa = tile.alloc {size = 2304 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 1152 : i64} : !tile.ptr<bf16>
  %ga = tile.make_block_ptr %a, [%M, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x64xbf16>>
  %ca = tile.make_block_ptr %sa, [%c32, %c64], [%c72, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x64xbf16>>
  tile.async_copy %ca, %ga {contiguous = 1 : i64} : !tile.block_ptr<tensor<32x64xbf16>>
  %gb = tile.make_block_ptr %b, [%c64, %N], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x16xbf16>>
  %cb = tile.make_block_ptr %sb, [%c64, %c16], [%c1, %c72], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x16xbf16>>
  tile.async_copy %cb, %gb {contiguous = 0 : i64} : !tile.block_ptr<tensor<64x16xbf16>>
  tile.async_commit
  tile.async_wait {pending = 0 : i64}
  tile.barrier
  %la = tile.make_block_ptr %sa, [%c32, %c64], [%c72, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x64xbf16>>
  %lb = tile.make_block_ptr %sb, [%c64, %c16], [%c1, %c72], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x16xbf16>>
  %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x64xbf16>>
  %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x16xbf16>>
  %zero = arith.constant dense<0.0> : tensor<32x16xf32>
  %d = tile.dot %x, %y, %zero : tensor<32x64xbf16> * tensor<64x16xbf16> -> tensor<32x16xf32>
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x16xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<32x16xf32>>
  return
}

// -----

// Operands staged through workgroup-local memory: a 32x32 bf16 block on 4
// warps, A [M, K] and B from [N, K] storage copied by the whole workgroup
// with cp.async (bounds-checked: the source size shrinks at the array's
// edges, the rest is zero-filled), then read with ldmatrix (.x4 for A's
// [16, 16] and for B's [16, 16], which is K-contiguous: not transposed).
// The buffers are carved out of the kernel's dynamic shared memory, whose
// size the function records.
// CHECK: memref.global "public" @staged_local : memref<0xi8, 3> {alignment = 16 : i64}
// CHECK-LABEL: func.func @staged
// CHECK-SAME: tile.shared_bytes = 3072
// CHECK: memref.get_global @staged_local : memref<0xi8, 3>
// CHECK: memref.view {{.*}} : memref<?xi8> to memref<?xbf16>
// CHECK: scf.for
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg, {{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: nvvm.barrier0
// CHECK: nvvm.ldmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.mma.sync
// CHECK: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// LLVM: llvm.mlir.global external @staged_local() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// LLVM-LABEL: llvm.func @staged
// LLVM: nvvm.cp.async.shared.global
// LLVM: nvvm.ldmatrix
func.func @staged(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %sa = tile.alloc {size = 768 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 768 : i64} : !tile.ptr<bf16>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %r = scf.for %k = %c0 to %K step %c16 iter_args(%acc = %zero) -> (tensor<32x32xf32>) {
    %ga = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%c0, %k] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
    %ca = tile.make_block_ptr %sa, [%c32, %c16], [%c24, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
    tile.async_copy %ca, %ga {contiguous = 1 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
    %gb = tile.make_block_ptr %b, [%K, %N], [%c1, %K], [%k, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
    %cb = tile.make_block_ptr %sb, [%c16, %c32], [%c1, %c24], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
    tile.async_copy %cb, %gb {contiguous = 0 : i64} : !tile.block_ptr<tensor<16x32xbf16>>
    tile.async_commit
    tile.async_wait {pending = 0 : i64}
    tile.barrier
    %la = tile.make_block_ptr %sa, [%c32, %c16], [%c24, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x16xbf16>>
    %lb = tile.make_block_ptr %sb, [%c16, %c32], [%c1, %c24], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
    %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<32x16xbf16>>
    %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<16x32xbf16>>
    %d = tile.dot %x, %y, %acc : tensor<32x16xbf16> * tensor<16x32xbf16> -> tensor<32x32xf32>
    tile.barrier
    scf.yield %d : tensor<32x32xf32>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x32xf32>>
  tile.store %cp, %r : !tile.block_ptr<tensor<32x32xf32>>
  return
}

// -----

// A dot on swizzled local buffers runs on the warpgroup MMA: per warp a
// [16, 32] accumulator (4 warps in the horizontal tiling), per K step of 16
// one m64n32k16 on the accumulator's four [16, 8] pieces joined, split back
// after the K block; no ldmatrix. The copies into the buffers xor the
// chunk bits with the row bits; a cp.async wait fences the async proxy; the
// run of wgmmas is fenced before, committed and waited for after. The local
// memory is 1024-aligned.
// TILE-LABEL: func.func @group_dot
// TILE: scf.for
// TILE: tile.concat {{.*}} -> tensor<16x32xf32>
// TILE-COUNT-4: tile.dot {{.*}} : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
// TILE-NOT: tile.dot
// TILE-COUNT-4: tile.extract {{.*}} : tensor<16x32xf32> -> tensor<16x8xf32>
// CHECK-LABEL: func.func @group_dot
// CHECK-NOT: nvvm.ldmatrix
// CHECK: arith.xori
// CHECK-NOT: nvvm.ldmatrix
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.yield
// LLVM: llvm.mlir.global external @group_dot_local() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
func.func @group_dot(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 2048 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %ga = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%c0, %k] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    %ca = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    tile.async_copy %ca, %ga {contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
    %gb = tile.make_block_ptr %b, [%K, %N], [%c1, %K], [%k, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    %cb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    tile.async_copy %cb, %gb {contiguous = 0 : i64} : !tile.block_ptr<tensor<64x32xbf16>>
    tile.async_commit
    tile.async_wait {pending = 0 : i64}
    tile.barrier
    %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    %lb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
    %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x32xbf16>>
    %d = tile.dot %x, %y, %acc {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x32xbf16> -> tensor<64x32xf32>
    tile.barrier
    scf.yield %d : tensor<64x32xf32>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x32xf32>>
  tile.store %cp, %r : !tile.block_ptr<tensor<64x32xf32>>
  return
}

// -----

// The same dot staged by TMA: thread 0 initializes one mbarrier per stage
// (fenced, then a workgroup barrier), and per K block arrives on it with
// the block's bytes (64 x 64 x 2 = 8192 for A, 64 x 32 x 2 = 4096 for B)
// and issues the box copy through the operand's tensor map at the block's
// coordinates (K first), into the shared::cluster window; every thread
// waits on the barrier's phase parity. No cp.async and no proxy fence: the
// TMA unit writes through the async proxy that wgmma reads.
// CHECK-LABEL: func.func @tma_group_dot
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: scf.for
// CHECK: nvvm.mbarrier.arrive.expect_tx {{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: llvm.addrspacecast {{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.mma_async
// LLVM-LABEL: llvm.func @tma_group_dot
// LLVM-DAG: llvm.mlir.constant(8192 : i32)
// LLVM-DAG: llvm.mlir.constant(4096 : i32)
func.func @tma_group_dot(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index, %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 2048 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %bars = tile.alloc {size = 2 : i64} : !tile.ptr<i64>
  tile.mbarrier_init %bars {arrivals = 2 : i64} : !tile.ptr<i64>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %i = arith.divui %k, %c64 : index
    %ph = arith.remui %i, %c2 : index
    %ca = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    tile.tma_copy %ca, %amap[%k, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
    %cb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    tile.tma_copy %cb, %bmap[%k, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x32xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
    tile.mbarrier_wait %bars[%c0], %ph : !tile.ptr<i64>
    %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    %lb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
    %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x32xbf16>>
    %d = tile.dot %x, %y, %acc {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x32xbf16> -> tensor<64x32xf32>
    tile.barrier
    scf.yield %d : tensor<64x32xf32>
  }
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x32xf32>>
  tile.store %cp, %r : !tile.block_ptr<tensor<64x32xf32>>
  return
}

// -----

// The TMA-staged dot with its group left in flight: tile.group_dot_wait
// ends the run, so the run is committed but not waited for after its last
// wgmma; the loop waits until one group remains (the one just committed),
// and the wait after the loop (pending 0) comes before the accumulator is
// stored: the loop's accumulators (four [16, 8] pieces a warp) pass through
// an empty inline asm behind it, so their readers stay behind the wait.
// CHECK-LABEL: func.func @group_dot_in_flight
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.yield
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-4: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,=f,=f,=f,0,1,2,3"
// CHECK-NOT: nvvm.wgmma
// CHECK: memref.store
func.func @group_dot_in_flight(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %M: index, %N: index, %K: index, %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 2048 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %bars = tile.alloc {size = 2 : i64} : !tile.ptr<i64>
  tile.mbarrier_init %bars {arrivals = 2 : i64} : !tile.ptr<i64>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %i = arith.divui %k, %c64 : index
    %ph = arith.remui %i, %c2 : index
    %ca = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    tile.tma_copy %ca, %amap[%k, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
    %cb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    tile.tma_copy %cb, %bmap[%k, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x32xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
    tile.mbarrier_wait %bars[%c0], %ph : !tile.ptr<i64>
    %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
    %lb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
    %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
    %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x32xbf16>>
    %d = tile.dot %x, %y, %acc {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x32xbf16> -> tensor<64x32xf32>
    tile.group_dot_wait {pending = 1 : i64}
    scf.yield %d : tensor<64x32xf32>
  }
  tile.group_dot_wait {pending = 0 : i64}
  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x32xf32>>
  tile.store %cp, %r : !tile.block_ptr<tensor<64x32xf32>>
  return
}

// -----

// Softmax's reductions over an accumulator: S = A B (a [16, 16] tile, two
// [16, 8] fragments after match-target-size), its row max (the two
// fragments combined elementwise, then the lane's two columns per row, then
// the 4 lanes of a row: butterfly shuffles by 1 and 2), S - max broadcast
// back without data movement, its column sums (the lane's two rows per
// column, then the 8 lanes of a column: shuffles by 4, 8, 16), and the row
// max stored as well (lanes of a row write the same value).
// CHECK-LABEL: func.func @softmax_reductions
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.maximumf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.maximumf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.maximumf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.maximumf
// CHECK-NOT: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32
// CHECK-COUNT-2: arith.subf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32{{.*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK-NOT: nvvm.shfl.sync
// CHECK: return
// LLVM-LABEL: llvm.func @softmax_reductions
// LLVM-COUNT-16: nvvm.shfl.sync bfly
// LLVM-NOT: builtin.unrealized_conversion_cast
// LLVM: llvm.return
func.func @softmax_reductions(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %o: !tile.ptr<f32>, %m: !tile.ptr<f32>, %cs: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ap = tile.make_block_ptr %a, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %bp = tile.make_block_ptr %b, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<16x16xbf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x16xbf16>>
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %s = tile.dot %x, %y, %z : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %mx = tile.reduce %s {axis = 1 : i64, kind = "max"} : tensor<16x16xf32> -> tensor<16xf32>
  %me = tile.expand_dims %mx {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
  %mb = tile.broadcast %me : tensor<16x1xf32> -> tensor<16x16xf32>
  %d = arith.subf %s, %mb : tensor<16x16xf32>
  %csum = tile.reduce %d {axis = 0 : i64, kind = "sum"} : tensor<16x16xf32> -> tensor<16xf32>
  %op = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  tile.store %op, %d : !tile.block_ptr<tensor<16x16xf32>>
  %mp = tile.make_block_ptr %m, [%c16], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  tile.store %mp, %mx : !tile.block_ptr<tensor<16xf32>>
  %cp = tile.make_block_ptr %cs, [%c16], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  tile.store %cp, %csum : !tile.block_ptr<tensor<16xf32>>
  return
}

// -----

// FlashAttention-2's P V on one warp: the scores' accumulator pieces are
// masked (row and column of each lane element against the bases and the
// limit), exponentiated and narrowed to bf16 piece by piece; the [16, 16]
// A block of P V joins the two [16, 8] pieces (tile.concat), which the
// lowering turns into one 8-element fragment (no shuffles, no memory):
// left piece's 4 elements, then the right one's. With a join, A and B
// fragments keep the ISA's K order. (P V is the layout root, as in the
// attention emitter.)
// TILE-LABEL: func.func @attention_p_v
// TILE-COUNT-2: tile.mask %{{.*}}, [%{{.*}}, %{{.*}}], %{{.*}} {causal} : tensor<16x8xf32>
// TILE: %[[P0:.*]] = tile.convert %{{.*}} : tensor<16x8xf32> -> tensor<16x8xbf16>
// TILE: %[[P1:.*]] = tile.convert %{{.*}} : tensor<16x8xf32> -> tensor<16x8xbf16>
// TILE: %[[PA:.*]] = tile.concat %[[P0]], %[[P1]] {axis = 1 : i64} : tensor<16x8xbf16>, tensor<16x8xbf16> -> tensor<16x16xbf16>
// TILE-COUNT-2: tile.dot %[[PA]], %{{.*}}, %{{.*}} : tensor<16x16xbf16> * tensor<16x8xbf16> -> tensor<16x8xf32>
// TILE-NOT: tile.concat
// CHECK-LABEL: func.func @attention_p_v
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi sle
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: %[[J:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<8xbf16>
// CHECK-NOT: nvvm.shfl.sync
// CHECK: vector.extract_strided_slice %[[J]] {offsets = [0], sizes = [2], strides = [1]}
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: return
func.func @attention_p_v(%q: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %o: !tile.ptr<f32>, %pos: index, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %qp = tile.make_block_ptr %q, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %kp = tile.make_block_ptr %k, [%c16, %c16], [%c1, %c16], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %vp = tile.make_block_ptr %v, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %qt = tile.load %qp : !tile.block_ptr<tensor<16x16xbf16>>
  %kt = tile.load %kp : !tile.block_ptr<tensor<16x16xbf16>>
  %vt = tile.load %vp : !tile.block_ptr<tensor<16x16xbf16>>
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %s = tile.dot %qt, %kt, %z : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %sm = tile.mask %s, [%pos, %c0], %n {causal} : tensor<16x16xf32>
  %p = math.exp2 %sm : tensor<16x16xf32>
  %pb = tile.convert %p : tensor<16x16xf32> -> tensor<16x16xbf16>
  %z2 = arith.constant dense<0.0> : tensor<16x16xf32>
  %out = tile.dot %pb, %vt, %z2 {tiling = "horizontal"} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %op = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  tile.store %op, %out : !tile.block_ptr<tensor<16x16xf32>>
  return
}

// -----

// A row max stored as a [16, 1] column (the split partials of paged
// decode): expand_dims gives it the reduction's lane elements with the
// column back at size 1, so each lane stores its rows g and g + 8 at
// column 0 (the 4 lanes of a row store the same value).
// CHECK-LABEL: func.func @row_max_column
// CHECK: nvvm.mma.sync
// CHECK: nvvm.shfl.sync bfly
// CHECK-NOT: builtin.unrealized_conversion_cast{{.*}}vector<16x1
// CHECK-COUNT-4: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %c0{{.*}}] : memref<?x?xf32
// CHECK: return
func.func @row_max_column(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %m: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ap = tile.make_block_ptr %a, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %bp = tile.make_block_ptr %b, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<16x16xbf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x16xbf16>>
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %s = tile.dot %x, %y, %z : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %mx = tile.reduce %s {axis = 1 : i64, kind = "max"} : tensor<16x16xf32> -> tensor<16xf32>
  %me = tile.expand_dims %mx {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
  %mp = tile.make_block_ptr %m, [%c16, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x1xf32>>
  tile.store %mp, %me : !tile.block_ptr<tensor<16x1xf32>>
  return
}

// -----

// FlashAttention's two dots on warpgroup MMAs: S = Q K^T chained over two
// 64-column panels of head dim 128 (one accumulator through both dots: one
// run, fenced once, committed and waited once), then O = P V with P (S
// narrowed) in registers, its [16, 8] pieces joined into [16, 16] A
// blocks, and V N-major (rows of 64 head-dim columns, one per key): the
// PTX with a register A and B's transpose bit set.
// TILE-LABEL: func.func @attention_group_dots
// TILE-COUNT-8: tile.dot {{.*}} : tensor<16x16xbf16> * tensor<16x64xbf16> -> tensor<16x64xf32>
// TILE: tile.concat {{.*}} -> tensor<16x16xbf16>
// TILE: tile.dot {{.*}} : tensor<16x16xbf16> * tensor<16x64xbf16> -> tensor<16x64xf32>
// CHECK-LABEL: func.func @attention_group_dots
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $69, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A}", "=f,{{.*}},31,r,r,r,r,l,n"
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
func.func @attention_group_dots(%o: !tile.ptr<f32>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %sq0 = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sq1 = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sk0 = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sk1 = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sv = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %q0p = tile.make_block_ptr %sq0, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %q1p = tile.make_block_ptr %sq1, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %k0p = tile.make_block_ptr %sk0, [%c64, %c64], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %k1p = tile.make_block_ptr %sk1, [%c64, %c64], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %vp = tile.make_block_ptr %sv, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %q0 = tile.load %q0p {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %q1 = tile.load %q1p {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %k0 = tile.load %k0p {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %k1 = tile.load %k1p {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %s0 = tile.dot %q0, %k0, %zero {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %s = tile.dot %q1, %k1, %s0 {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %p = tile.convert %s : tensor<64x64xf32> -> tensor<64x64xbf16>
  %v = tile.load %vp {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %zo = arith.constant dense<0.0> : tensor<64x64xf32>
  %acc = tile.dot %p, %v, %zo {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %op = tile.make_block_ptr %o, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x64xf32>>
  tile.store %op, %acc : !tile.block_ptr<tensor<64x64xf32>>
  return
}

// -----

// tile.arrive: a barrier, thread 0's release fence and atomic add (the last
// arrival resets the counter and fences again), and a barrier reduction
// that gives every thread thread 0's verdict; the last program's store runs
// under it.
// CHECK-LABEL: func.func @arrive_last_stores
// CHECK: nvvm.barrier0
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects {{.*}}fence.acq_rel.gpu;\0Aatom.global.add.u32 old, [$1], 1;{{.*}}@p st.global.u32 [$1], zero;\0A@p fence.acq_rel.gpu;
// CHECK: llvm.inline_asm has_side_effects {{.*}}bar.red.or.pred q, 0, p;
// CHECK: %[[LAST:.*]] = arith.cmpi ne
// CHECK: scf.if %[[LAST]]
// CHECK: memref.store
func.func @arrive_last_stores(%ctr: !tile.ptr<i32>, %o: !tile.ptr<f32>, %i: index, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %last = tile.arrive %ctr[%i] of %n : !tile.ptr<i32>
  scf.if %last {
    %v = arith.constant dense<1.0> : tensor<1x32xf32>
    %op = tile.make_block_ptr %o, [%c1, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x32xf32>>
    tile.store %op, %v : !tile.block_ptr<tensor<1x32xf32>>
  }
  return
}

// -----

// A TMA copy through a 3-D map (planes of [rows, cols] arrays: the
// attention kernels' q / k / v, one plane a head): the third coordinate is
// the plane, and the copy is the 3-D cp.async.bulk.tensor.
// CHECK-LABEL: func.func @tma_copy_planes
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} box[%{{[0-9]+}}, %{{[0-9]+}}]
// CHECK: nvvm.mbarrier.try_wait.parity
func.func @tma_copy_planes(%c: !tile.ptr<f32>, %amap: !tile.ptr<i8>, %bmap: !tile.ptr<i8>, %row: index, %plane: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %sa = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %sb = tile.alloc {size = 2048 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %bars = tile.alloc {size = 1 : i64} : !tile.ptr<i64>
  tile.mbarrier_init %bars {arrivals = 2 : i64} : !tile.ptr<i64>
  %ca = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  tile.tma_copy %ca, %amap[%c0, %row, %plane], %bars[%c0] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
  %cb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
  tile.tma_copy %cb, %bmap[%c0, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x32xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
  tile.mbarrier_wait %bars[%c0], %c0 : !tile.ptr<i64>
  %la = tile.make_block_ptr %sa, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %lb = tile.make_block_ptr %sb, [%c64, %c32], [%c1, %c64], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
  %x = tile.load %la {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %y = tile.load %lb {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<64x32xbf16>>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %d = tile.dot %x, %y, %zero {tiling = "horizontal"} : tensor<64x64xbf16> * tensor<64x32xbf16> -> tensor<64x32xf32>
  %cp = tile.make_block_ptr %c, [%c64, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<64x32xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<64x32xf32>>
  return
}

// -----

// A block of C stored by TMA (the TMA GEMMs' interior epilogue): the
// accumulator narrowed into a swizzled local block (4-byte pairs at their
// swizzled addresses: the chunk bits xor the 128-byte row's low bits), then
// tile.tma_store fences the local writes for the async proxy, joins the
// workgroup and one thread issues the shared -> global bulk tensor store at
// panel coordinates (0, column / 64, row), commits it and waits until the
// buffer has been read.
// CHECK-LABEL: func.func @tma_store_block
// CHECK: arith.xori
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// CHECK: arith.shrui %arg4
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta {{.*}} box[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
func.func @tma_store_block(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %cmap: !tile.ptr<i8>, %row: index, %col: index) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pa = tile.make_block_ptr %a, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %pb = tile.make_block_ptr %b, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  %x = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %y = tile.load %pb {in_bounds} : !tile.block_ptr<tensor<64x64xbf16>>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = tile.dot %x, %y, %zero : tensor<64x64xbf16> * tensor<64x64xbf16> -> tensor<64x64xf32>
  %n = tile.convert %d : tensor<64x64xf32> -> tensor<64x64xbf16>
  %buf = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %cl = tile.make_block_ptr %buf, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  tile.store %cl, %n {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<64x64xbf16>>
  %cw = tile.make_block_ptr %buf, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  tile.tma_store %cmap[%col, %row], %cw : !tile.ptr<i8>, !tile.block_ptr<tensor<64x64xbf16>>
  return
}

// -----

// A quantized GEMV's step (codegen/GemvKernel.cpp): the i8 block rows load
// as one 8-byte vector a lane; the column of block scales loads, for each of
// the lane's elements, its row's scale at column 0 (the broadcast moves
// nothing); the reshape to the reduced row is no op at all. The integers
// widen as q + 128 in the low mantissa bits of 2^23, minus 2^23 + 128.
// CHECK-LABEL: func.func @gemv_block_scales
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<?xi8>, vector<8xi8>
// CHECK: %[[BIASED:.*]] = arith.xori {{.*}} : vector<8xi8>
// CHECK: %[[WIDE:.*]] = arith.extui %[[BIASED]] : vector<8xi8> to vector<8xi32>
// CHECK: %[[BITS:.*]] = arith.ori %[[WIDE]], {{.*}} : vector<8xi32>
// CHECK: %[[F:.*]] = arith.bitcast %[[BITS]] : vector<8xi32> to vector<8xf32>
// CHECK: arith.subf %[[F]], {{.*}} : vector<8xf32>
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: %[[COL0:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.load {{.*}}[%[[ROW]], %[[COL0]]] : memref<?x?xf16
// CHECK-NOT: tile.reshape
// CHECK: nvvm.shfl.sync bfly
func.func @gemv_block_scales(%w: !tile.ptr<i8>, %s: !tile.ptr<f16>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %wp = tile.make_block_ptr %w, [%c8, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<8x32xi8>>
  %sp = tile.make_block_ptr %s, [%c8, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<8x1xf16>>
  %q = tile.load %wp {in_bounds, contiguous = 1 : i64, run = 8 : i64} : !tile.block_ptr<tensor<8x32xi8>>
  %qf = tile.convert %q : tensor<8x32xi8> -> tensor<8x32xf32>
  %sv = tile.load %sp {in_bounds} : !tile.block_ptr<tensor<8x1xf16>>
  %sf = tile.convert %sv : tensor<8x1xf16> -> tensor<8x1xf32>
  %sb = tile.broadcast %sf : tensor<8x1xf32> -> tensor<8x32xf32>
  %x = arith.mulf %qf, %sb : tensor<8x32xf32>
  %row = tile.reshape %x : tensor<8x32xf32> -> tensor<1x256xf32>
  %r = tile.reduce %row {kind = "sum", axis = 1 : i64} : tensor<1x256xf32> -> tensor<1xf32>
  %e = tile.expand_dims %r {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %op = tile.make_block_ptr %o, [%c1, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
  tile.store %op, %e : !tile.block_ptr<tensor<1x1xf32>>
  return
}

// -----

// A segment dot over lanes that hold whole 16-byte segments (tile.lane_vector
// 16): four dp4a a segment, unsigned bytes where b_unsigned says, the i32
// sums converted to f32, nothing across lanes.
// CHECK-LABEL: func.func @segment_dot
// CHECK-COUNT-4: nvvm.dot.accumulate.4way {{.*}} <signed>, {{.*}} <unsigned>
// CHECK-NOT: nvvm.dot.accumulate.4way
// CHECK: arith.sitofp
// CHECK-NOT: nvvm.shfl.sync
func.func @segment_dot(%pa: !tile.ptr<i8>, %pb: !tile.ptr<i8>, %pc: !tile.ptr<f32>, %pm: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64, tile.lane_vector = 16 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %ap = tile.make_block_ptr %pa, [%c32, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<32x16xi8>>
  %bp = tile.make_block_ptr %pb, [%c32, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<32x16xi8>>
  %cp = tile.make_block_ptr %pc, [%c32, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32x1xf32>>
  %a = tile.load %ap {in_bounds, contiguous = 1 : i64, run = 16 : i64} : !tile.block_ptr<tensor<32x16xi8>>
  %b = tile.load %bp {in_bounds, contiguous = 1 : i64, run = 16 : i64} : !tile.block_ptr<tensor<32x16xi8>>
  %z = arith.constant dense<0> : tensor<32x1xi32>
  %d = tile.segment_dot %a, %b, %z {b_unsigned} : tensor<32x16xi8>, tensor<32x16xi8> -> tensor<32x1xi32>
  %f = tile.convert %d : tensor<32x1xi32> -> tensor<32x1xf32>
  tile.store %cp, %f {in_bounds} : !tile.block_ptr<tensor<32x1xf32>>
  return
}
