// RUN: strata-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{order must be a permutation of the dims}}
func.func private @bad_order(tensor<32x64xf32, #tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [1, 1], order = [0, 0]}>>)

// -----

// expected-error @+1 {{dim 0 of size 48 is neither split over 4 warps of 32 nor one block of 32 per warp}}
func.func private @bad_split(tensor<48x64xf32, #tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [4, 1], order = [1, 0]}>>)

// -----

// expected-error @+1 {{opIdx must be 0 (A) or 1 (B), got 2}}
func.func private @bad_opidx(tensor<32x64xf16, #tile.dot_op<{opIdx = 2, parent = #tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [1, 1], order = [1, 0]}>}>>)

// -----

// expected-error @+1 {{parent must be a tile layout encoding}}
func.func private @bad_parent(tensor<32xf32, #tile.slice<{dim = 0, parent = 3 : i64}>>)

// -----

// expected-error @+1 {{layout has rank 2 but the tile has rank 1}}
func.func private @bad_rank(tensor<32xf32, #tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [1, 1], order = [1, 0]}>>)

// -----

func.func @dot_f16_acc(%a: tensor<16x16xf16>, %b: tensor<16x8xf16>, %c: tensor<16x8xf16>) {
  // expected-error @+1 {{accumulates in f32}}
  %d = tile.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf16>
  return
}

// -----

func.func @int_dot_types(%a: tensor<2x4xi8>, %b: tensor<2x16xi8>, %c: tensor<2x8xi32>) {
  // expected-error @+1 {{integer dots take i16 a, i8, i16 or i32 (i16 pairs) b and accumulate in i32}}
  %d = tile.dot %a, %b, %c {b_pairs} : tensor<2x4xi8> * tensor<2x16xi8> -> tensor<2x8xi32>
  return
}

// -----

func.func @int_dot_i32_pairs_shape(%a: tensor<2x4xi16>, %b: tensor<2x16xi32>, %c: tensor<2x8xi32>) {
  // An i32 B holds a column's pair in one element: [K / 2, N], not [K / 2, 2 N].
  // expected-error @+1 {{shapes do not compose}}
  %d = tile.dot %a, %b, %c {b_pairs} : tensor<2x4xi16> * tensor<2x16xi32> -> tensor<2x8xi32>
  return
}

// -----

func.func @int_dot_needs_pairs(%a: tensor<2x4xi16>, %b: tensor<4x8xi8>, %c: tensor<2x8xi32>) {
  // expected-error @+1 {{integer dots take b in K pairs (b_pairs)}}
  %d = tile.dot %a, %b, %c : tensor<2x4xi16> * tensor<4x8xi8> -> tensor<2x8xi32>
  return
}

// -----

func.func @int_dot_pair_shapes(%a: tensor<2x4xi16>, %b: tensor<4x8xi8>, %c: tensor<2x8xi32>) {
  // expected-error @+1 {{shapes do not compose: 'tensor<2x4xi16>' * 'tensor<4x8xi8>' (K pairs) -> 'tensor<2x8xi32>'}}
  %d = tile.dot %a, %b, %c {b_pairs} : tensor<2x4xi16> * tensor<4x8xi8> -> tensor<2x8xi32>
  return
}

// -----

func.func @float_dot_pairs(%a: tensor<16x16xf32>, %b: tensor<8x16xf32>, %c: tensor<16x8xf32>) {
  // expected-error @+1 {{b_pairs is for integer dots}}
  %d = tile.dot %a, %b, %c {b_pairs} : tensor<16x16xf32> * tensor<8x16xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @dot_shapes(%a: tensor<16x16xf16>, %b: tensor<8x8xf16>, %c: tensor<16x8xf32>) {
  // expected-error @+1 {{shapes do not compose}}
  %d = tile.dot %a, %b, %c : tensor<16x16xf16> * tensor<8x8xf16> -> tensor<16x8xf32>
  return
}

// -----

func.func @dot_tiling(%a: tensor<16x16xf16>, %b: tensor<16x8xf16>, %c: tensor<16x8xf32>) {
  // expected-error @+1 {{tiling must be horizontal, vertical, square or split_k, got 'diagonal'}}
  %d = tile.dot %a, %b, %c {tiling = "diagonal"} : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
  return
}

// -----

func.func @extract_range(%a: tensor<32x32xf16>) {
  // expected-error @+1 {{index 8 out of range: 'tensor<32x32xf16>' has 8 sub-blocks}}
  %e = tile.extract %a[8] : tensor<32x32xf16> -> tensor<8x16xf16>
  return
}

// -----

func.func @reduce_shape(%a: tensor<8x16xf32>) {
  // expected-error @+1 {{result must be the source without the reduced dim}}
  %r = tile.reduce %a {kind = "max", axis = 1 : i64} : tensor<8x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @reduce_reassoc_max(%a: tensor<8x16xf32>) {
  // expected-error @+1 {{reassoc is for sums}}
  %r = tile.reduce %a {kind = "max", axis = 1 : i64, reassoc} : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @reduce_kind(%a: tensor<8x16xf32>) {
  // expected-error @+1 {{kind must be max, sum or argmax}}
  %r = tile.reduce %a {kind = "min", axis = 1 : i64} : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

// An argmax's index is relative to the tile it reduces: within one warp.
func.func @argmax_across_warps(%a: tensor<8x16xf32>) {
  // expected-error @+1 {{argmax needs an axis and stays within a warp (no cross_warp)}}
  %r = tile.reduce %a {kind = "argmax", axis = 1 : i64, cross_warp} : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @block_ptr_rank(%p: !tile.ptr<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{needs 2 shape, stride and offset values for a rank-2 block, got 1, 1, 1}}
  %b = tile.make_block_ptr %p, [%n], [%n], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<8x8xf32>>
  return
}

// -----

func.func @block_ptr_type(%p: !tile.ptr<f16>, %n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{base holds 'f16' but the block is 'f32'}}
  %b = tile.make_block_ptr %p, [%n], [%n], [%c0] : !tile.ptr<f16> -> !tile.block_ptr<tensor<8xf32>>
  return
}

// -----

func.func @broadcast_dims(%a: tensor<8x2xf32>) {
  // expected-error @+1 {{dim 1 of size 2 cannot broadcast to 16}}
  %b = tile.broadcast %a : tensor<8x2xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @lookup_table(%t: !tile.ptr<f32>, %i: index) {
  // expected-error @+1 {{block tables hold i32 or i64}}
  %b = tile.block_lookup %t[%i] : !tile.ptr<f32>
  return
}

// -----

func.func @arrive_counters(%c: !tile.ptr<i64>, %i: index, %n: index) {
  // expected-error @+1 {{counters are i32, got 'i64'}}
  %last = tile.arrive %c[%i] of %n : !tile.ptr<i64>
  return
}

// -----

func.func @mask_rank(%a: tensor<16xf32>, %i: index) {
  // expected-error @+1 {{masks 2-D score tiles}}
  %b = tile.mask %a, [%i, %i], %i : tensor<16xf32>
  return
}

// -----


func.func @contiguous_dim(%p: !tile.block_ptr<tensor<16x16xbf16>>) {
  // expected-error @+1 {{contiguous dim 2 is not a dim of the rank-2 tile}}
  %x = tile.load %p {in_bounds, contiguous = 2 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

func.func @run_needs_contiguous(%p: !tile.block_ptr<tensor<16x16xbf16>>) {
  // expected-error @+1 {{run needs contiguous}}
  %x = tile.load %p {in_bounds, run = 4 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

func.func @run_power_of_two(%p: !tile.block_ptr<tensor<16x16xbf16>>) {
  // expected-error @+1 {{run 3 is not a power of two of at least 2}}
  %x = tile.load %p {in_bounds, contiguous = 1 : i64, run = 3 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

func.func @alloc_size() {
  // expected-error @+1 {{'tile.alloc' op attribute 'size' failed to satisfy constraint}}
  %s = tile.alloc {size = 0 : i64} : !tile.ptr<bf16>
  return
}

// -----

func.func @async_copy_dim(%d: !tile.block_ptr<tensor<16x16xbf16>>, %s: !tile.block_ptr<tensor<16x16xbf16>>) {
  // expected-error @+1 {{contiguous dim 2 is not a dim of the rank-2 block}}
  tile.async_copy %d, %s {contiguous = 2 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

func.func @async_copy_f32(%d: !tile.block_ptr<tensor<16x16xf32>>, %s: !tile.block_ptr<tensor<16x16xf32>>) {
  // expected-error @+1 {{copies blocks of 16-bit elements (got 'f32')}}
  tile.async_copy %d, %s {contiguous = 1 : i64} : !tile.block_ptr<tensor<16x16xf32>>
  return
}

// -----

func.func @async_copy_runs(%d: !tile.block_ptr<tensor<16x12xbf16>>, %s: !tile.block_ptr<tensor<16x12xbf16>>) {
  // expected-error @+1 {{the block's size along its contiguous dim 1 must be a multiple of 8 (got 12)}}
  tile.async_copy %d, %s {contiguous = 1 : i64} : !tile.block_ptr<tensor<16x12xbf16>>
  return
}

// -----

func.func @tma_copy_coords(%d: !tile.block_ptr<tensor<64x64xbf16>>, %m: !tile.ptr<i8>, %b: !tile.ptr<i64>, %i: index) {
  // expected-error @+1 {{takes 2 coordinates, or 3 for a map with a plane dim (got 4)}}
  tile.tma_copy %d, %m[%i, %i, %i, %i], %b[%i] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
  return
}

// -----

func.func @tma_copy_f32(%d: !tile.block_ptr<tensor<64x64xf32>>, %m: !tile.ptr<i8>, %b: !tile.ptr<i64>, %i: index) {
  // expected-error @+1 {{copies 2-D blocks of 16-bit elements (got 'tensor<64x64xf32>')}}
  tile.tma_copy %d, %m[%i, %i], %b[%i] : !tile.block_ptr<tensor<64x64xf32>>, !tile.ptr<i8>, !tile.ptr<i64>
  return
}

// -----

func.func @tma_store_global_src(%s: !tile.block_ptr<tensor<64x64xbf16>>, %m: !tile.ptr<i8>, %i: index) {
  // expected-error @+1 {{stores from a view of a swizzled tile.alloc buffer}}
  tile.tma_store %m[%i, %i], %s : !tile.ptr<i8>, !tile.block_ptr<tensor<64x64xbf16>>
  return
}

// -----

func.func @tma_store_coords(%m: !tile.ptr<i8>, %i: index) {
  %c64 = arith.constant 64 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %buf = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %s = tile.make_block_ptr %buf, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  // expected-error @+1 {{takes 2 coordinates (got 3)}}
  tile.tma_store %m[%i, %i, %i], %s : !tile.ptr<i8>, !tile.block_ptr<tensor<64x64xbf16>>
  return
}

// -----

func.func @tma_store_panels(%m: !tile.ptr<i8>, %i: index) {
  %c32 = arith.constant 32 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %buf = tile.alloc {size = 4096 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  %s = tile.make_block_ptr %buf, [%c32, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x32xbf16>>
  // expected-error @+1 {{stores blocks of up to 256 rows of whole 64-column panels}}
  tile.tma_store %m[%i, %i], %s : !tile.ptr<i8>, !tile.block_ptr<tensor<64x32xbf16>>
  return
}

// -----

func.func @tma_copy_barrier_type(%d: !tile.block_ptr<tensor<64x64xbf16>>, %m: !tile.ptr<i8>, %b: !tile.ptr<i32>, %i: index) {
  // expected-error @+1 {{mbarriers are i64 elements (got '!tile.ptr<i32>')}}
  tile.tma_copy %d, %m[%i, %i], %b[%i] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i32>
  return
}

// -----

func.func @mbarrier_init_argument(%b: !tile.ptr<i64>) {
  // expected-error @+1 {{initializes a tile.alloc buffer}}
  tile.mbarrier_init %b {arrivals = 1 : i64} : !tile.ptr<i64>
  return
}

// -----

func.func @mbarrier_wait_type(%b: !tile.ptr<f32>, %i: index) {
  // expected-error @+1 {{mbarriers are i64 elements (got '!tile.ptr<f32>')}}
  tile.mbarrier_wait %b[%i], %i : !tile.ptr<f32>
  return
}

// -----

func.func @prefetch_locality_out_of_range(%x: !tile.ptr<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  // expected-error @+1 {{attribute 'locality' failed to satisfy constraint}}
  tile.prefetch %p {locality = 4 : i64} : !tile.block_ptr<tensor<16xf32>>
  return
}

// -----

func.func @concat_wrong_size(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{joining 2 x 'tensor<16x8xf32>' along 1 gives dim 1 = 16, not 8}}
  %r = tile.concat %a, %a {axis = 1 : i64} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @concat_mixed(%a: tensor<16x8xf32>, %b: tensor<16x8xbf16>) -> tensor<16x16xf32> {
  // expected-error @+1 {{joins tiles of one type}}
  %r = tile.concat %a, %b {axis = 1 : i64} : tensor<16x8xf32>, tensor<16x8xbf16> -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

func.func @alloc_swizzle_width() {
  // expected-error @+1 {{swizzle must be 128 (bytes per swizzled row), got 64}}
  %s = tile.alloc {size = 1024 : i64, swizzle = 64 : i64} : !tile.ptr<bf16>
  return
}

// -----

func.func @alloc_swizzle_f32() {
  // expected-error @+1 {{a swizzled buffer holds 16-bit elements}}
  %s = tile.alloc {size = 1024 : i64, swizzle = 128 : i64} : !tile.ptr<f32>
  return
}

// -----

func.func @alloc_swizzle_atoms() {
  // expected-error @+1 {{a swizzled buffer holds whole 8-row swizzle atoms (a multiple of 512 elements, got 600)}}
  %s = tile.alloc {size = 600 : i64, swizzle = 128 : i64} : !tile.ptr<bf16>
  return
}

// -----

func.func @iota_axis(%b: index) {
  // expected-error @+1 {{axis 2 is outside a rank-2 tile}}
  %i = tile.iota %b {axis = 2 : i64} : tensor<1x64xf32>
  return
}

// -----

func.func @iota_type(%b: index) {
  // expected-error @+1 {{gives f32 indices}}
  %i = tile.iota %b {axis = 1 : i64} : tensor<1x64xf16>
  return
}

// -----

func.func @group_dot_wait_negative() {
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint}}
  tile.group_dot_wait {pending = -1 : i64}
  return
}

// -----

func.func @store_contiguous_needs_in_bounds(%p: !tile.block_ptr<tensor<16x16xbf16>>, %v: tensor<16x16xbf16>) {
  // expected-error @+1 {{contiguous needs in_bounds}}
  tile.store %p, %v {contiguous = 1 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

func.func @reshape_count(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{keeps the number of elements (32 -> 16)}}
  %r = tile.reshape %t : tensor<4x8xf32> -> tensor<1x16xf32>
  return
}

// -----

func.func @reshape_type(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{keeps the element type}}
  %r = tile.reshape %t : tensor<4x8xf32> -> tensor<1x32xf16>
  return
}

// -----

func.func @segment_dot_bad_segments(%a: tensor<32x16xi8>, %c: tensor<32x3xi32>) -> tensor<32x3xi32> {
  // expected-error @+1 {{c must be i32 [R, C / G] for a [R, C] and segments G a multiple of 4}}
  %r = tile.segment_dot %a, %a, %c : tensor<32x16xi8>, tensor<32x16xi8> -> tensor<32x3xi32>
  return %r : tensor<32x3xi32>
}

// -----

func.func @segment_dot_not_bytes(%a: tensor<32x16xi16>, %c: tensor<32x1xi32>) -> tensor<32x1xi32> {
  // expected-error @+1 {{a and b must be i8 tiles of one rank-2 shape}}
  %r = tile.segment_dot %a, %a, %c : tensor<32x16xi16>, tensor<32x16xi16> -> tensor<32x1xi32>
  return %r : tensor<32x1xi32>
}

// -----

func.func @convert_f16_to_i8(%a: tensor<32xf16>) -> tensor<32xi8> {
  // expected-error @+1 {{converts floats to floats, f32 to i8 and i8 or i32 to floats, not 'f16' to 'i8'}}
  %r = tile.convert %a : tensor<32xf16> -> tensor<32xi8>
  return %r : tensor<32xi8>
}
