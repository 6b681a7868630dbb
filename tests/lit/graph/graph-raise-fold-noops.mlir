// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// TorchScript's Identity of a shared initializer and Cast to the value's own
// type fold away, so RMSNorm sees its weight and its normalized operand.
// CHECK-LABEL: source = "identity-cast"
// CHECK: %[[W:.*]] = graph.weight "norm"
// CHECK: %[[N:.*]] = graph.RMSNorm(%arg0, %[[W]])
// CHECK-NOT: graph.Identity
// CHECK-NOT: graph.Cast
// CHECK: graph.output %[[N]]
graph.graph attributes {input_names = ["x"], source = "identity-cast", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32>):
  %w0 = graph.weight "norm" at "/m.onnx" [0, 256] : tensor<64xf32>
  %w = graph.Identity(%w0) : (tensor<64xf32>) -> tensor<64xf32>
  %two = graph.constant "two" dense<2.0> : tensor<f32> : tensor<f32>
  %eps = graph.constant "eps" dense<1.0e-05> : tensor<f32> : tensor<f32>
  %one = graph.constant "one" dense<1.0> : tensor<f32> : tensor<f32>
  %xc = graph.Cast(%x) {to = "f32"} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %0 = graph.Pow(%xc, %two) : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<?x?x64xf32>
  %1 = graph.ReduceMean(%0) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  %2 = graph.Add(%1, %eps) : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %3 = graph.Sqrt(%2) : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %4 = graph.Div(%one, %3) : (tensor<f32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %5 = graph.Mul(%xc, %4) : (tensor<?x?x64xf32>, tensor<?x?x1xf32>) -> tensor<?x?x64xf32>
  %6 = graph.Cast(%5) {to = "f32"} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %7 = graph.Mul(%w, %6) : (tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  graph.output %7 {names = ["y"]} : tensor<?x?x64xf32>
}

// -----

// Negative: a Cast that changes the element type stays.
// CHECK-LABEL: source = "real-cast"
// CHECK: graph.Cast
graph.graph attributes {input_names = ["ids"], source = "real-cast", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>):
  %0 = graph.Cast(%ids) {to = "f32"} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  graph.output %0 {names = ["y"]} : tensor<?x?xf32>
}

// -----

// A Reshape whose result provably has its operand's dims (each the same
// static size or the same named symbol) folds away; one that only might
// (unnamed dynamic dims) stays.
// CHECK-LABEL: source = "identity-reshape"
// CHECK: %[[R:.*]] = graph.Reshape(%arg1
// CHECK-NOT: graph.Reshape
// CHECK: graph.output %arg0, %[[R]]
graph.graph attributes {input_names = ["x", "y"], source = "identity-reshape", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32, ["", "sequence", ""]>, %y: tensor<?x?x64xf32>):
  %s = graph.constant "s" dense<[1, -1, 64]> : tensor<3xi64> : tensor<3xi64>
  %t = graph.constant "t" dense<[0, 0, 64]> : tensor<3xi64> : tensor<3xi64>
  %0 = graph.Reshape(%x, %s) : (tensor<1x?x64xf32, ["", "sequence", ""]>, tensor<3xi64>) -> tensor<1x?x64xf32, ["", "sequence", ""]>
  %1 = graph.Reshape(%y, %t) : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  graph.output %0, %1 {names = ["a", "b"]} : tensor<1x?x64xf32, ["", "sequence", ""]>, tensor<?x?x64xf32>
}
