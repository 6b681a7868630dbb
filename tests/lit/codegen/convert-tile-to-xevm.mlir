// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=xe:pvc -convert-tile-to-xevm | FileCheck %s
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=xe:pvc -convert-tile-to-xevm=block-io=always | FileCheck %s --check-prefix=ALWAYS
// RUN: strata-opt %s -split-input-file -assign-layouts -distribute-to-warps -match-target-size=target=xe:pvc -convert-tile-to-xevm=block-io=never | FileCheck %s --check-prefix=NEVER

// One sub-group's [16, 16] x [16, 16] f16 GEMM step on PVC: pointers become
// global LLVM pointers, block pointers vector<8xi64>; A loads as two 8-row
// 2D blocks, B with the VNNI transform (16 rows -> 8 x i32 per lane), each
// behind the run-time check of the surface rules with a per-lane loop as
// the other branch; two 8x16x16 DPAS; C stored as two 8-row 32-bit blocks.
// CHECK-LABEL: func.func @gemm_step
// CHECK-SAME: (%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: index)
// CHECK: xevm.lane_id
// CHECK: vector.from_elements {{.*}} : vector<8xi64>
// CHECK: scf.if {{.*}} -> (vector<16xf16>)
// CHECK: xevm.blockload2d {{.*}} <{elem_size_in_bits = 16 : i32, pack_register = false, tile_height = 16 : i32, tile_width = 16 : i32, transpose = false, v_blocks = 1 : i32}>
// CHECK: } else {
// CHECK: scf.for
// CHECK: llvm.load {{.*}} : !llvm.ptr<1> -> f16
// CHECK: pack_register = true
// CHECK-SAME: -> vector<8xi32>
// CHECK-COUNT-2: xevm.mma {{.*}} {shape = <m = 8, n = 16, k = 16>, types = <d = f32, a = f16, b = f16, c = f32>}
// CHECK: xevm.blockstore2d {{.*}}elem_size_in_bits = 32 : i32, tile_height = 8 : i32, tile_width = 16 : i32
// CHECK-NOT: tile.
// block-io=always: no per-lane loops (B keeps the choice between the
// plain and the transposed block load, which is the view's layout, not a
// rule); block-io=never: no block instruction.
// ALWAYS-LABEL: func.func @gemm_step
// ALWAYS-NOT: scf.for
// ALWAYS: xevm.blockload2d
// ALWAYS-NOT: scf.for
// ALWAYS: xevm.mma
// ALWAYS-NOT: scf.for
// NEVER-LABEL: func.func @gemm_step
// NEVER-NOT: xevm.block
// NEVER: xevm.mma
// NEVER-NOT: xevm.block
func.func @gemm_step(%a: !tile.ptr<f16>, %b: !tile.ptr<f16>, %c: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ap = tile.make_block_ptr %a, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<16x16xf16>>
  %bp = tile.make_block_ptr %b, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<16x16xf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<16x16xf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x16xf16>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tile.dot %x, %y, %zero : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  %cp = tile.make_block_ptr %c, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<16x16xf32>>
  return
}

// -----

// [N, K] weights: B is a transposed view (unit row stride), read by the
// transposed 32-bit block load (16 rows x 8 K pairs, VNNI as loaded) where
// the storage meets the rules.
// CHECK-LABEL: func.func @gemm_nk
// CHECK: xevm.blockload2d {{.*}} <{elem_size_in_bits = 32 : i32, pack_register = false, tile_height = 16 : i32, tile_width = 8 : i32, transpose = true, v_blocks = 1 : i32}> {{.*}} -> vector<8xi32>
// CHECK: xevm.mma
func.func @gemm_nk(%a: !tile.ptr<bf16>, %w: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ap = tile.make_block_ptr %a, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %bp = tile.make_block_ptr %w, [%n, %n], [%c1, %n], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<16x16xbf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<16x16xbf16>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tile.dot %x, %y, %zero : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
  %cp = tile.make_block_ptr %c, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x16xf32>>
  tile.store %cp, %d : !tile.block_ptr<tensor<16x16xf32>>
  return
}

