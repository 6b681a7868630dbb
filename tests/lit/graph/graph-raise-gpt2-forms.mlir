// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// GPT-2's forms: the Conv1D around ONNX's 2-D Gemm, and GELU's tanh form.

// GPT-2's Conv1D as dynamo exports it: rows flattened to [-1, K], ONNX's 2-D
// Gemm with an [in, out] weight and a bias, then back to [B, S, N]. It
// becomes a MatMul on the rank-3 rows plus the bias, and the outer Reshape
// goes (it restores what the MatMul already has).
// CHECK-LABEL: source = "conv1d"
// CHECK: %[[W:.*]] = graph.weight "c_attn.weight"
// CHECK: %[[B:.*]] = graph.weight "c_attn.bias"
// CHECK: %[[M:.*]] = graph.MatMul(%arg0, %[[W]]) : (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<64x192xf32>) -> tensor<?x?x192xf32, ["batch", "sequence", ""]>
// CHECK: %[[A:.*]] = graph.Add(%[[M]], %[[B]])
// CHECK-NOT: graph.Gemm
// CHECK: graph.output %[[A]]
graph.graph attributes {input_names = ["x"], source = "conv1d", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32, ["batch", "sequence", ""]>):
  %w = graph.weight "c_attn.weight" at "/m.onnx" [0, 49152] : tensor<64x192xf32>
  %b = graph.weight "c_attn.bias" at "/m.onnx" [49152, 768] : tensor<192xf32>
  %flat = graph.constant "flat" dense<[-1, 64]> : tensor<2xi64> : tensor<2xi64>
  %s = graph.MakeShape(%x) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 0, 1, 1>]}, 192]} : (tensor<?x?x64xf32, ["batch", "sequence", ""]>) -> tensor<3xi64>
  %0 = graph.Reshape(%x, %flat) : (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<2xi64>) -> tensor<?x64xf32>
  %1 = graph.Gemm(%0, %w, %b) {alpha = 1.0 : f64, beta = 1.0 : f64, transA = 0 : i64, transB = 0 : i64} : (tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x192xf32>
  %2 = graph.Reshape(%1, %s) : (tensor<?x192xf32>, tensor<3xi64>) -> tensor<?x?x192xf32, ["batch", "sequence", ""]>
  graph.output %2 {names = ["y"]} : tensor<?x?x192xf32, ["batch", "sequence", ""]>
}

// -----

