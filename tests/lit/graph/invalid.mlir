// RUN: strata-opt %s -split-input-file -verify-diagnostics

graph.graph attributes {input_names = ["x"], source = "t", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  // expected-error @+1 {{'graph.Add' op takes 2 inputs, got 1}}
  %a = graph.Add(%x) : (tensor<4xf32>) -> tensor<4xf32>
  graph.output %a {names = ["a"]} : tensor<4xf32>
}

// -----

graph.graph attributes {input_names = ["x"], source = "t", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  // expected-error @+1 {{'graph.Concat' op takes at least 1 inputs, got 0}}
  %a = graph.Concat() {axis = 0 : i64} : () -> tensor<4xf32>
  graph.output %a {names = ["a"]} : tensor<4xf32>
}

// -----

graph.graph attributes {input_names = ["x"], source = "t", meta = "{}"} {
^bb0(%x: tensor<?xf32>):
  // expected-error @+1 {{tensor encoding must list one dim symbol per dim}}
  %a = graph.Neg(%x) : (tensor<?xf32>) -> tensor<?xf32, ["n", "m"]>
  graph.output %a {names = ["a"]} : tensor<?xf32, ["n", "m"]>
}

// -----

graph.graph attributes {input_names = ["x"], source = "t", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  // expected-error @+1 {{static dim 0 of 'tensor<4xf32, ["n"]>' cannot carry symbol 'n'}}
  %a = graph.Neg(%x) : (tensor<4xf32>) -> tensor<4xf32, ["n"]>
  graph.output %a {names = ["a"]} : tensor<4xf32, ["n"]>
}

// -----

graph.graph attributes {input_names = [], source = "t", meta = "{}"} {
  // expected-error @+1 {{records 15 bytes but 'tensor<4xf32>' needs 16}}
  %w = graph.weight "w" at "/m.bin" [0, 15] : tensor<4xf32>
  graph.output %w {names = ["w"]} : tensor<4xf32>
}

// -----

graph.graph attributes {input_names = [], source = "t", meta = "{}"} {
  // expected-error @+1 {{does not match result type}}
  %c = graph.constant "c" dense<[1, 2]> : tensor<2xi64> : tensor<3xi64>
  graph.output %c {names = ["c"]} : tensor<3xi64>
}

// -----

graph.graph attributes {input_names = ["x"], source = "t", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  // expected-error @+1 {{names 2 outputs but returns 1}}
  graph.output %x {names = ["a", "b"]} : tensor<4xf32>
}

// -----

// expected-error @+1 {{names 2 inputs but has 1}}
graph.graph attributes {input_names = ["x", "y"], source = "t", meta = "{}"} {
^bb0(%x: tensor<4xf32>):
  graph.output %x {names = ["a"]} : tensor<4xf32>
}

// -----

graph.graph attributes {input_names = ["c", "k"], source = "t", meta = "{}"} {
^bb0(%c: tensor<4x2x2x16x16xf32>, %k: tensor<1x3x32xf32>):
  // expected-error @+1 {{'graph.region.kv_write' op takes 4 inputs, got 3}}
  %0 = graph.region.kv_write(%c, %k, %k) : (tensor<4x2x2x16x16xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>) -> tensor<4x2x2x16x16xf32>
  graph.output %0 {names = ["c"]} : tensor<4x2x2x16x16xf32>
}

// -----

graph.graph attributes {input_names = ["q"], source = "t", meta = "{}"} {
^bb0(%q: tensor<1x2x64xf32>):
  // expected-error @+1 {{'graph.com.microsoft.GroupQueryAttention' op takes 7 to 12 inputs, got 3}}
  %a = graph.com.microsoft.GroupQueryAttention(%q, %q, %q) {num_heads = 4 : i64, kv_num_heads = 2 : i64} : (tensor<1x2x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) -> tensor<1x2x64xf32>
  graph.output %a {names = ["a"]} : tensor<1x2x64xf32>
}

// -----

graph.graph attributes {input_names = ["q"], source = "t", meta = "{}"} {
^bb0(%q: tensor<1x4x2x16xf32>):
  // expected-error @+1 {{'graph.onnx.Attention' op takes 3 to 6 inputs, got 2}}
  %a = graph.onnx.Attention(%q, %q) : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>) -> tensor<1x4x2x16xf32>
  graph.output %a {names = ["a"]} : tensor<1x4x2x16xf32>
}