// -----

// A bias row: a 1-D [16] tile is one row, expanded to [1, 16] and broadcast
// over the 8 rows by a shuffle within the lane; bf16 rounds by hand (to
// nearest even, NaN kept quiet) into i16 bits.
// CHECK-LABEL: func.func @bias_rows
// CHECK: vector.shuffle {{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<1xf32>, vector<1xf32>
// CHECK: arith.constant dense<32767> : vector<8xi32>
// CHECK: arith.cmpf uno
// CHECK: arith.trunci {{.*}} : vector<8xi32> to vector<8xi16>
func.func @bias_rows(%bias: !tile.ptr<f32>, %c: !tile.ptr<bf16>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bp = tile.make_block_ptr %bias, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  %b1 = tile.load %bp : !tile.block_ptr<tensor<16xf32>>
  %b2 = tile.expand_dims %b1 {axis = 0 : i64} : tensor<16xf32> -> tensor<1x16xf32>
  %b8 = tile.broadcast %b2 : tensor<1x16xf32> -> tensor<8x16xf32>
  %o = tile.convert %b8 : tensor<8x16xf32> -> tensor<8x16xbf16>
  %cp = tile.make_block_ptr %c, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<8x16xbf16>>
  tile.store %cp, %o : !tile.block_ptr<tensor<8x16xbf16>>
  return
}

// -----

