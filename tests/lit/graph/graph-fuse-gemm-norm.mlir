// RUN: strata-opt %s --graph-fuse-gemm-norm -split-input-file | FileCheck %s

// A decoder layer's norms as graph-form-regions leaves them: the attention
// norm feeds the q / k / v region, the MLP norm the SwiGLU region, the
// final norm the lm_head (a row gather). Each becomes its regions'
// prologue: x is the norm's input, the weight the last operand, and no
// rmsnorm region is left.
// CHECK-LABEL: source = "layer"
// CHECK-NOT: graph.region.rmsnorm
// CHECK: %[[QKV:.*]]:3 = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{[0-9]+}}) {bias = 0 : i64, epilogue = "none", layout = "nk", norm = 1 : i64, norm_eps = 9.9999999999999995E-7 : f64, residual = 0 : i64, rows = 0 : i64, weights = 3 : i64}
// CHECK: %[[G:.*]] = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}, %{{[0-9]+}}) {bias = 0 : i64, epilogue = "swiglu", layout = "nk", norm = 1 : i64, norm_eps = 1.000000e-05 : f64, residual = 0 : i64, rows = 0 : i64, weights = 2 : i64}
// CHECK: %[[LM:.*]] = graph.region.gemm(%arg0, %{{.*}}, %arg1, %{{[0-9]+}}) {bias = 0 : i64, epilogue = "none", layout = "nk", norm = 1 : i64, norm_eps = 1.000000e-05 : f64, residual = 0 : i64, rows = 1 : i64, weights = 1 : i64}
// CHECK: graph.output %[[QKV]]#0, %[[QKV]]#1, %[[QKV]]#2, %[[G]], %[[LM]]
graph.graph attributes {input_names = ["h", "logits_indices"], source = "layer", meta = "{}"} {
^bb0(%h: tensor<1x?x64xf32>, %rows: tensor<?xi64>):
  %n1 = graph.weight "attn_norm" at "/m.bin" [0, 256] : tensor<64xf32>
  %n2 = graph.weight "mlp_norm" at "/m.bin" [0, 256] : tensor<64xf32>
  %n3 = graph.weight "final_norm" at "/m.bin" [0, 256] : tensor<64xf32>
  %wq = graph.weight "q" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wk = graph.weight "k" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wv = graph.weight "v" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wg = graph.weight "gate" at "/m.bin" [0, 45056] : tensor<176x64xf32>
  %wu = graph.weight "up" at "/m.bin" [0, 45056] : tensor<176x64xf32>
  %wlm = graph.weight "lm" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %a = graph.region.rmsnorm(%h, %n1) {eps = 1.000000e-06 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %qkv:3 = graph.region.gemm(%a, %wq, %wk, %wv) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 3 : i64} : (tensor<1x?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>)
  %m = graph.region.rmsnorm(%h, %n2) {eps = 1.000000e-05 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %g = graph.region.gemm(%m, %wg, %wu) {bias = 0 : i64, epilogue = "swiglu", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 2 : i64} : (tensor<1x?x64xf32>, tensor<176x64xf32>, tensor<176x64xf32>) -> tensor<1x?x176xf32>
  %f = graph.region.rmsnorm(%h, %n3) {eps = 1.000000e-05 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %l = graph.region.gemm(%f, %wlm, %rows) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 1 : i64, weights = 1 : i64} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<?xi64>) -> tensor<1x?x128xf32>
  graph.output %qkv#0, %qkv#1, %qkv#2, %g, %l {names = ["q", "k", "v", "g", "logits"]} : tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x176xf32>, tensor<1x?x128xf32>
}

// -----

// A norm that anything besides a GEMM's x reads stays: here it is also a
// graph output, and another norm is a GEMM's residual.
// CHECK-LABEL: source = "kept"
// CHECK: %[[A:.*]] = graph.region.rmsnorm(%arg0,
// CHECK: %[[B:.*]] = graph.region.rmsnorm(%arg0,
// CHECK: graph.region.gemm(%[[A]], %{{.*}}) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 1 : i64}
// CHECK: graph.region.gemm(%arg0, %{{.*}}, %[[B]]) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 1 : i64, rows = 0 : i64, weights = 1 : i64}
graph.graph attributes {input_names = ["h"], source = "kept", meta = "{}"} {
^bb0(%h: tensor<1x?x64xf32>):
  %n = graph.weight "norm" at "/m.bin" [0, 256] : tensor<64xf32>
  %w = graph.weight "w" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %a = graph.region.rmsnorm(%h, %n) {eps = 1.000000e-05 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %b = graph.region.rmsnorm(%h, %n) {eps = 1.000000e-05 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %y = graph.region.gemm(%a, %w) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 1 : i64} : (tensor<1x?x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  %z = graph.region.gemm(%h, %w, %b) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 1 : i64, rows = 0 : i64, weights = 1 : i64} : (tensor<1x?x64xf32>, tensor<64x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  graph.output %y, %z, %a {names = ["y", "z", "a"]} : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}
