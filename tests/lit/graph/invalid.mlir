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
  // expected-error @+1 {{interleaved_rope_heads 3 does not split 8 rows into heads of an even size}}
  %w = graph.weight "w" at "/m.gguf" [0, 64] {interleaved_rope_heads = 3 : i64} : tensor<8x2xf32>
  graph.output %w {names = ["w"]} : tensor<8x2xf32>
}

// -----

graph.graph attributes {input_names = [], source = "t", meta = "{}"} {
  // expected-error @+1 {{quant 'Q3_X' is not a known block format}}
  %w = graph.weight "w" at "/m.gguf" [0, 34] {quant = "Q3_X"} : tensor<1x32xf32>
  graph.output %w {names = ["w"]} : tensor<1x32xf32>
}

// -----

graph.graph attributes {input_names = [], source = "t", meta = "{}"} {
  // expected-error @+1 {{quant Q8_0 needs f32 values in rows of whole blocks of 32}}
  %w = graph.weight "w" at "/m.gguf" [0, 34] {quant = "Q8_0"} : tensor<2x16xf32>
  graph.output %w {names = ["w"]} : tensor<2x16xf32>
}

// -----

graph.graph attributes {input_names = [], source = "t", meta = "{}"} {
  // expected-error @+1 {{records 32 bytes but 'tensor<2x32xf32>' needs 68}}
  %w = graph.weight "w" at "/m.gguf" [0, 32] {quant = "Q8_0"} : tensor<2x32xf32>
  graph.output %w {names = ["w"]} : tensor<2x32xf32>
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

// -----

graph.graph attributes {input_names = ["c", "q"], source = "t", meta = "{}"} {
^bb0(%c: tensor<4x2x2x16x16xf32>, %q: tensor<1x3x32xf32>):
  // expected-error @+1 {{'graph.region.rope_kv_write' op takes 6 inputs, got 5}}
  %0:2 = graph.region.rope_kv_write(%q, %q, %q, %q, %c) : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<4x2x2x16x16xf32>) -> (tensor<1x3x32xf32>, tensor<4x2x2x16x16xf32>)
  graph.output %0#1 {names = ["c"]} : tensor<4x2x2x16x16xf32>
}