// A row's mean square and its normalization (RMSNorm's form): the [1, 32]
// row is two elements a lane; the sum combines them, then the sub-group
// through OpenCL's sub_group_reduce_add (a convergent call every lane
// makes, declared in the module); the [1] and [1, 1] column tiles are one
// value every lane holds, broadcast back along the row by a shuffle.
// CHECK-LABEL: llvm.func @_Z20sub_group_reduce_addf(f32) -> f32 attributes {convergent}
// CHECK-LABEL: func.func @row_norm
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: llvm.call @_Z20sub_group_reduce_addf(%{{.*}}) {convergent} : (f32) -> f32
// CHECK: math.sqrt %{{.*}} : vector<1xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 0] : vector<1xf32>, vector<1xf32>
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK-NOT: tile.
func.func @row_norm(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: index, %eps: f32) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %xp = tile.make_block_ptr %x, [%c1, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x32xf32>>
  %v = tile.load %xp : !tile.block_ptr<tensor<1x32xf32>>
  %sq = arith.mulf %v, %v : tensor<1x32xf32>
  %ss = tile.reduce %sq {kind = "sum", axis = 1 : i64} : tensor<1x32xf32> -> tensor<1xf32>
  %et = tile.splat %eps : f32 -> tensor<1xf32>
  %m = arith.addf %ss, %et : tensor<1xf32>
  %rt = math.sqrt %m : tensor<1xf32>
  %ie = tile.expand_dims %rt {axis = 1 : i64} : tensor<1xf32> -> tensor<1x1xf32>
  %ib = tile.broadcast %ie : tensor<1x1xf32> -> tensor<1x32xf32>
  %o = arith.mulf %v, %ib : tensor<1x32xf32>
  %yp = tile.make_block_ptr %y, [%c1, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x32xf32>>
  tile.store %yp, %o : !tile.block_ptr<tensor<1x32xf32>>
  return
}

// -----

// A table entry (RoPE's token position, a block table's block): every lane
// loads the same i64 from global memory.
// CHECK-LABEL: func.func @lookup
// CHECK: %[[AT:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i64
// CHECK: llvm.load %[[AT]] : !llvm.ptr<1> -> i64
// CHECK-NOT: tile.
func.func @lookup(%pos: !tile.ptr<i64>, %y: !tile.ptr<f32>, %t: index, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.block_lookup %pos[%t] : !tile.ptr<i64>
  %yp = tile.make_block_ptr %y, [%n, %n], [%n, %c1], [%p, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x16xf32>>
  %z = arith.constant dense<0.0> : tensor<1x16xf32>
  tile.store %yp, %z : !tile.block_ptr<tensor<1x16xf32>>
  return
}

// -----

// Attention's softmax pieces on an [8, 16] score tile (one element a lane
// a row): the causal and key-length mask compares each element's column
// (the lane id plus the block's base) with its row and the limit and
// selects -inf; the row max is one sub-group reduction a row, a column
// [8] every lane holds; a column [8, 1] loads the same 8 values in every
// lane and lane 0 stores them; iota along the rows is the row index.
// CHECK-LABEL: llvm.func @_Z20sub_group_reduce_maxf(f32) -> f32 attributes {convergent}
// CHECK-LABEL: func.func @softmax_rows
// CHECK: xevm.lane_id
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<8xi64>
// CHECK: arith.cmpi sle, %{{.*}}, %{{.*}} : vector<8xi64>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK-COUNT-8: llvm.call @_Z20sub_group_reduce_maxf
// CHECK: vector.from_elements %{{.*}} : vector<8xf32>
// CHECK: arith.uitofp %{{.*}} : vector<8xi64> to vector<8xf32>
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK-NOT: tile.
// A column tile is per-lane loops even with block-io=always.
// ALWAYS-LABEL: func.func @softmax_rows
// ALWAYS: scf.for
func.func @softmax_rows(%s: !tile.ptr<f32>, %m: !tile.ptr<f32>, %n: index, %q0: index, %k0: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sp = tile.make_block_ptr %s, [%n, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x16xf32>>
  %x = tile.load %sp : !tile.block_ptr<tensor<8x16xf32>>
  %mx = tile.mask %x, [%q0, %k0], %n {causal} : tensor<8x16xf32>
  %r = tile.reduce %mx {kind = "max", axis = 1 : i64} : tensor<8x16xf32> -> tensor<8xf32>
  %rows = tile.iota %c0 {axis = 0 : i64} : tensor<8x1xf32>
  %rc = tile.expand_dims %r {axis = 1 : i64} : tensor<8xf32> -> tensor<8x1xf32>
  %mp = tile.make_block_ptr %m, [%n, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x1xf32>>
  %old = tile.load %mp : !tile.block_ptr<tensor<8x1xf32>>
  %t = arith.addf %rc, %old : tensor<8x1xf32>
  %u = arith.addf %t, %rows : tensor<8x1xf32>
  tile.store %mp, %u : !tile.block_ptr<tensor<8x1xf32>>
  return
}

// -----

// argmax of two rows of 32 columns: each lane's best of its two blocks
// (ties to the lower column), then the sub-group's max and, among the
// lanes that hold it, the lowest column.
// CHECK-LABEL: func.func @argmax_rows
// CHECK: xevm.lane_id
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: llvm.call @_Z20sub_group_reduce_maxf
// CHECK: llvm.call @_Z20sub_group_reduce_minf
// CHECK: llvm.call @_Z20sub_group_reduce_maxf
// CHECK: llvm.call @_Z20sub_group_reduce_minf
// CHECK: vector.from_elements %{{.*}} : vector<2xf32>
// CHECK-NOT: tile.
func.func @argmax_rows(%s: !tile.ptr<f32>, %o: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %sp = tile.make_block_ptr %s, [%c2, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x32xf32>>
  %x = tile.load %sp : !tile.block_ptr<tensor<2x32xf32>>
  %r = tile.reduce %x {kind = "argmax", axis = 1 : i64} : tensor<2x32xf32> -> tensor<2xf32>
  %rc = tile.expand_dims %r {axis = 1 : i64} : tensor<2xf32> -> tensor<2x1xf32>
  %op = tile.make_block_ptr %o, [%c2, %c1], [%c1, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<2x1xf32>>
  tile.store %op, %rc : !tile.block_ptr<tensor<2x1xf32>>
  return
}
