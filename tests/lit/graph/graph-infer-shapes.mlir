// RUN: strata-opt %s --graph-infer-shapes -split-input-file | FileCheck %s

// Symbolic dims flow through a gather from an embedding table.
// CHECK-LABEL: source = "gather"
// CHECK: graph.Gather
// CHECK-SAME: -> tensor<?x?x64xf32, ["batch", "sequence", ""]>
// CHECK: graph.Shape
// CHECK-SAME: -> tensor<3xi64>
graph.graph attributes {input_names = ["input_ids"], source = "gather", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64, ["batch", "sequence"]>):
  %w = graph.weight "embed" at "/m.safetensors" [8, 2048] : tensor<8x64xf32>
  %e = graph.Gather(%w, %ids) {axis = 0 : i64} : (tensor<8x64xf32>, tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<*xf32>
  %s = graph.Shape(%e) : (tensor<*xf32>) -> tensor<*xf32>
  graph.output %e, %s {names = ["h", "s"]} : tensor<*xf32>, tensor<*xf32>
}

// -----

// Reshape by a constant with 0 (copy) and -1 (infer), then the strata ops of
// an attention block: Linear, Rope, Attention keep the symbolic dims.
// CHECK-LABEL: source = "attention"
// CHECK: graph.Linear
// CHECK-SAME: -> tensor<?x?x64xf32, ["batch", "sequence", ""]>
// CHECK: graph.Reshape
// CHECK-SAME: -> tensor<?x?x4x16xf32, ["batch", "sequence", "", ""]>
// CHECK: graph.Transpose
// CHECK-SAME: -> tensor<?x4x?x16xf32, ["batch", "", "sequence", ""]>
// CHECK: graph.Rope
// CHECK-SAME: -> tensor<?x4x?x16xf32, ["batch", "", "sequence", ""]>
// CHECK: graph.Attention
// CHECK-SAME: -> tensor<?x4x?x16xf32, ["batch", "", "sequence", ""]>
graph.graph attributes {input_names = ["x", "pos"], source = "attention", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32, ["batch", "sequence", ""]>, %pos: tensor<?x?xi64, ["batch", "sequence"]>):
  %w = graph.weight "wq" at "/m.safetensors" [0, 16384] : tensor<64x64xf32>
  %shape = graph.constant "heads" dense<[0, 0, 4, -1]> : tensor<4xi64> : tensor<4xi64>
  %q = graph.Linear(%x, %w) : (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<64x64xf32>) -> tensor<*xf32>
  %r = graph.Reshape(%q, %shape) : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  %t = graph.Transpose(%r) {perm = array<i64: 0, 2, 1, 3>} : (tensor<*xf32>) -> tensor<*xf32>
  %rq = graph.Rope(%t, %pos) {theta = 1.0e4 : f64} : (tensor<*xf32>, tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<*xf32>
  %a = graph.Attention(%rq, %rq, %rq) {scale = 0.25 : f64, causal = 1 : i64} : (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  graph.output %a {names = ["a"]} : tensor<*xf32>
}

// -----

// Broadcasting: a static dim wins over a symbol, 1 broadcasts, comparisons are i1.
// CHECK-LABEL: source = "broadcast"
// CHECK: graph.Add
// CHECK-SAME: -> tensor<4x?xf32, ["", "n"]>
// CHECK: graph.LessOrEqual
// CHECK-SAME: -> tensor<4x?xi1, ["", "n"]>
// CHECK: graph.MatMul
// CHECK-SAME: -> tensor<4x?x?xf32, ["", "n", "n"]>
graph.graph attributes {input_names = ["a", "b"], source = "broadcast", meta = "{}"} {
^bb0(%a: tensor<?x?xf32, ["m", "n"]>, %b: tensor<4x1xf32>):
  %s = graph.Add(%a, %b) : (tensor<?x?xf32, ["m", "n"]>, tensor<4x1xf32>) -> tensor<*xf32>
  %c = graph.LessOrEqual(%s, %b) : (tensor<*xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  %u = graph.Unsqueeze(%s) {axes = array<i64: 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %v = graph.Unsqueeze(%s) {axes = array<i64: 1>} : (tensor<*xf32>) -> tensor<*xf32>
  %m = graph.MatMul(%u, %v) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  graph.output %s, %c, %m {names = ["s", "c", "m"]} : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// A reshape whose shape comes from data stays unranked.
// CHECK-LABEL: source = "unknown"
// CHECK: graph.Reshape
// CHECK-SAME: -> tensor<*xf32>
graph.graph attributes {input_names = ["x", "shape"], source = "unknown", meta = "{}"} {
^bb0(%x: tensor<6xf32>, %shape: tensor<2xi64>):
  %r = graph.Reshape(%x, %shape) : (tensor<6xf32>, tensor<2xi64>) -> tensor<*xf32>
  graph.output %r {names = ["r"]} : tensor<*xf32>
}

// -----

// Flatten: the dims before `axis` times the dims from it; a side of one
// dim that is not 1 keeps it with its symbol. Expand by a shape whose
// values are unknown but whose length is static: that many dims, the
// input's where it is not 1 (TorchScript's expand of inv_freq to the batch).
// CHECK-LABEL: source = "flatten-expand"
// CHECK: graph.Flatten
// CHECK-SAME: -> tensor<?x?xi1, ["batch", ""]>
// CHECK: graph.Flatten
// CHECK-SAME: -> tensor<24x5xf32>
// CHECK: graph.Expand
// CHECK-SAME: -> tensor<?x8x?xf32>
graph.graph attributes {input_names = ["mask", "x", "shape"], source = "flatten-expand", meta = "{}"} {
^bb0(%m: tensor<?x1x?x?xi1, ["batch", "", "sequence", "sequence"]>, %x: tensor<2x3x4x5xf32>, %s: tensor<3xi64>):
  %inv = graph.constant "inv_freq" dense<1.0> : tensor<1x8x1xf32> : tensor<1x8x1xf32>
  %0 = graph.Flatten(%m) {axis = 2 : i64} : (tensor<?x1x?x?xi1, ["batch", "", "sequence", "sequence"]>) -> tensor<*xi1>
  %1 = graph.Flatten(%x) {axis = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<*xf32>
  %2 = graph.Expand(%inv, %s) : (tensor<1x8x1xf32>, tensor<3xi64>) -> tensor<*xf32>
  graph.output %0, %1, %2 {names = ["m2", "x2", "e"]} : tensor<*xi1>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Split: the input's dims with the split extent from `split`, or an equal
// split of a static extent (opset 18's num_outputs: GPT-2's fused q/k/v).
// CHECK-LABEL: source = "split"
// CHECK: graph.Split
// CHECK-SAME: -> (tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<?x?x64xf32, ["batch", "sequence", ""]>, tensor<?x?x64xf32, ["batch", "sequence", ""]>)
// CHECK: graph.Split
// CHECK-SAME: -> (tensor<?x?x128xf32, ["batch", "sequence", ""]>, tensor<?x?x64xf32, ["batch", "sequence", ""]>)
// CHECK: graph.LayerNormalization
// CHECK-SAME: -> tensor<?x?x192xf32, ["batch", "sequence", ""]>
graph.graph attributes {input_names = ["x"], source = "split", meta = "{}"} {
^bb0(%x: tensor<?x?x192xf32, ["batch", "sequence", ""]>):
  %sizes = graph.constant "sizes" dense<[128, 64]> : tensor<2xi64> : tensor<2xi64>
  %w = graph.weight "ln.w" at "/m.onnx" [0, 768] : tensor<192xf32>
  %0:3 = graph.Split(%x) {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x?x192xf32, ["batch", "sequence", ""]>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %1:2 = graph.Split(%x, %sizes) {axis = -1 : i64} : (tensor<?x?x192xf32, ["batch", "sequence", ""]>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  %2 = graph.LayerNormalization(%x, %w) {axis = -1 : i64} : (tensor<?x?x192xf32, ["batch", "sequence", ""]>, tensor<192xf32>) -> tensor<*xf32>
  graph.output %0#0, %1#0, %2 {names = ["q", "a", "n"]} : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Positions a graph makes itself: Range(0, S, 1) with S a shape entry has S
// elements; Reshape(input_ids, [-1, S]) keeps the batch (the one input
// symbol the target lacks, the static parts equal); a shape entry
// 2 * (a static dim) is that number (TorchScript's repeat_kv sizes).
// CHECK-LABEL: source = "arange-and-terms"
// CHECK: graph.Range
// CHECK-SAME: -> tensor<?xi64, ["sequence"]>
// CHECK: graph.Reshape
// CHECK-SAME: -> tensor<?x?xi64, ["batch", "sequence"]>
// CHECK: graph.Reshape
// CHECK-SAME: -> tensor<?x4x?x16xf32, ["batch", "", "sequence", ""]>
graph.graph attributes {input_names = ["input_ids", "k"], source = "arange-and-terms", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64, ["batch", "sequence"]>, %k: tensor<?x2x2x?x16xf32, ["batch", "", "", "sequence", ""]>):
  %zero = graph.constant "zero" dense<0> : tensor<i64> : tensor<i64>
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %n = graph.MakeShape(%ids) {dims = [{c = 0 : i64, terms = [array<i64: 0, 1, 1>]}], scalar = true} : (tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<*xi64>
  %r = graph.Range(%zero, %n, %one) : (tensor<i64>, tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %flat = graph.MakeShape(%ids) {dims = [-1, {c = 0 : i64, terms = [array<i64: 0, 1, 1>]}]} : (tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<*xi64>
  %v = graph.Reshape(%ids, %flat) : (tensor<?x?xi64, ["batch", "sequence"]>, tensor<*xi64>) -> tensor<*xi64>
  %s4 = graph.MakeShape(%k) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 0, 1, 2>]}, {c = 0 : i64, terms = [array<i64: 0, 3, 1>]}, 16]} : (tensor<?x2x2x?x16xf32, ["batch", "", "", "sequence", ""]>) -> tensor<*xi64>
  %kr = graph.Reshape(%k, %s4) : (tensor<?x2x2x?x16xf32, ["batch", "", "", "sequence", ""]>, tensor<*xi64>) -> tensor<*xf32>
  graph.output %r, %v, %kr {names = ["r", "v", "kr"]} : tensor<*xi64>, tensor<*xi64>, tensor<*xf32>
}
