// RUN: strata-opt %s --graph-dce -split-input-file | FileCheck %s

// A dead chain (and the weight only it reads) goes; live nodes stay.
// CHECK-LABEL: source = "dce"
// CHECK-NOT: "unused"
// CHECK-NOT: graph.Sqrt
// CHECK: graph.Neg
// CHECK: graph.output
graph.graph attributes {input_names = ["x"], source = "dce", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  %w = graph.weight "unused" at "/m.bin" [0, 16] : tensor<4xf32>
  %a = graph.Add(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.Sqrt(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %n = graph.Neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  graph.output %n {names = ["n"]} : tensor<4xf32>
}

// -----

// Negative: everything reaches the output, nothing is removed.
// CHECK-LABEL: source = "live"
// CHECK: graph.weight "w"
// CHECK: graph.Add
// CHECK: graph.Sqrt
graph.graph attributes {input_names = ["x"], source = "live", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  %w = graph.weight "w" at "/m.bin" [0, 16] : tensor<4xf32>
  %a = graph.Add(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.Sqrt(%a) : (tensor<4xf32>) -> tensor<4xf32>
  graph.output %b {names = ["b"]} : tensor<4xf32>
}
