// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// The TorchScript exporter's RMSNorm (tiny-llama decoder_with_past.onnx):
// w * (x * Div(1, Sqrt(ReduceMean(Pow(x, 2)) + eps))).
// CHECK-LABEL: source = "torchscript"
// CHECK: %[[N:.*]] = graph.RMSNorm(%arg0, %{{.*}}) {eps = 9.99999974{{[0-9]*}}E-6 : f64}
// CHECK-NOT: graph.Pow
// CHECK: graph.output %[[N]]
graph.graph attributes {input_names = ["x"], source = "torchscript", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %two = graph.constant "two" dense<2.0> : tensor<f32> : tensor<f32>
  %eps = graph.constant "eps" dense<9.99999974E-6> : tensor<f32> : tensor<f32>
  %one = graph.constant "one" dense<1.0> : tensor<f32> : tensor<f32>
  %0 = graph.Pow(%x, %two) : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %1 = graph.ReduceMean(%0) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1x?x1xf32>
  %2 = graph.Add(%1, %eps) : (tensor<1x?x1xf32>, tensor<f32>) -> tensor<1x?x1xf32>
  %3 = graph.Sqrt(%2) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %4 = graph.Div(%one, %3) : (tensor<f32>, tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %5 = graph.Mul(%x, %4) : (tensor<1x?x64xf32>, tensor<1x?x1xf32>) -> tensor<1x?x64xf32>
  %6 = graph.Mul(%w, %5) : (tensor<64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  graph.output %6 {names = ["y"]} : tensor<1x?x64xf32>
}

// -----

// The dynamo exporter's form: axes as an operand, Reciprocal, weight second.
// CHECK-LABEL: source = "dynamo"
// CHECK: graph.RMSNorm(%arg0, %{{.*}}) {eps = 9.99999974{{[0-9]*}}E-6 : f64}
graph.graph attributes {input_names = ["x"], source = "dynamo", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %two = graph.constant "two" dense<2.0> : tensor<f32> : tensor<f32>
  %eps = graph.constant "eps" dense<1.0e-5> : tensor<f32> : tensor<f32>
  %axes = graph.constant "axes" dense<[-1]> : tensor<1xi64> : tensor<1xi64>
  %0 = graph.Pow(%x, %two) : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %1 = graph.ReduceMean(%0, %axes) {keepdims = 1 : i64} : (tensor<1x?x64xf32>, tensor<1xi64>) -> tensor<1x?x1xf32>
  %2 = graph.Add(%eps, %1) : (tensor<f32>, tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %3 = graph.Sqrt(%2) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %4 = graph.Reciprocal(%3) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %5 = graph.Mul(%4, %x) : (tensor<1x?x1xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %6 = graph.Mul(%5, %w) : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  graph.output %6 {names = ["y"]} : tensor<1x?x64xf32>
}

// -----

// Negative: the mean is over the sequence axis, not the features.
// CHECK-LABEL: source = "wrong-axis"
// CHECK-NOT: graph.RMSNorm
// CHECK: graph.ReduceMean
graph.graph attributes {input_names = ["x"], source = "wrong-axis", meta = "{}"} {
^bb0(%x: tensor<1x8x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %two = graph.constant "two" dense<2.0> : tensor<f32> : tensor<f32>
  %eps = graph.constant "eps" dense<1.0e-5> : tensor<f32> : tensor<f32>
  %0 = graph.Pow(%x, %two) : (tensor<1x8x64xf32>, tensor<f32>) -> tensor<1x8x64xf32>
  %1 = graph.ReduceMean(%0) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x8x64xf32>) -> tensor<1x1x64xf32>
  %2 = graph.Add(%1, %eps) : (tensor<1x1x64xf32>, tensor<f32>) -> tensor<1x1x64xf32>
  %3 = graph.Sqrt(%2) : (tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
  %4 = graph.Reciprocal(%3) : (tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
  %5 = graph.Mul(%x, %4) : (tensor<1x8x64xf32>, tensor<1x1x64xf32>) -> tensor<1x8x64xf32>
  %6 = graph.Mul(%w, %5) : (tensor<64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  graph.output %6 {names = ["y"]} : tensor<1x8x64xf32>
}

// -----

// Negative: the square is a cube (Pow 3).
// CHECK-LABEL: source = "cube"
// CHECK-NOT: graph.RMSNorm
graph.graph attributes {input_names = ["x"], source = "cube", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %three = graph.constant "three" dense<3.0> : tensor<f32> : tensor<f32>
  %eps = graph.constant "eps" dense<1.0e-5> : tensor<f32> : tensor<f32>
  %0 = graph.Pow(%x, %three) : (tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
  %1 = graph.ReduceMean(%0) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1x?x1xf32>
  %2 = graph.Add(%1, %eps) : (tensor<1x?x1xf32>, tensor<f32>) -> tensor<1x?x1xf32>
  %3 = graph.Sqrt(%2) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %4 = graph.Reciprocal(%3) : (tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  %5 = graph.Mul(%x, %4) : (tensor<1x?x64xf32>, tensor<1x?x1xf32>) -> tensor<1x?x64xf32>
  %6 = graph.Mul(%w, %5) : (tensor<64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  graph.output %6 {names = ["y"]} : tensor<1x?x64xf32>
}

// -----

// onnxruntime's fused form over the last axis (explicit and default axis,
// default epsilon).
// CHECK-LABEL: source = "ort-fused"
// CHECK: %[[A:.*]] = graph.RMSNorm(%arg0, %{{.*}}) {eps = 9.99999997{{[0-9]*}}E-7 : f64}
// CHECK: %[[B:.*]] = graph.RMSNorm(%[[A]], %{{.*}}) {eps = 1.000000e-05 : f64}
// CHECK-NOT: graph.SimplifiedLayerNormalization
graph.graph attributes {input_names = ["x"], source = "ort-fused", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %0 = graph.SimplifiedLayerNormalization(%x, %w) {axis = -1 : i64, epsilon = 9.99999997E-7 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %1 = graph.SimplifiedLayerNormalization(%0, %w) {axis = 2 : i64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  graph.output %1 {names = ["y"]} : tensor<1x?x64xf32>
}

// -----

// Negative: normalizing over the last two axes is not an RMSNorm over the
// hidden size; it stays (and runs with its reference kernel).
// CHECK-LABEL: source = "ort-two-axes"
// CHECK-NOT: graph.RMSNorm
// CHECK: graph.SimplifiedLayerNormalization
graph.graph attributes {input_names = ["x"], source = "ort-two-axes", meta = "{}"} {
^bb0(%x: tensor<1x4x64xf32>):
  %w = graph.weight "norm.weight" at "/m.bin" [0, 1024] : tensor<4x64xf32>
  %0 = graph.SimplifiedLayerNormalization(%x, %w) {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<1x4x64xf32>, tensor<4x64xf32>) -> tensor<1x4x64xf32>
  graph.output %0 {names = ["y"]} : tensor<1x4x64xf32>
}
