// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx2 -convert-tile-to-vector | FileCheck %s
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx2 -convert-tile-to-vector \
// RUN:   | mlir-opt -split-input-file --canonicalize --convert-vector-to-scf=full-unroll --lower-vector-multi-reduction --expand-strided-metadata --lower-affine \
// RUN:       --convert-scf-to-cf --convert-vector-to-llvm=vector-contract-lowering=outerproduct --finalize-memref-to-llvm \
// RUN:       --convert-math-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN:   > %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t.llvm.mlir
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx512 -convert-tile-to-vector | FileCheck %s --check-prefix=AVX512
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=cpu-avx512 "-convert-tile-to-vector=vnni=true" | FileCheck %s --check-prefix=VNNI
// RUN: sed -n '/llvm.func @cpu_gemm_block/,/llvm.func @row_sum/p' %t.llvm.mlir | grep -c "llvm.intr.fmuladd.*vector<8xf32>" | FileCheck %s --check-prefix=FMAS
// RUN: sed -n '/llvm.func @cpu_gemm_block/,/llvm.func @row_sum/p' %t.llvm.mlir | grep -c "llvm.intr.masked.load" | FileCheck %s --check-prefix=LOADS

// An 8x16 f32 register block on AVX2: block pointers become strided views
// starting at the block (out-of-range rows/columns are masked; a unit
// innermost stride stays static so rows load as vectors), A and B load as
// whole blocks (one masked load per row once in LLVM, 8 for A and 4 for B) whose
// pieces are strided slices, the 64 intrinsic dots become vector.contract
// and, in LLVM, 64 fused multiply-adds on 8-wide vectors; the program ids
// are three trailing index arguments and the one warp runs in a loop.
// CHECK-LABEL: func.func @cpu_gemm_block
// CHECK-SAME: (%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: scf.for
// CHECK: memref.reinterpret_cast %arg0 to offset: [%{{.*}}], sizes: [%{{.*}}, %{{.*}}], strides: [%arg5, 1] : memref<?xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<8x4xf32>
// CHECK-NEXT: vector.extract_strided_slice %{{.*}} {offsets = [0, 0], sizes = [1, 1], strides = [1, 1]} : vector<8x4xf32> to vector<1x1xf32>
// CHECK: vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<4x16xf32>
// CHECK-NOT: vector.transfer_read
// CHECK-COUNT-64: vector.contract
// CHECK-COUNT-16: vector.transfer_write {{.*}} : vector<1x8xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>
// LLVM-LABEL: llvm.func @cpu_gemm_block
// LLVM: llvm.intr.masked.load
// LLVM: llvm.intr.fmuladd{{.*}}vector<8xf32>
// LLVM: llvm.intr.masked.store
// FMAS: 64
// LOADS: 12
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

