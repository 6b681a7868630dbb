// RUN: strata-opt %s --graph-form-paged-attention -split-input-file -verify-diagnostics | FileCheck %s

// One layer as the HF builder writes it (tiny-llama config.json): projections,
// head split, rope on q and k, causal GQA attention, head merge, lm_head.
// CHECK-LABEL: graph.graph attributes {input_names = ["input_ids", "position_ids", "h", "seq_starts", "context_lens", "block_tables", "slot_mapping", "logits_indices", "kv_cache.0"]
// CHECK: ^bb0({{.*}}%arg8: tensor<?x2x2x?x16xf32, ["num_blocks", "", "", "block_size", ""]>)
// CHECK: %[[Q:.*]] = graph.region.rope(%{{.*}}, %arg1) {head_dim = 16 : i64, theta = 1.000000e+04 : f64}
// CHECK: %[[K:.*]] = graph.region.rope(%{{.*}}, %arg1)
// CHECK: %[[C:.*]] = graph.region.kv_write(%arg8, %[[K]], %{{.*}}, %arg6) {layer = 0 : i64}
// CHECK: %[[O:.*]] = graph.region.paged_attention(%[[Q]], %[[C]], %arg5, %arg3, %arg4) {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 0 : i64, scale = 2.500000e-01 : f64}
// CHECK: %[[R:.*]] = graph.Gather(%[[O]], %arg7) {axis = 1 : i64}
// CHECK: graph.Linear(%[[R]]
// CHECK-NOT: graph.Attention
graph.graph attributes {input_names = ["input_ids", "position_ids", "h"], source = "layer", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %h: tensor<?x?x64xf32>):
  %wq = graph.weight "q_proj" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wk = graph.weight "k_proj" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wv = graph.weight "v_proj" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wlm = graph.weight "lm_head" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %sq = graph.constant "sq" dense<[0, 0, 4, 16]> : tensor<4xi64> : tensor<4xi64>
  %skv = graph.constant "skv" dense<[0, 0, 2, 16]> : tensor<4xi64> : tensor<4xi64>
  %sm = graph.constant "sm" dense<[0, 0, 64]> : tensor<3xi64> : tensor<3xi64>
  %q0 = graph.Linear(%h, %wq) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %q1 = graph.Reshape(%q0, %sq) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q2 = graph.Transpose(%q1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %k0 = graph.Linear(%h, %wk) : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %k1 = graph.Reshape(%k0, %skv) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %k2 = graph.Transpose(%k1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %v0 = graph.Linear(%h, %wv) : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %v1 = graph.Reshape(%v0, %skv) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %v2 = graph.Transpose(%v1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %q3 = graph.Rope(%q2, %pos) {theta = 1.000000e+04 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %k3 = graph.Rope(%k2, %pos) {theta = 1.000000e+04 : f64} : (tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %a = graph.Attention(%q3, %k3, %v2) {causal = 1 : i64, scale = 2.500000e-01 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  %o1 = graph.Transpose(%a) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x?x16xf32>) -> tensor<?x?x4x16xf32>
  %o2 = graph.Reshape(%o1, %sm) : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %l = graph.Linear(%o2, %wlm) : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
  graph.output %l {names = ["logits"]} : tensor<?x?x128xf32>
}

// -----

// Negative: bidirectional attention has no paged decode form.
graph.graph attributes {input_names = ["input_ids", "position_ids", "h"], source = "bidirectional", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %h: tensor<?x?x64xf32>):
  %wq = graph.weight "q_proj" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wk = graph.weight "k_proj" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wv = graph.weight "v_proj" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wlm = graph.weight "lm_head" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %sq = graph.constant "sq" dense<[0, 0, 4, 16]> : tensor<4xi64> : tensor<4xi64>
  %skv = graph.constant "skv" dense<[0, 0, 2, 16]> : tensor<4xi64> : tensor<4xi64>
  %sm = graph.constant "sm" dense<[0, 0, 64]> : tensor<3xi64> : tensor<3xi64>
  %q0 = graph.Linear(%h, %wq) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %q1 = graph.Reshape(%q0, %sq) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q2 = graph.Transpose(%q1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %k0 = graph.Linear(%h, %wk) : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %k1 = graph.Reshape(%k0, %skv) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %k2 = graph.Transpose(%k1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %v0 = graph.Linear(%h, %wv) : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %v1 = graph.Reshape(%v0, %skv) : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x2x16xf32>
  %v2 = graph.Transpose(%v1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %q3 = graph.Rope(%q2, %pos) {theta = 1.000000e+04 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %k3 = graph.Rope(%k2, %pos) {theta = 1.000000e+04 : f64} : (tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  // expected-error @+1 {{layer 0: attention cannot be paged: it is not causal}}
  %a = graph.Attention(%q3, %k3, %v2) {causal = 0 : i64, scale = 2.500000e-01 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
  %o1 = graph.Transpose(%a) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x?x16xf32>) -> tensor<?x?x4x16xf32>
  %o2 = graph.Reshape(%o1, %sm) : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %l = graph.Linear(%o2, %wlm) : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
  graph.output %l {names = ["logits"]} : tensor<?x?x128xf32>
}
