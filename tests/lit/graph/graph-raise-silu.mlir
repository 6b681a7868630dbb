// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// x * Sigmoid(x), as both exporters write the Llama MLP's activation.
// CHECK-LABEL: source = "silu"
// CHECK: %[[S:.*]] = graph.Silu(%arg0)
// CHECK-NOT: graph.Sigmoid
// CHECK: graph.output %[[S]]
graph.graph attributes {input_names = ["x"], source = "silu", meta = "{}"} {
^bb0(%x: tensor<1x?x176xf32>):
  %0 = graph.Sigmoid(%x) : (tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  %1 = graph.Mul(%x, %0) : (tensor<1x?x176xf32>, tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  graph.output %1 {names = ["y"]} : tensor<1x?x176xf32>
}

// -----

// Negative: the sigmoid is of another value (a gate, not SiLU).
// CHECK-LABEL: source = "gate"
// CHECK-NOT: graph.Silu
// CHECK: graph.Sigmoid
graph.graph attributes {input_names = ["x", "g"], source = "gate", meta = "{}"} {
^bb0(%x: tensor<4xf32>, %g: tensor<4xf32>):
  %0 = graph.Sigmoid(%g) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.Mul(%x, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.output %1 {names = ["y"]} : tensor<4xf32>
}
