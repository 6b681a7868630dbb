// RUN: strata-opt %s -split-input-file -match-target-size=target=cpu-avx2 -verify-diagnostics

// An argmax over pieces would need each piece's offset: it is not split.
func.func @argmax_pieces(%s: !tile.ptr<f32>, %n: index) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.make_block_ptr %s, [%c1, %n], [%n, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x64xf32>>
  %x = tile.load %p : !tile.block_ptr<tensor<1x64xf32>>
  // expected-error @+1 {{an argmax is not split into pieces (on sm_90 its lane-linear tile stays whole)}}
  %r = tile.reduce %x {kind = "argmax", axis = 1 : i64} : tensor<1x64xf32> -> tensor<1xf32>
  return
}
