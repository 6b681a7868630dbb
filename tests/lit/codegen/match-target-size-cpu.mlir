// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx2 | FileCheck %s

// On the CPU a warp is one register block: an 8x16 f32 accumulator is 16
// 8-wide vectors (1x8 pieces). A and B load whole (up to 8 rows x 4 vector
// registers from one pointer: per-piece pointers would spill x86's
// registers); the dot becomes 8 x 2 x 4 = 64 broadcast-FMAs (1x8x1) on
// A scalars and B rows extracted from the loaded blocks.
// CHECK-LABEL: func.func @cpu_gemm_block
// CHECK-SAME: tile.target = "cpu-avx2"
// CHECK: %[[A:.*]] = tile.load {{.*}} : <tensor<8x4xf32>>
// CHECK-NEXT: tile.extract %[[A]][0] : tensor<8x4xf32> -> tensor<1x1xf32>
// CHECK-COUNT-31: tile.extract %[[A]]
// CHECK: %[[B:.*]] = tile.load {{.*}} : <tensor<4x16xf32>>
// CHECK-COUNT-8: tile.extract %[[B]]{{.*}} -> tensor<1x8xf32>
// CHECK-COUNT-64: tile.dot {{.*}} : tensor<1x1xf32> * tensor<1x8xf32> -> tensor<1x8xf32>
// CHECK-NOT: tile.dot
// CHECK-COUNT-16: tile.store {{.*}} : <tensor<1x8xf32>>
func.func @cpu_gemm_block(%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, %c: !tile.ptr<f32>, %m: index, %n: index, %k: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ap = tile.make_block_ptr %a, [%m, %k], [%k, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x4xf32>>
  %bp = tile.make_block_ptr %b, [%k, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  %x = tile.load %ap : !tile.block_ptr<tensor<8x4xf32>>
  %y = tile.load %bp : !tile.block_ptr<tensor<4x16xf32>>
  %z = arith.constant dense<0.0> : tensor<8x16xf32>
  %d = tile.dot %x, %y, %z : tensor<8x4xf32> * tensor<4x16xf32> -> tensor<8x16xf32>
  %cp = tile.make_block_ptr %c, [%m, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x16xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<8x16xf32>>
  return
}

// -----

// Each 8x32 piece (the largest AVX2 load: 8 rows of 4 vectors) of a mask
// gets its own row and column base.
// CHECK-LABEL: func.func @masked_scores
// CHECK: %[[R:.*]] = arith.addi %arg2, %{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[R]], %arg3], %arg4 {causal} : tensor<8x32xf32>
// CHECK: %[[C32:.*]] = arith.addi %arg3, %c32{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[R]], %[[C32]]], %arg4 {causal} : tensor<8x32xf32>
// CHECK-NOT: tile.mask
func.func @masked_scores(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %row: index, %col: index, %lim: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %p = tile.make_block_ptr %s, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<16x64xf32>>
  %m = tile.mask %x, [%row, %col], %lim {causal} : tensor<16x64xf32>
  %q = tile.make_block_ptr %o, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  tile.store %q, %m : !tile.block_ptr<tensor<16x64xf32>>
  return
}

// -----

// Each 8x32 piece of an iota counts from its own first index along the
// axis: column pieces add 32 to the base, row pieces keep it (axis 1).
// CHECK-LABEL: func.func @iota_pieces
// CHECK: tile.iota %arg2 {axis = 1 : i64} : tensor<8x32xf32>
// CHECK: %[[B32:.*]] = arith.addi %arg2, %c32{{.*}} : index
// CHECK: tile.iota %[[B32]] {axis = 1 : i64} : tensor<8x32xf32>
// CHECK-NOT: tile.iota
func.func @iota_pieces(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %base: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %p = tile.make_block_ptr %s, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<16x64xf32>>
  %i = tile.iota %base {axis = 1 : i64} : tensor<16x64xf32>
  %y = arith.addf %x, %i : tensor<16x64xf32>
  %q = tile.make_block_ptr %o, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  tile.store %q, %y : !tile.block_ptr<tensor<16x64xf32>>
  return
}

// -----

// A tile an scf.if yields becomes its pieces: the new scf.if yields the
// four 8 x 32 pieces of each branch's 16 x 64 tile, and the store after it
// takes them.
// CHECK-LABEL: func.func @if_yields_tile
// CHECK: %[[R:.*]]:4 = scf.if %{{.*}} -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
// CHECK: } else {
// CHECK-COUNT-4: arith.addf
// CHECK: scf.yield
// CHECK: tile.store %{{.*}}, %[[R]]#0
// CHECK: tile.store %{{.*}}, %[[R]]#3
func.func @if_yields_tile(%s: !tile.ptr<f32>, %c: i1, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %s, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x64xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<16x64xf32>>
  %r = scf.if %c -> tensor<16x64xf32> {
    scf.yield %x : tensor<16x64xf32>
  } else {
    %y = arith.addf %x, %x : tensor<16x64xf32>
    scf.yield %y : tensor<16x64xf32>
  }
  tile.store %p, %r : !tile.block_ptr<tensor<16x64xf32>>
  return
}