// Row reductions and broadcasts (RMSNorm's shape) on vectors.
// CHECK-LABEL: func.func @row_sum_of_squares
// CHECK: vector.multi_reduction <add>
// LLVM-LABEL: llvm.func @row_sum_of_squares
func.func @row_sum_of_squares(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %xp = tile.make_block_ptr %x, [%rows, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x16xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<2x16xf32>>
  %sq = arith.mulf %v, %v : tensor<2x16xf32>
  %s = tile.reduce %sq {kind = "sum", axis = 1 : i64} : tensor<2x16xf32> -> tensor<2xf32>
  %yp = tile.make_block_ptr %y, [%rows], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2xf32>>
  tile.store %yp, %s : !tile.block_ptr<tensor<2xf32>>
  return
}

// -----

// A row max of a power-of-two width: halves combined elementwise (log2 16 =
// 4 vector steps), no reduction intrinsic (LLVM expands maximumf's into a
// scalar chain).
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: vector.multi_reduction
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<2x8xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<2x4xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<2x2xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<2x1xf32>
// CHECK: vector.shape_cast %{{.*}} : vector<2x1xf32> to vector<2xf32>
// LLVM-LABEL: llvm.func @row_max
// LLVM-NOT: llvm.intr.vector.reduce.fmaximum
// LLVM: llvm.return
func.func @row_max(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %xp = tile.make_block_ptr %x, [%rows, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x16xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<2x16xf32>>
  %m = tile.reduce %v {kind = "max", axis = 1 : i64} : tensor<2x16xf32> -> tensor<2xf32>
  %yp = tile.make_block_ptr %y, [%rows], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2xf32>>
  tile.store %yp, %m : !tile.block_ptr<tensor<2xf32>>
  return
}

// -----

// A sum marked reassoc takes the same tree of vector adds; without the mark
// (row_sum_of_squares) the sum stays a multi_reduction, in order.
// CHECK-LABEL: func.func @row_sum_reassoc
// CHECK-NOT: vector.multi_reduction
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<2x8xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<2x4xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<2x2xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<2x1xf32>
// LLVM-LABEL: llvm.func @row_sum_reassoc
// LLVM-NOT: llvm.intr.vector.reduce.fadd
// LLVM: llvm.return
func.func @row_sum_reassoc(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %xp = tile.make_block_ptr %x, [%rows, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x16xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<2x16xf32>>
  %s = tile.reduce %v {kind = "sum", axis = 1 : i64, reassoc} : tensor<2x16xf32> -> tensor<2xf32>
  %yp = tile.make_block_ptr %y, [%rows], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2xf32>>
  tile.store %yp, %s : !tile.block_ptr<tensor<2xf32>>
  return
}

// -----

// Loop-carried block pointers keep the static unit stride of their initial
// view (so the loads inside the loop stay contiguous vector loads).
// CHECK-LABEL: func.func @row_walk
// CHECK: scf.for {{.*}} -> (vector<1x8xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>)
// CHECK: vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<1x8xf32>
// LLVM-LABEL: llvm.func @row_walk
func.func @row_walk(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %p = tile.make_block_ptr %x, [%c1, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x8xf32>>
  %z = arith.constant dense<0.0> : tensor<1x8xf32>
  %r:2 = scf.for %i = %c0 to %n step %c8 iter_args(%acc = %z, %q = %p) -> (tensor<1x8xf32>, !tile.block_ptr<tensor<1x8xf32>>) {
    %v = tile.load %q : !tile.block_ptr<tensor<1x8xf32>>
    %s = arith.addf %acc, %v : tensor<1x8xf32>
    %nq = tile.advance %q, [%c0, %c8] : !tile.block_ptr<tensor<1x8xf32>>
    scf.yield %s, %nq : tensor<1x8xf32>, !tile.block_ptr<tensor<1x8xf32>>
  }
  %yp = tile.make_block_ptr %y, [%c1, %c8], [%c8, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x8xf32>>
  tile.store %yp, %r#0 : !tile.block_ptr<tensor<1x8xf32>>
  return
}

// -----

// A mask is a compare of constant row/column index vectors plus the bases,
// then a select against -inf.
// CHECK-LABEL: func.func @masked_scores
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<2x16xi64>
// CHECK: arith.cmpi sle, %{{.*}}, %{{.*}} : vector<2x16xi64>
// CHECK: arith.andi %{{.*}}, %{{.*}} : vector<2x16xi1>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<2x16xi1>, vector<2x16xf32>
// LLVM-LABEL: llvm.func @masked_scores
// LLVM: llvm.select
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

// An iota is a constant vector of each element's index along its axis plus
// the splatted base (as f32); the row axis here: [2, 16] warp blocks count
// rows 0 0 ... 1 1 ... from the warp's first row.
// CHECK-LABEL: func.func @iota_rows
// CHECK: arith.constant dense<{{\[\[}}0.000000e+00, {{.*}}], [1.000000e+00, {{.*}}]]> : vector<2x16xf32>
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: vector.broadcast %{{.*}} : f32 to vector<2x16xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<2x16xf32>
// LLVM-LABEL: llvm.func @iota_rows
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

// A block of a transposed view (K^T) reads the rows of the untransposed
// view (masked by its sizes) and transposes them in registers: no gather
// (LLVM scalarizes gathers where they are slow, AVX2 on Zen 1).
// CHECK-LABEL: func.func @transposed_load
// CHECK-NOT: vector.gather
// CHECK: %[[T:.*]] = memref.transpose %{{.*}} (d0, d1) -> (d1, d0) : memref<?x?xf32, strided<[1, ?], offset: ?>> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[R:.*]] = vector.transfer_read %[[T]][%{{.*}}, %{{.*}}], %{{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16x2xf32>
// CHECK: vector.transpose %[[R]], [1, 0] : vector<16x2xf32> to vector<2x16xf32>
// LLVM-LABEL: llvm.func @transposed_load
// LLVM-NOT: llvm.intr.masked.gather
// LLVM: llvm.return
func.func @transposed_load(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %row: index, %col: index, %lim: index) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %s, [%c16, %c16], [%c1, %c16], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<4x16xf32>>
  %m = arith.addf %x, %x : tensor<4x16xf32>
  %q = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  tile.store %q, %m : !tile.block_ptr<tensor<4x16xf32>>
  return
}

// -----

// An f32 block of a transposed view whose sides are multiples of 8 (the
// paged-attention piece form's K^T piece, [8, 16]) is read as 8x8 pieces of
// rows, each transposed alone (AVX2's 8x8 sequence in the CPU pipeline)
// and placed at the mirrored offset.
// CHECK-LABEL: func.func @transposed_load_8x8_pieces
// CHECK: %[[T:.*]] = memref.transpose
// CHECK: %[[R0:.*]] = vector.transfer_read %[[T]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<8x8xf32>
// CHECK: %[[X0:.*]] = vector.transpose %[[R0]], [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// CHECK: vector.insert_strided_slice %[[X0]], %{{.*}} {offsets = [0, 0], strides = [1, 1]} : vector<8x8xf32> into vector<8x16xf32>
// CHECK: %[[R1:.*]] = vector.transfer_read %[[T]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<8x8xf32>
// CHECK: %[[X1:.*]] = vector.transpose %[[R1]], [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// CHECK: vector.insert_strided_slice %[[X1]], %{{.*}} {offsets = [0, 8], strides = [1, 1]} : vector<8x8xf32> into vector<8x16xf32>
// CHECK-NOT: vector<16x8xf32>
// LLVM-LABEL: llvm.func @transposed_load_8x8_pieces
func.func @transposed_load_8x8_pieces(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %s, [%c8, %c16], [%c1, %c8], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x16xf32>>
  %x = tile.load %p {in_bounds} : !tile.block_ptr<tensor<8x16xf32>>
  %m = arith.addf %x, %x : tensor<8x16xf32>
  %q = tile.make_block_ptr %o, [%c8, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x16xf32>>
  tile.store %q, %m {in_bounds} : !tile.block_ptr<tensor<8x16xf32>>
  return
}

// -----

// A view with no unit stride (every other element of every other row)
// loads as one masked gather per piece (here a warp's whole 2x16 block),
// not element by element.
// CHECK-LABEL: func.func @strided_load
// CHECK: vector.gather %{{.*}}[%{{.*}}] [%{{.*}}], %{{.*}}, %{{.*}} : memref<?xf32>, vector<32xi64>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// LLVM-LABEL: llvm.func @strided_load
// LLVM: llvm.intr.masked.gather
func.func @strided_load(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %p = tile.make_block_ptr %s, [%c16, %c16], [%c32, %c2], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<4x16xf32>>
  %m = arith.addf %x, %x : tensor<4x16xf32>
  %q = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  tile.store %q, %m : !tile.block_ptr<tensor<4x16xf32>>
  return
}

// -----

// The same block in 16 bits, the same way.
// CHECK-LABEL: func.func @transposed_load_16
// CHECK-NOT: vector.gather
// CHECK: %[[T:.*]] = memref.transpose %{{.*}} (d0, d1) -> (d1, d0) : memref<?x?xbf16, strided<[1, ?], offset: ?>> to memref<?x?xbf16, strided<[?, 1], offset: ?>>
// CHECK: %[[R:.*]] = vector.transfer_read %[[T]][%{{.*}}, %{{.*}}], %{{.*}} : memref<?x?xbf16, strided<[?, 1], offset: ?>>, vector<16x2xbf16>
// CHECK: vector.transpose %[[R]], [1, 0] : vector<16x2xbf16> to vector<2x16xbf16>
// LLVM-LABEL: llvm.func @transposed_load_16
// LLVM-NOT: llvm.intr.masked.gather
// LLVM: llvm.return
func.func @transposed_load_16(%s: !tile.ptr<bf16>, %o: !tile.ptr<f32>) attributes {tile.num_warps = 2 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %p = tile.make_block_ptr %s, [%c16, %c16], [%c1, %c16], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<4x16xbf16>>
  %x = tile.load %p : !tile.block_ptr<tensor<4x16xbf16>>
  %w = tile.convert %x : tensor<4x16xbf16> -> tensor<4x16xf32>
  %q = tile.make_block_ptr %o, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<4x16xf32>>
  tile.store %q, %w : !tile.block_ptr<tensor<4x16xf32>>
  return
}
// -----

// A kernel's fast path: `in_bounds` loads and stores are plain vector
// accesses (no masks); the checked branch keeps masked transfers. Branches
// are split in place by match-target-size.
// CHECK-LABEL: func.func @interior_fast_path
// CHECK: scf.if
// CHECK: vector.transfer_read {{.*}} {in_bounds = [true, true]} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<2x16xf32>
// CHECK: vector.transfer_write {{.*}} {in_bounds = [true, true]} : vector<2x16xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK: } else {
// CHECK-NOT: in_bounds = [true
// CHECK: vector.transfer_read {{.*}} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<2x16xf32>
// CHECK: vector.transfer_write
// LLVM-LABEL: llvm.func @interior_fast_path
// LLVM: llvm.load {{.*}} -> vector<16xf32>
// LLVM: llvm.intr.masked.load
func.func @interior_fast_path(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %n: index, %interior: i1) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %s, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x16xf32>>
  %q = tile.make_block_ptr %o, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x16xf32>>
  scf.if %interior {
    %x = tile.load %p {in_bounds} : !tile.block_ptr<tensor<2x16xf32>>
    %y = arith.addf %x, %x : tensor<2x16xf32>
    tile.store %q, %y {in_bounds} : !tile.block_ptr<tensor<2x16xf32>>
  } else {
    %x = tile.load %p : !tile.block_ptr<tensor<2x16xf32>>
    %y = arith.addf %x, %x : tensor<2x16xf32>
    tile.store %q, %y : !tile.block_ptr<tensor<2x16xf32>>
  }
  return
}

// -----

// A prefetch: one memref.prefetch per 64-byte line of each block row (rows
// of 32 f32 = 128 bytes: lines at columns 0 and 16), read into all levels;
// llvm.intr.prefetch in LLVM. It has no other effect: the copy after it
// loads and stores as without it.
// CHECK-LABEL: func.func @prefetch_rows
// CHECK-COUNT-6: memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], read, locality<3>, data
// CHECK-NOT: memref.prefetch
// LLVM-LABEL: llvm.func @prefetch_rows
// LLVM-COUNT-6: llvm.intr.prefetch
// LLVM-NOT: llvm.intr.prefetch
// LLVM: llvm.return
func.func @prefetch_rows(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %rows: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %xp = tile.make_block_ptr %x, [%rows, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<3x32xf32>>
  tile.prefetch %xp : !tile.block_ptr<tensor<3x32xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<3x32xf32>>
  %yp = tile.make_block_ptr %y, [%rows, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<3x32xf32>>
  tile.store %yp, %v : !tile.block_ptr<tensor<3x32xf32>>
  return
}

// -----

// A pointer that only prefetches (no load or store reaches it) takes no
// layout and stays whole: one prefetch per cache line of its block (a
// 16-float line here), with the op's locality (2: L2 and beyond,
// prefetcht1 on x86).
// CHECK-LABEL: func.func @prefetch_only_l2
// CHECK: scf.for
// CHECK: memref.prefetch %{{.*}}[%{{.*}}], read, locality<2>, data
// CHECK-NOT: memref.prefetch
// LLVM-LABEL: llvm.func @prefetch_only_l2
// LLVM: llvm.intr.prefetch
// LLVM-NOT: llvm.intr.prefetch
// LLVM: llvm.return
func.func @prefetch_only_l2(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {
    %o = arith.muli %i, %c16 : index
    %p = tile.make_block_ptr %x, [%n], [%c1], [%o] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
    tile.prefetch %p {locality = 2 : i64} : !tile.block_ptr<tensor<16xf32>>
  }
  %xp = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<8xf32>>
  %yp = tile.make_block_ptr %y, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8xf32>>
  tile.store %yp, %v : !tile.block_ptr<tensor<8xf32>>
  return
}

// -----

// An integer dot with B in K pairs (the quantized weights' GEMV): per A row
// and K pair, A's pair as one i32 repeated across the columns times B's pair
// row sign-extended to i16, in x86's pmaddwd: on AVX2 two 16-lane calls per
// pair for the 8-column pieces (16 pairs: 32), on AVX-512 one 32-lane call
// per pair (16), each added to the i32 accumulator. B's 16 pair rows are
// two load pieces of 8 rows, joined by tile.concat (register inserts).
// CHECK-LABEL: func.func @int_dot_pairs
// CHECK: vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [8, 0], strides = [1, 1]} : vector<8x16xi8> into vector<16x16xi8>
// CHECK: arith.extsi %{{.*}} : vector<16x16xi8> to vector<16x16xi16>
// CHECK-COUNT-32: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
// LLVM-LABEL: llvm.func @int_dot_pairs
// LLVM: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX512-LABEL: func.func @int_dot_pairs
// AVX512: arith.extsi %{{.*}} : vector<16x32xi8> to vector<16x32xi16>
// AVX512-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// AVX512-NOT: llvm.call_intrinsic
// With VNNI the product and its accumulation are one vpdpwssd.
// VNNI-LABEL: func.func @int_dot_pairs
// VNNI-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.vpdpwssd.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xi32>, vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// VNNI-NOT: llvm.call_intrinsic
// VNNI-NOT: arith.addi {{.*}} : vector
func.func @int_dot_pairs(%a: !tile.ptr<i16>, %b: !tile.ptr<i8>, %c: !tile.ptr<i32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pa = tile.make_block_ptr %a, [%c1, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<i16> -> !tile.block_ptr<tensor<1x32xi16>>
  %x = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<1x32xi16>>
  %pb = tile.make_block_ptr %b, [%c16, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<16x32xi8>>
  %y = tile.load %pb {in_bounds} : !tile.block_ptr<tensor<16x32xi8>>
  %z = arith.constant dense<0> : tensor<1x16xi32>
  %d = tile.dot %x, %y, %z {b_pairs} : tensor<1x32xi16> * tensor<16x32xi8> -> tensor<1x16xi32>
  %pc = tile.make_block_ptr %c, [%c1, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i32> -> !tile.block_ptr<tensor<1x16xi32>>
  tile.store %pc, %d {in_bounds} : !tile.block_ptr<tensor<1x16xi32>>
  return
}

// -----

// 4-bit weights, a K pair per byte (low nibble K step 2k, high 2k + 1),
// unpacked in registers into i32 pairs (low 16 bits, high 16 bits): B
// [16, 16] i32 is the same [K / 2, 2 N] i16 operand, reinterpreted, so
// the dot is the i8 form's without the sign extension (on AVX2 per
// 8-column piece of the result).
// CHECK-LABEL: func.func @int_dot_i32_pairs
// CHECK-NOT: arith.extsi
// CHECK: vector.bitcast %{{.*}} : vector<16x8xi32> to vector<16x16xi16>
// CHECK-COUNT-32: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
// LLVM-LABEL: llvm.func @int_dot_i32_pairs
// LLVM: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// AVX512-LABEL: func.func @int_dot_i32_pairs
// AVX512: vector.bitcast %{{.*}} : vector<16x16xi32> to vector<16x32xi16>
// AVX512-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// AVX512-NOT: llvm.call_intrinsic
// VNNI-LABEL: func.func @int_dot_i32_pairs
// VNNI-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.vpdpwssd.512"
// VNNI-NOT: llvm.call_intrinsic
func.func @int_dot_i32_pairs(%a: !tile.ptr<i16>, %b: !tile.ptr<i8>, %c: !tile.ptr<i32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pa = tile.make_block_ptr %a, [%c1, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<i16> -> !tile.block_ptr<tensor<1x32xi16>>
  %x = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<1x32xi16>>
  %pb = tile.make_block_ptr %b, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<16x16xi8>>
  %y = tile.load %pb {in_bounds} : !tile.block_ptr<tensor<16x16xi8>>
  %w = arith.extui %y : tensor<16x16xi8> to tensor<16x16xi32>
  %m = arith.constant dense<15> : tensor<16x16xi32>
  %s4 = arith.constant dense<4> : tensor<16x16xi32>
  %s16 = arith.constant dense<16> : tensor<16x16xi32>
  %lo = arith.andi %w, %m : tensor<16x16xi32>
  %h = arith.shrui %w, %s4 : tensor<16x16xi32>
  %hi = arith.shli %h, %s16 : tensor<16x16xi32>
  %p = arith.ori %lo, %hi : tensor<16x16xi32>
  %z = arith.constant dense<0> : tensor<1x16xi32>
  %d = tile.dot %x, %p, %z {b_pairs} : tensor<1x32xi16> * tensor<16x16xi32> -> tensor<1x16xi32>
  %pc = tile.make_block_ptr %c, [%c1, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<i32> -> !tile.block_ptr<tensor<1x16xi32>>
  tile.store %pc, %d {in_bounds} : !tile.block_ptr<tensor<1x16xi32>>
  return
}