// The attention head merge flattened straight from [B, S, H, D] into the
// output projection, read transposed (transB): the rows are reshaped to
// [B, S, H D] (the merge region formation knows) and the projection is a
// Linear with the bias. An outer Reshape to a shape with a baked batch of 1
// stays.
// CHECK-LABEL: source = "head-merge-linear"
// CHECK: %[[R:.*]] = graph.Reshape(%arg0, %{{.*}}) : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
// CHECK: %[[L:.*]] = graph.Linear(%[[R]], %{{.*}}, %{{.*}}) : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK: %[[O:.*]] = graph.Reshape(%[[L]], %{{.*}}) {{.*}}-> tensor<1x?x32xf32>
// CHECK: graph.output %[[O]]
graph.graph attributes {input_names = ["o"], source = "head-merge-linear", meta = "{}"} {
^bb0(%o: tensor<?x?x4x16xf32>):
  %w = graph.weight "o_proj.weight" at "/m.onnx" [0, 8192] : tensor<32x64xf32>
  %b = graph.weight "o_proj.bias" at "/m.onnx" [8192, 128] : tensor<32xf32>
  %flat = graph.constant "flat" dense<[-1, 64]> : tensor<2xi64> : tensor<2xi64>
  %s = graph.constant "s" dense<[1, -1, 32]> : tensor<3xi64> : tensor<3xi64>
  %0 = graph.Reshape(%o, %flat) : (tensor<?x?x4x16xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %1 = graph.Gemm(%0, %w, %b) {transB = 1 : i64} : (tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %2 = graph.Reshape(%1, %s) : (tensor<?x32xf32>, tensor<3xi64>) -> tensor<1x?x32xf32>
  graph.output %2 {names = ["y"]} : tensor<1x?x32xf32>
}

// -----

// Negative: alpha != 1 scales the product; the Gemm stays.
// CHECK-LABEL: source = "scaled-gemm"
// CHECK: graph.Gemm
graph.graph attributes {input_names = ["x"], source = "scaled-gemm", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32>):
  %w = graph.weight "w" at "/m.onnx" [0, 16384] : tensor<64x64xf32>
  %flat = graph.constant "flat" dense<[-1, 64]> : tensor<2xi64> : tensor<2xi64>
  %s = graph.constant "s" dense<[0, 0, 64]> : tensor<3xi64> : tensor<3xi64>
  %0 = graph.Reshape(%x, %flat) : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %1 = graph.Gemm(%0, %w) {alpha = 2.0 : f64} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %2 = graph.Reshape(%1, %s) : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  graph.output %2 {names = ["y"]} : tensor<?x?x64xf32>
}

// -----

// GELU's tanh form as GPT-2's exports decompose it -> Gelu{tanh}.
// CHECK-LABEL: source = "gelu-tanh"
// CHECK: %[[G:.*]] = graph.Gelu(%arg0) {approximate = "tanh"}
// CHECK-NOT: graph.Tanh
// CHECK: graph.output %[[G]]
graph.graph attributes {input_names = ["x"], source = "gelu-tanh", meta = "{}"} {
^bb0(%x: tensor<?x?x256xf32>):
  %half = graph.constant "half" dense<5.000000e-01> : tensor<f32> : tensor<f32>
  %three = graph.constant "three" dense<3.000000e+00> : tensor<f32> : tensor<f32>
  %c0 = graph.constant "c0" dense<4.471500e-02> : tensor<f32> : tensor<f32>
  %c1 = graph.constant "c1" dense<0.797884583> : tensor<f32> : tensor<f32>
  %one = graph.constant "one" dense<1.000000e+00> : tensor<f32> : tensor<f32>
  %0 = graph.Mul(%x, %half) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %1 = graph.Pow(%x, %three) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %2 = graph.Mul(%1, %c0) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %3 = graph.Add(%x, %2) : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %4 = graph.Mul(%3, %c1) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %5 = graph.Tanh(%4) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %6 = graph.Add(%5, %one) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %7 = graph.Mul(%0, %6) : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  graph.output %7 {names = ["y"]} : tensor<?x?x256xf32>
}

// -----

// Negative: 0.05 instead of 0.044715 is not GELU.
// CHECK-LABEL: source = "not-gelu"
// CHECK: graph.Tanh
// CHECK-NOT: graph.Gelu
graph.graph attributes {input_names = ["x"], source = "not-gelu", meta = "{}"} {
^bb0(%x: tensor<?x?x256xf32>):
  %half = graph.constant "half" dense<5.000000e-01> : tensor<f32> : tensor<f32>
  %three = graph.constant "three" dense<3.000000e+00> : tensor<f32> : tensor<f32>
  %c0 = graph.constant "c0" dense<5.000000e-02> : tensor<f32> : tensor<f32>
  %c1 = graph.constant "c1" dense<0.797884583> : tensor<f32> : tensor<f32>
  %one = graph.constant "one" dense<1.000000e+00> : tensor<f32> : tensor<f32>
  %0 = graph.Mul(%x, %half) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %1 = graph.Pow(%x, %three) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %2 = graph.Mul(%1, %c0) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %3 = graph.Add(%x, %2) : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %4 = graph.Mul(%3, %c1) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %5 = graph.Tanh(%4) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %6 = graph.Add(%5, %one) : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %7 = graph.Mul(%0, %6) : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  graph.output %7 {names = ["y"]} : tensor<?x?x256xf32>
}
