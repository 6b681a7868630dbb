// A compiler test kernel for strata_cuda_tests (CudaFragmentReductions):
// reductions over mma accumulator fragments, as attention's softmax needs
// them. One warp: S = A B (A [16, 32], B [32, 32], bf16; S is four [16, 8]
// fragments after match-target-size), its row max m, D = S - m broadcast
// back along the rows, and the column sums of D. Writes D [16, 32], m [16]
// and the column sums [32] (f32).
func.func @fragment_reductions(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %d: !tile.ptr<f32>, %m: !tile.ptr<f32>, %cs: !tile.ptr<f32>) attributes {tile.num_warps = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %ap = tile.make_block_ptr %a, [%c16, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<16x32xbf16>>
  %bp = tile.make_block_ptr %b, [%c32, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<bf16> -> !tile.block_ptr<tensor<32x32xbf16>>
  %x = tile.load %ap : !tile.block_ptr<tensor<16x32xbf16>>
  %y = tile.load %bp : !tile.block_ptr<tensor<32x32xbf16>>
  %z = arith.constant dense<0.0> : tensor<16x32xf32>
  %s = tile.dot %x, %y, %z : tensor<16x32xbf16> * tensor<32x32xbf16> -> tensor<16x32xf32>
  %mx = tile.reduce %s {axis = 1 : i64, kind = "max"} : tensor<16x32xf32> -> tensor<16xf32>
  %me = tile.expand_dims %mx {axis = 1 : i64} : tensor<16xf32> -> tensor<16x1xf32>
  %mb = tile.broadcast %me : tensor<16x1xf32> -> tensor<16x32xf32>
  %dv = arith.subf %s, %mb : tensor<16x32xf32>
  %csum = tile.reduce %dv {axis = 0 : i64, kind = "sum"} : tensor<16x32xf32> -> tensor<32xf32>
  %dp = tile.make_block_ptr %d, [%c16, %c32], [%c32, %c1], [%c0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16x32xf32>>
  tile.store %dp, %dv : !tile.block_ptr<tensor<16x32xf32>>
  %mp = tile.make_block_ptr %m, [%c16], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<16xf32>>
  tile.store %mp, %mx : !tile.block_ptr<tensor<16xf32>>
  %cp = tile.make_block_ptr %cs, [%c32], [%c1], [%c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<32xf32>>
  tile.store %cp, %csum : !tile.block_ptr<tensor<32xf32>>
  return
}
