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

// -----

// GPT-2 as dynamo writes it: learned position embeddings gathered at
// Range(0, S) (-> the new position_ids input), q / k / v split from one
// fused projection, no RoPE, and the head merge's Transpose also read by a
// MakeShape (only its dims). The paged form's id inputs get a batch of 1.
// CHECK-LABEL: graph.graph attributes {input_names = ["input_ids", "position_ids", "seq_starts", "context_lens", "block_tables", "slot_mapping", "logits_indices", "kv_cache.0"]
// CHECK: ^bb0(%arg0: tensor<1x?xi64, ["", "sequence"]>, %arg1: tensor<1x?xi64, ["", "sequence"]>
// CHECK: graph.Gather(%{{.*}}, %arg1) {axis = 0 : i64}
// CHECK: %[[S:.*]]:3 = graph.Split
// CHECK: %[[C:.*]] = graph.region.kv_write(%arg7, %[[S]]#1, %[[S]]#2, %arg5) {layer = 0 : i64}
// CHECK: graph.region.paged_attention(%[[S]]#0, %[[C]], %arg4, %arg2, %arg3) {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 4 : i64, layer = 0 : i64, scale = 2.500000e-01 : f64}
// CHECK-NOT: graph.Attention
// CHECK-NOT: graph.Range
graph.graph attributes {input_names = ["input_ids"], source = "gpt2", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64, ["batch", "sequence"]>):
  %wte = graph.weight "wte" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %wpe = graph.weight "wpe" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %wqkv = graph.weight "c_attn" at "/m.bin" [0, 49152] : tensor<64x192xf32>
  %zero = graph.constant "zero" dense<0> : tensor<i64> : tensor<i64>
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %ax0 = graph.constant "ax0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %sh = graph.constant "sh" dense<[0, 0, 4, 16]> : tensor<4xi64> : tensor<4xi64>
  %n = graph.MakeShape(%ids) {dims = [{c = 0 : i64, terms = [array<i64: 0, 1, 1>]}], scalar = true} : (tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<i64>
  %r = graph.Range(%zero, %n, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, ["sequence"]>
  %p = graph.Unsqueeze(%r, %ax0) : (tensor<?xi64, ["sequence"]>, tensor<1xi64>) -> tensor<1x?xi64, ["", "sequence"]>
  %te = graph.Gather(%wte, %ids) {axis = 0 : i64} : (tensor<128x64xf32>, tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<?x?x64xf32, ["batch", "sequence", ""]>
  %pe = graph.Gather(%wpe, %p) {axis = 0 : i64} : (tensor<32x64xf32>, tensor<1x?xi64, ["", "sequence"]>) -> tensor<1x?x64xf32, ["", "sequence", ""]>
  %h = graph.Add(%te, %pe) : (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<1x?x64xf32, ["", "sequence", ""]>) -> tensor<?x?x64xf32, ["batch", "sequence", ""]>
  %qkv = graph.MatMul(%h, %wqkv) : (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<64x192xf32>) -> tensor<?x?x192xf32, ["batch", "sequence", ""]>
  %s:3 = graph.Split(%qkv) {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x?x192xf32, ["batch", "sequence", ""]>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  %q1 = graph.Reshape(%s#0, %sh) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q2 = graph.Transpose(%q1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %k1 = graph.Reshape(%s#1, %sh) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %k2 = graph.Transpose(%k1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %v1 = graph.Reshape(%s#2, %sh) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %v2 = graph.Transpose(%v1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %a = graph.Attention(%q2, %k2, %v2) {causal = 1 : i64, scale = 2.500000e-01 : f64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %o1 = graph.Transpose(%a) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x?x16xf32>) -> tensor<?x?x4x16xf32>
  %m = graph.MakeShape(%o1) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 0, 1, 1>]}, 64]} : (tensor<?x?x4x16xf32>) -> tensor<3xi64>
  %o2 = graph.Reshape(%o1, %m) : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %l = graph.Linear(%o2, %wte) : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
  graph.output %l {names = ["logits"]} : tensor<?x?x128xf32>
}

// -----

// Partial rotary: the Rope's rotary_dim goes on the region.rope of q and k.
// CHECK-LABEL: source = "partial-rotary"
// CHECK: graph.region.rope(%{{.*}}, %arg1) {head_dim = 16 : i64, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK: graph.region.rope(%{{.*}}, %arg1) {head_dim = 16 : i64, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
graph.graph attributes {input_names = ["input_ids", "position_ids", "h"], source = "partial-rotary", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %h: tensor<?x?x64xf32>):
  %wq = graph.weight "q_proj" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wk = graph.weight "k_proj" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wv = graph.weight "v_proj" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %wlm = graph.weight "lm_head" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %sq = graph.constant "sq" dense<[0, 0, 4, 16]> : tensor<4xi64> : tensor<4xi64>
  %sm = graph.constant "sm" dense<[0, 0, 64]> : tensor<3xi64> : tensor<3xi64>
  %q0 = graph.Linear(%h, %wq) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %q1 = graph.Reshape(%q0, %sq) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q2 = graph.Transpose(%q1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %k0 = graph.Linear(%h, %wk) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %k1 = graph.Reshape(%k0, %sq) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %k2 = graph.Transpose(%k1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %v0 = graph.Linear(%h, %wv) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %v1 = graph.Reshape(%v0, %sq) : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %v2 = graph.Transpose(%v1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %q3 = graph.Rope(%q2, %pos) {rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %k3 = graph.Rope(%k2, %pos) {rotary_dim = 8 : i64, theta = 1.000000e+04 : f64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %a = graph.Attention(%q3, %k3, %v2) {causal = 1 : i64, scale = 2.500000e-01 : f64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %o1 = graph.Transpose(%a) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x?x16xf32>) -> tensor<?x?x4x16xf32>
  %o2 = graph.Reshape(%o1, %sm) : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %l = graph.Linear(%o2, %wlm) : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
  graph.output %l {names = ["logits"]} : tensor<?x?x128xf32>
}
