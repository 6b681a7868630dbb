// RUN: strata-opt %s -split-input-file -convert-tile-to-nvvm -verify-diagnostics

// f32 operands have no m16n8k16 mma.
func.func @f32_dot() attributes {tile.num_warps = 1 : i64} {
  %a = arith.constant dense<1.0> : tensor<16x16xf32>
  %b = arith.constant dense<1.0> : tensor<16x8xf32>
  %c = arith.constant dense<0.0> : tensor<16x8xf32>
  // expected-error @+1 {{sm_90 dots take f16 or bf16 operands (got 'f32')}}
  %d = tile.dot %a, %b, %c : tensor<16x16xf32> * tensor<16x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// A tile that is not an mma fragment (match-target-size was not run).
func.func @too_big() attributes {tile.num_warps = 1 : i64} {
  // expected-error @+1 {{'tensor<32x16xf16>' does not fit fragment A (expected [16, 16]): run match-target-size with target=sm_90 first}}
  %a = arith.constant dense<1.0> : tensor<32x16xf16>
  %b = arith.constant dense<1.0> : tensor<16x8xf16>
  %c = arith.constant dense<0.0> : tensor<32x8xf32>
  %d = tile.dot %a, %b, %c : tensor<32x16xf16> * tensor<16x8xf16> -> tensor<32x8xf32>
  return
}

// -----

// One lane layout per tile: a B operand widened into an accumulator would
// need its elements in two different lane orders.
func.func @two_roles() attributes {tile.num_warps = 1 : i64} {
  %a = arith.constant dense<1.0> : tensor<16x16xf16>
  %b = arith.constant dense<1.0> : tensor<16x8xf16>
  %c = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
  %w = arith.extf %b : tensor<16x8xf16> to tensor<16x8xf32>
  // expected-error @+1 {{tile used both as mma fragment B and C}}
  %e = tile.dot %a, %b, %w : tensor<16x16xf16> * tensor<16x8xf16> -> tensor<16x8xf32>
  return
}

// -----

// Kernels take pointers and scalars; tiles come from loads.
// expected-error @+1 {{kernel arguments are pointers and scalars}}
func.func @tile_argument(%x: tensor<16x8xf32>) attributes {tile.num_warps = 1 : i64} {
  return
}

// -----

// A kernel without dots reduces whole tiles only: the row sums of a
// [16, 8] tile would need per-row lane groups.
func.func @reduce_rows() attributes {tile.num_warps = 1 : i64} {
  %x = arith.constant dense<1.0> : tensor<16x8xf32>
  // expected-error @+1 {{the sm_90 lowering reduces a kernel's lane-linear tiles whole (the kept dims must be 1)}}
  %r = tile.reduce %x {kind = "sum", axis = 1 : i64} : tensor<16x8xf32> -> tensor<16xf32>
  return
}

// -----

// Next to dots, a reduction along an axis stays within its warp (an
// accumulator fragment's rows or columns); along an axis and across warps
// at once is not lowered.
func.func @reduce_fragment_across_warps(%a: !tile.ptr<bf16>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pa = tile.make_block_ptr %a, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %x = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<16x16xbf16>>
  %y = tile.load %pa {in_bounds} : !tile.block_ptr<tensor<16x16xbf16>>
  %zero = arith.constant dense<0.0> : tensor<16x8xf32>
  %yb = tile.extract %y[0] : tensor<16x16xbf16> -> tensor<16x8xbf16>
  %c = tile.dot %x, %yb, %zero : tensor<16x16xbf16> * tensor<16x8xbf16> -> tensor<16x8xf32>
  // expected-error @+1 {{the sm_90 lowering reduces along an axis within a warp, or whole tiles across warps}}
  %r = tile.reduce %c {kind = "max", axis = 1 : i64, cross_warp} : tensor<16x8xf32> -> tensor<16xf32>
  return
}

// -----

// A copy's view that a load also reads: the copy would be split between warps.
func.func @copy_view_loaded(%a: !tile.ptr<bf16>, %K: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = tile.alloc {size = 256 : i64} : !tile.ptr<bf16>
  %g = tile.make_block_ptr %a, [%c16, %K], [%K, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %l = tile.make_block_ptr %s, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  // expected-error @+1 {{tile.async_copy's views must serve async copies only}}
  tile.async_copy %l, %g {contiguous = 1 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  %x = tile.load %l {in_bounds, contiguous = 1 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  %b = arith.constant dense<1.0> : tensor<16x8xbf16>
  %c = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %x, %b, %c : tensor<16x16xbf16> * tensor<16x8xbf16> -> tensor<16x8xf32>
  return
}

// -----

// Copies go from global into workgroup-local memory.
func.func @copy_direction(%a: !tile.ptr<bf16>, %K: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = tile.alloc {size = 256 : i64} : !tile.ptr<bf16>
  %g = tile.make_block_ptr %a, [%c16, %K], [%K, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  %l = tile.make_block_ptr %s, [%c16, %c16], [%c16, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  // expected-error @+1 {{tile.async_copy copies from global memory (src) into workgroup-local memory (dst)}}
  tile.async_copy %g, %l {contiguous = 1 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  return
}

// -----

// More workgroup-local memory than an sm_90 block can have.
// expected-error @+1 {{the kernel needs 262144 bytes of shared memory; an sm_90 block can have 232448}}
func.func @too_much_local() attributes {tile.num_warps = 1 : i64} {
  %s = tile.alloc {size = 131072 : i64} : !tile.ptr<bf16>
  return
}

// -----

// Dot operands from workgroup-local memory come through ldmatrix, which
// needs rows contiguous along K for A.
func.func @local_a_not_contiguous(%K: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = tile.alloc {size = 256 : i64} : !tile.ptr<bf16>
  %l = tile.make_block_ptr %s, [%c16, %c16], [%c1, %c16], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x16xbf16>>
  // expected-error @+1 {{loads workgroup-local tiles only as 16-bit dot operands with `contiguous` along K (A)}}
  %x = tile.load %l {in_bounds, contiguous = 0 : i64} : !tile.block_ptr<tensor<16x16xbf16>>
  %b = arith.constant dense<1.0> : tensor<16x8xbf16>
  %c = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %x, %b, %c : tensor<16x16xbf16> * tensor<16x8xbf16> -> tensor<16x8xf32>
  return
}

// -----

// A join along rows is not an A fragment: only two [16, 8] accumulators side
// by side are (attention's P).
func.func @concat_rows() attributes {tile.num_warps = 1 : i64} {
  %a = arith.constant dense<1.0> : tensor<8x16xbf16>
  %b = arith.constant dense<1.0> : tensor<16x8xbf16>
  %c = arith.constant dense<0.0> : tensor<16x8xf32>
  // expected-error @+1 {{the sm_90 lowering joins only two [16, 8] accumulator fragments along columns into the A operand of a dot}}
  %j = tile.concat %a, %a {axis = 0 : i64} : tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<16x16xbf16>
  %d = tile.dot %j, %b, %c : tensor<16x16xbf16> * tensor<16x8xbf16> -> tensor<16x8xf32>
  return
}

// -----

// TMA copies land swizzled: the destination buffer must be a swizzled one.
func.func @tma_copy_plain_buffer(%map: !tile.ptr<i8>) attributes {tile.num_warps = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %s = tile.alloc {size = 4096 : i64} : !tile.ptr<bf16>
  %bars = tile.alloc {size = 1 : i64} : !tile.ptr<i64>
  tile.mbarrier_init %bars {arrivals = 1 : i64} : !tile.ptr<i64>
  %v = tile.make_block_ptr %s, [%c64, %c64], [%c64, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<64x64xbf16>>
  // expected-error @+1 {{tile.tma_copy writes into a swizzled tile.alloc buffer}}
  tile.tma_copy %v, %map[%c0, %c0], %bars[%c0] : !tile.block_ptr<tensor<64x64xbf16>>, !tile.ptr<i8>, !tile.ptr<i64>
  return
}
