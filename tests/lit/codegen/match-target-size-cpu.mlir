// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx2 | FileCheck %s

// On the CPU a warp is one register block: an 8x16 f32 accumulator is 16
// 8-wide vectors (1x8 pieces), B rows load 8 floats at a time, and the dot
// becomes 8 x 2 x 4 = 64 broadcast-FMAs (1x8x1) on extracted A scalars.
// CHECK-LABEL: func.func @cpu_gemm_block
// CHECK-SAME: tile.target = "cpu-avx2"
// CHECK: tile.load {{.*}} : <tensor<1x4xf32>>
// CHECK-NEXT: tile.extract %{{.*}}[0] : tensor<1x4xf32> -> tensor<1x1xf32>
// CHECK-COUNT-7: tile.load {{.*}} : <tensor<1x4xf32>>
// CHECK-COUNT-8: tile.load {{.*}} : <tensor<1x8xf32>>
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

// Each 1x8 piece of a mask gets its own row and column base.
// CHECK-LABEL: func.func @masked_scores
// CHECK: %[[R:.*]] = arith.addi %arg2, %{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[R]], %arg3], %arg4 {causal} : tensor<1x8xf32>
// CHECK: %[[C8:.*]] = arith.addi %arg3, %c8{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[R]], %[[C8]]], %arg4 {causal} : tensor<1x8xf32>
// CHECK: %[[R1:.*]] = arith.addi %[[R]], %c1{{.*}} : index
// CHECK: tile.mask %{{.*}}, [%[[R1]], %arg3], %arg4 {causal} : tensor<1x8xf32>
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