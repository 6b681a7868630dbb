// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// ONNX opset 23's LLM ops as torch's exporter writes them at opset 23 for
// tiny-llama (models/testdata/tiny-llama/decoder_with_past_opset23.onnx).

// RMSNormalization over the last axis with a 1-D scale.
// CHECK-LABEL: source = "rmsnormalization"
// CHECK: %[[N:.*]] = graph.RMSNorm(%arg0, %{{.*}}) {eps = 9.99999974{{.*}}E-6 : f64}
// CHECK: graph.output %[[N]]
graph.graph attributes {input_names = ["x"], source = "rmsnormalization", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32>):
  %w = graph.weight "w" at "w.bin"[0, 256] : tensor<64xf32>
  %0 = graph.RMSNormalization(%x, %w) {axis = -1 : i64, epsilon = 9.9999997473787516E-6 : f64, stash_type = 1 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  graph.output %0 {names = ["y"]} : tensor<?x?x64xf32>
}

// -----

// Negative: normalized over the last two axes (scale [S, 64]) is not RMSNorm.
// CHECK-LABEL: source = "rmsnormalization-two-axes"
// CHECK-NOT: graph.RMSNorm
// CHECK: graph.RMSNormalization
graph.graph attributes {input_names = ["x"], source = "rmsnormalization-two-axes", meta = "{}"} {
^bb0(%x: tensor<2x3x64xf32>):
  %w = graph.weight "w" at "w.bin"[0, 768] : tensor<3x64xf32>
  %0 = graph.RMSNormalization(%x, %w) {axis = -2 : i64, epsilon = 1.0E-5 : f64} : (tensor<2x3x64xf32>, tensor<3x64xf32>) -> tensor<2x3x64xf32>
  graph.output %0 {names = ["y"]} : tensor<2x3x64xf32>
}

// -----

