// RUN: strata-opt %s --graph-fuse-rope-kv-write -split-input-file | FileCheck %s

// A layer's attention as graph-form-paged-attention leaves it: q and k
// rotated at the same positions, k' written with v into the cache, the
// attention reading q' and the written cache. The three regions become one
// region.rope_kv_write with the RoPE's attributes and the layer; the
// attention reads its two results.
// CHECK-LABEL: source = "layer"
// CHECK-NOT: graph.region.rope(
// CHECK-NOT: graph.region.kv_write
// CHECK: %[[F:.*]]:2 = graph.region.rope_kv_write(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) {head_dim = 16 : i64, layer = 3 : i64, theta = 5.000000e+05 : f64}
// CHECK: graph.region.paged_attention(%[[F]]#0, %[[F]]#1, %arg6, %arg7, %arg8)
graph.graph attributes {input_names = ["q", "k", "v", "pos", "cache", "slots", "tables", "starts", "lens"], source = "layer", meta = "{}"} {
^bb0(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %pos: tensor<1x?xi64>, %c: tensor<?x2x2x16x16xf32>, %s: tensor<?xi64>, %bt: tensor<?x?xi64>, %st: tensor<?xi64>, %ln: tensor<?xi64>):
  %qr = graph.region.rope(%q, %pos) {head_dim = 16 : i64, theta = 5.000000e+05 : f64} : (tensor<1x?x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %kr = graph.region.rope(%k, %pos) {head_dim = 16 : i64, theta = 5.000000e+05 : f64} : (tensor<1x?x32xf32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
  %cw = graph.region.kv_write(%c, %kr, %v, %s) {layer = 3 : i64} : (tensor<?x2x2x16x16xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<?xi64>) -> tensor<?x2x2x16x16xf32>
  %o = graph.region.paged_attention(%qr, %cw, %bt, %st, %ln) {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 3 : i64, scale = 2.500000e-01 : f64} : (tensor<1x?x64xf32>, tensor<?x2x2x16x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<?xi64>) -> tensor<1x?x64xf32>
  graph.output %o, %cw {names = ["o", "cache"]} : tensor<1x?x64xf32>, tensor<?x2x2x16x16xf32>
}

// -----

// Rotated k read besides the write (here a graph output) stays a value, so
// nothing fuses.
// CHECK-LABEL: source = "k_read"
// CHECK: graph.region.rope(%arg0
// CHECK: graph.region.rope(%arg1
// CHECK: graph.region.kv_write
// CHECK-NOT: graph.region.rope_kv_write
graph.graph attributes {input_names = ["q", "k", "v", "pos", "cache", "slots", "tables", "starts", "lens"], source = "k_read", meta = "{}"} {
^bb0(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %pos: tensor<1x?xi64>, %c: tensor<?x2x2x16x16xf32>, %s: tensor<?xi64>, %bt: tensor<?x?xi64>, %st: tensor<?xi64>, %ln: tensor<?xi64>):
  %qr = graph.region.rope(%q, %pos) {head_dim = 16 : i64, theta = 5.000000e+05 : f64} : (tensor<1x?x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %kr = graph.region.rope(%k, %pos) {head_dim = 16 : i64, theta = 5.000000e+05 : f64} : (tensor<1x?x32xf32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
  %cw = graph.region.kv_write(%c, %kr, %v, %s) {layer = 0 : i64} : (tensor<?x2x2x16x16xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<?xi64>) -> tensor<?x2x2x16x16xf32>
  %o = graph.region.paged_attention(%qr, %cw, %bt, %st, %ln) {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 0 : i64, scale = 2.500000e-01 : f64} : (tensor<1x?x64xf32>, tensor<?x2x2x16x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<?xi64>) -> tensor<1x?x64xf32>
  graph.output %o, %kr {names = ["o", "k_rotated"]} : tensor<1x?x64xf32>, tensor<1x?x32xf32>
}

// -----

// q and k rotated with other attributes (another theta) stay apart.
// CHECK-LABEL: source = "other_theta"
// CHECK: graph.region.kv_write
// CHECK-NOT: graph.region.rope_kv_write
graph.graph attributes {input_names = ["q", "k", "v", "pos", "cache", "slots", "tables", "starts", "lens"], source = "other_theta", meta = "{}"} {
^bb0(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %pos: tensor<1x?xi64>, %c: tensor<?x2x2x16x16xf32>, %s: tensor<?xi64>, %bt: tensor<?x?xi64>, %st: tensor<?xi64>, %ln: tensor<?xi64>):
  %qr = graph.region.rope(%q, %pos) {head_dim = 16 : i64, theta = 5.000000e+05 : f64} : (tensor<1x?x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %kr = graph.region.rope(%k, %pos) {head_dim = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<1x?x32xf32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
  %cw = graph.region.kv_write(%c, %kr, %v, %s) {layer = 0 : i64} : (tensor<?x2x2x16x16xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<?xi64>) -> tensor<?x2x2x16x16xf32>
  %o = graph.region.paged_attention(%qr, %cw, %bt, %st, %ln) {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 0 : i64, scale = 2.500000e-01 : f64} : (tensor<1x?x64xf32>, tensor<?x2x2x16x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<?xi64>) -> tensor<1x?x64xf32>
  graph.output %o {names = ["o"]} : tensor<1x?x64xf32>
}
