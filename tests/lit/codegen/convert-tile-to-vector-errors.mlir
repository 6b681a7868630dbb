// RUN: strata-opt %s -split-input-file -convert-tile-to-vector -verify-diagnostics

func.func @cross_warp(%x: tensor<8x8xf32>) attributes {tile.num_warps = 2 : i64} {
  // expected-error @+1 {{cross-warp reductions are not supported by the CPU backend}}
  %r = tile.reduce %x {kind = "sum", axis = 1 : i64, cross_warp} : tensor<8x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @barrier() {
  // expected-error @+1 {{workgroup-local memory, async copies, barriers and arrival counters are not supported by the CPU backend}}
  tile.barrier
  return
}

// -----

func.func @group_dot_wait() {
  // expected-error @+1 {{workgroup-local memory, async copies, barriers and arrival counters are not supported by the CPU backend}}
  tile.group_dot_wait {pending = 0 : i64}
  return
}

// -----

func.func @still_laid_out(%x: tensor<8xf32, #tile.blocked<{sizePerWarp = [4], warpsPerCTA = [2], order = [0]}>>) {
  // expected-error @+1 {{tile still has a layout encoding: run distribute-to-warps and match-target-size first}}
  %y = arith.addf %x, %x : tensor<8xf32, #tile.blocked<{sizePerWarp = [4], warpsPerCTA = [2], order = [0]}>>
  return
}

// -----

// expected-error @+1 {{tile.prefetch needs the function's tile.target: run match-target-size first}}
func.func @prefetch_without_target(%x: !tile.ptr<f32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %xp = tile.make_block_ptr %x, [%n], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  tile.prefetch %xp : !tile.block_ptr<tensor<16xf32>>
  return
}

// -----

// Greedy sampling's argmax runs on the GPU only.
func.func @argmax(%x: tensor<1x8xf32>) attributes {tile.num_warps = 1 : i64} {
  // expected-error @+1 {{the CPU backend does not lower argmax (sm_90 does)}}
  %r = tile.reduce %x {kind = "argmax", axis = 1 : i64} : tensor<1x8xf32> -> tensor<1xf32>
  return
}