// RotaryEmbedding with cos/sin [B, S, D/2] = Cos/Sin(position_ids * inv_freq):
// Rope at position_ids, theta recovered by evaluating the angle table.
// CHECK-LABEL: source = "rotary"
// CHECK: %[[R:.*]] = graph.Rope(%arg0, %arg1) {theta = 1.000000e+04 : f64}
// CHECK-NOT: graph.RotaryEmbedding
// CHECK: graph.output %[[R]]
graph.graph attributes {input_names = ["x", "position_ids"], source = "rotary", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "val_24" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "mul_35" dense<[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]> : tensor<8xf32> : tensor<8xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = graph.Cos(%2) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %4 = graph.Sin(%2) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %5 = graph.RotaryEmbedding(%x, %3, %4) {interleaved = 0 : i64, num_heads = 4 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x4x?x16xf32>
  graph.output %5 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Negative: interleaved pairs (GPT-J style) are not rotate-half RoPE.
// CHECK-LABEL: source = "rotary-interleaved"
// CHECK-NOT: graph.Rope
// CHECK: graph.RotaryEmbedding
graph.graph attributes {input_names = ["x", "position_ids"], source = "rotary-interleaved", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "val_24" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "mul_35" dense<[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]> : tensor<8xf32> : tensor<8xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = graph.Cos(%2) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %4 = graph.Sin(%2) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %5 = graph.RotaryEmbedding(%x, %3, %4) {interleaved = 1 : i64, num_heads = 4 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x4x?x16xf32>
  graph.output %5 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Attention-23 over past + new K/V (2 KV heads for 4 query heads) with the
// bool mask the export builds from attention_mask and position_ids: the mask
// evaluates to causal + padding, the present outputs are the Concats.
// CHECK-LABEL: source = "attention23"
// CHECK: %[[K:.*]] = graph.Concat(%arg3, %arg6) {axis = 2 : i64}
// CHECK: %[[V:.*]] = graph.Concat(%arg4, %arg7) {axis = 2 : i64}
// CHECK: %[[A:.*]] = graph.Attention(%arg5, %[[K]], %[[V]], %arg1) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, mask = "causal+padding", scale = 2.500000e-01 : f64}
// CHECK-NOT: graph.onnx.Attention
// CHECK: graph.output %[[A]], %[[K]], %[[V]]
graph.graph attributes {input_names = ["input_ids", "attention_mask", "position_ids", "past_key_values.0.key", "past_key_values.0.value", "q", "k", "v"], source = "attention23", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %am: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %pk: tensor<?x2x?x16xf32>, %pv: tensor<?x2x?x16xf32>, %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>):
  %one = graph.constant "val_134" dense<1> : tensor<i64> : tensor<i64>
  %last = graph.constant "val_136" dense<-1> : tensor<i64> : tensor<i64>
  %ax12 = graph.constant "val_328" dense<[1, 2]> : tensor<2xi64> : tensor<2xi64>
  %ax1 = graph.constant "val_56" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %ax3 = graph.constant "val_77" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %0 = graph.Shape(%am) : (tensor<?x?xi64>) -> tensor<2xi64>
  %1 = graph.Expand(%one, %0) : (tensor<i64>, tensor<2xi64>) -> tensor<?x?xi64>
  %2 = graph.CumSum(%1, %last) {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %3 = graph.Sub(%2, %one) : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %4 = graph.Unsqueeze(%3, %ax12) : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %5 = graph.Unsqueeze(%pos, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %6 = graph.Unsqueeze(%5, %ax3) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x?x1xi64>
  %7 = graph.LessOrEqual(%4, %6) : (tensor<?x1x1x?xi64>, tensor<?x1x?x1xi64>) -> tensor<?x1x?x?xi1>
  %8 = graph.Unsqueeze(%am, %ax12) : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %9 = graph.Cast(%8) {to = "bool"} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %mask = graph.And(%7, %9) : (tensor<?x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %y:3 = graph.onnx.Attention(%q, %k, %v, %mask, %pk, %pv) {is_causal = 0 : i64, qk_matmul_output_mode = 0 : i64, softcap = 0.0 : f64} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x?x?xi1>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  graph.output %y#0, %y#1, %y#2 {names = ["o", "present.0.key", "present.0.value"]} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// is_causal without a mask, queries and keys the same sequence "s": causal.
// CHECK-LABEL: source = "attention23-causal"
// CHECK: graph.Attention(%arg0, %arg1, %arg2) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 4 : i64, mask = "causal", scale = 2.500000e-01 : f64}
graph.graph attributes {input_names = ["q", "k", "v"], source = "attention23-causal", meta = "{}"} {
^bb0(%q: tensor<1x4x?x16xf32, ["", "", "s", ""]>, %k: tensor<1x4x?x16xf32, ["", "", "s", ""]>, %v: tensor<1x4x?x16xf32, ["", "", "s", ""]>):
  %y = graph.onnx.Attention(%q, %k, %v) {is_causal = 1 : i64} : (tensor<1x4x?x16xf32, ["", "", "s", ""]>, tensor<1x4x?x16xf32, ["", "", "s", ""]>, tensor<1x4x?x16xf32, ["", "", "s", ""]>) -> tensor<1x4x?x16xf32, ["", "", "s", ""]>
  graph.output %y {names = ["o"]} : tensor<1x4x?x16xf32, ["", "", "s", ""]>
}

// -----

// Negative: is_causal with keys of another length (the spec's top-left
// triangle differs from strata's bottom-right one), and a softcap.
// CHECK-LABEL: source = "attention23-negative"
// CHECK-NOT: graph.Attention
// CHECK: graph.onnx.Attention
// CHECK: graph.onnx.Attention
graph.graph attributes {input_names = ["q", "k", "v"], source = "attention23-negative", meta = "{}"} {
^bb0(%q: tensor<1x4x?x16xf32, ["", "", "s", ""]>, %k: tensor<1x4x?x16xf32, ["", "", "t", ""]>, %v: tensor<1x4x?x16xf32, ["", "", "t", ""]>):
  %y = graph.onnx.Attention(%q, %k, %v) {is_causal = 1 : i64} : (tensor<1x4x?x16xf32, ["", "", "s", ""]>, tensor<1x4x?x16xf32, ["", "", "t", ""]>, tensor<1x4x?x16xf32, ["", "", "t", ""]>) -> tensor<1x4x?x16xf32>
  %z = graph.onnx.Attention(%q, %q, %q) {softcap = 30.0 : f64} : (tensor<1x4x?x16xf32, ["", "", "s", ""]>, tensor<1x4x?x16xf32, ["", "", "s", ""]>, tensor<1x4x?x16xf32, ["", "", "s", ""]>) -> tensor<1x4x?x16xf32>
  graph.output %y, %z {names = ["o", "p"]} : tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>
}
