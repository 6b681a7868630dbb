// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// onnxruntime's contrib ops as onnxscript's ORT fusions leave them in the
// tiny-llama dynamo exports (models/testdata/tiny-llama/*_ort_fused.onnx).

// SkipSimplifiedLayerNormalization: the sum (output #3) is an Add, the norm
// an RMSNorm of it; the unread mean / inv_std_var outputs go.
// CHECK-LABEL: source = "skip-rmsnorm"
// CHECK: %[[S:.*]] = graph.Add(%arg0, %arg1)
// CHECK: %[[N:.*]] = graph.RMSNorm(%[[S]], %{{.*}}) {eps = 9.99999974{{.*}}E-6 : f64}
// CHECK: graph.output %[[N]], %[[S]]
graph.graph attributes {input_names = ["linear_3", "embedding"], source = "skip-rmsnorm", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>, %skip: tensor<1x?x64xf32>):
  %w = graph.weight "post_attention_layernorm.weight" at "w.bin"[0, 256] : tensor<64xf32>
  %y:4 = graph.com.microsoft.SkipSimplifiedLayerNormalization(%x, %skip, %w) {epsilon = 9.9999997473787516E-6 : f64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<*xf32>, tensor<*xf32>, tensor<1x?x64xf32>)
  graph.output %y#0, %y#3 {names = ["norm", "sum"]} : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// -----

// FusedMatMul(q, k){transB, alpha}: attention's scaled q @ k^T, spelled out.
// CHECK-LABEL: source = "fused-matmul"
// CHECK: %[[T:.*]] = graph.Transpose(%arg1) {perm = array<i64: 0, 1, 3, 2>}
// CHECK: %[[M:.*]] = graph.MatMul(%arg0, %[[T]])
// CHECK: %[[A:.*]] = graph.constant "fused_matmul_alpha" dense<2.500000e-01>
// CHECK: %[[Y:.*]] = graph.Mul(%[[M]], %[[A]])
// CHECK: graph.output %[[Y]]
graph.graph attributes {input_names = ["q", "k"], source = "fused-matmul", meta = "{}"} {
^bb0(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x?x16xf32>):
  %y = graph.com.microsoft.FusedMatMul(%q, %k) {alpha = 2.500000e-01 : f64, transB = 1 : i64} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x?xf32>
  graph.output %y {names = ["scores"]} : tensor<1x4x?x?xf32>
}

// -----

// GroupQueryAttention without a cache: seqlens_k and total_sequence_length
// computed from input_ids' length, cos/sin caches over positions 0..S-1.
// It becomes head splits, Rope on q and k at 0..S-1 (theta from the cache),
// causal Attention and the head merge.
// CHECK-LABEL: source = "gqa"
// CHECK-DAG: %[[Q:.*]] = graph.Transpose(%{{.*}}) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32>
// CHECK-DAG: %[[K:.*]] = graph.Transpose(%{{.*}}) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32>) -> tensor<1x2x?x16xf32>
// CHECK: %[[P:.*]] = graph.Unsqueeze
// CHECK: %[[QR:.*]] = graph.Rope(%[[Q]], %[[P]]) {theta = 1.000000e+04 : f64}
// CHECK: %[[KR:.*]] = graph.Rope(%[[K]], %[[P]]) {theta = 1.000000e+04 : f64}
// CHECK: %[[A:.*]] = graph.Attention(%[[QR]], %[[KR]], %{{.*}}) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, mask = "causal", scale = 2.500000e-01 : f64}
// CHECK: %[[M:.*]] = graph.Transpose(%[[A]]) {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[O:.*]] = graph.Reshape(%[[M]], %{{.*}}) : (tensor<1x?x4x16xf32>, tensor<3xi64>) -> tensor<1x?x64xf32>
// CHECK-NOT: GroupQueryAttention
// CHECK: graph.output %[[O]]
graph.graph attributes {input_names = ["input_ids", "q", "k", "v"], source = "gqa", meta = "{}"} {
^bb0(%ids: tensor<1x?xi64>, %q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>):
  %zero = graph.constant "val_3" dense<0> : tensor<i64> : tensor<i64>
  %one = graph.constant "val_5" dense<1> : tensor<i64> : tensor<i64>
  %one32 = graph.constant "val_31" dense<1> : tensor<i32> : tensor<i32>
  %ax0 = graph.constant "val_10" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "val_32" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %col = graph.constant "val_23" dense<[-1, 1]> : tensor<2xi64> : tensor<2xi64>
  %inv = graph.constant "val_16" dense<[[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]]> : tensor<1x8xf32> : tensor<1x8xf32>
  %0 = graph.Shape(%ids) {start = 1 : i64, end = 2 : i64} : (tensor<1x?xi64>) -> tensor<1xi64>
  %1 = graph.Squeeze(%0) : (tensor<1xi64>) -> tensor<i64>
  %2 = graph.Range(%zero, %1, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %3 = graph.Unsqueeze(%2, %ax0) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %4 = graph.ReduceMax(%3, %ax1) {keepdims = 0 : i64} : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = graph.Cast(%4) {to = "i32"} : (tensor<1xi64>) -> tensor<1xi32>
  %5 = graph.ReduceMax(%seqlens, %ax0) {keepdims = 0 : i64} : (tensor<1xi32>, tensor<1xi64>) -> tensor<i32>
  %total = graph.Add(%5, %one32) : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %6 = graph.ReduceMax(%3) {keepdims = 0 : i64} : (tensor<1x?xi64>) -> tensor<i64>
  %7 = graph.Add(%6, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %8 = graph.Range(%zero, %7, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %9 = graph.Reshape(%8, %col) : (tensor<?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %10 = graph.Cast(%9) {to = "f32"} : (tensor<?x1xi64>) -> tensor<?x1xf32>
  %angles = graph.MatMul(%10, %inv) : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  %cos = graph.Cos(%angles) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %sin = graph.Sin(%angles) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %none = graph.none
  %y:3 = graph.com.microsoft.GroupQueryAttention(%q, %k, %v, %none, %none, %seqlens, %total, %cos, %sin) {do_rotary = 1 : i64, kv_num_heads = 2 : i64, num_heads = 4 : i64, rotary_interleaved = 0 : i64} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, none, none, tensor<1xi32>, tensor<i32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<1x?x64xf32>, tensor<*xf32>, tensor<*xf32>)
  graph.output %y#0 {names = ["o"]} : tensor<1x?x64xf32>
}

// -----

// Negative: GroupQueryAttention reading a KV cache (past_key/past_value) keeps
// onnxruntime's cache semantics (new tokens at seqlens_k - S + 1): not raised.
// CHECK-LABEL: source = "gqa-cache"
// CHECK-NOT: graph.Attention
// CHECK: graph.com.microsoft.GroupQueryAttention
graph.graph attributes {input_names = ["q", "k", "v", "past_key", "past_value", "seqlens_k", "total_sequence_length"], source = "gqa-cache", meta = "{}"} {
^bb0(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %pk: tensor<1x2x?x16xf32>, %pv: tensor<1x2x?x16xf32>, %lens: tensor<1xi32>, %total: tensor<i32>):
  %y:3 = graph.com.microsoft.GroupQueryAttention(%q, %k, %v, %pk, %pv, %lens, %total) {kv_num_heads = 2 : i64, num_heads = 4 : i64} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x?x64xf32>, tensor<*xf32>, tensor<*xf32>)
  graph.output %y#0 {names = ["o"]} : tensor<1x?x64xf32>
}

// -----

// MultiHeadAttention with com.microsoft RotaryEmbedding on q and k (position
// ids and cos/sin caches over 0..S-1 from input_ids' length): the rotary
// moves after the head split as Rope, the attention is causal
// (unidirectional, q and k one sequence "s").
// CHECK-LABEL: source = "mha"
// CHECK: %[[Q:.*]] = graph.Transpose(%{{.*}}) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32, ["", "s", "", ""]>) -> tensor<1x4x?x16xf32, ["", "", "s", ""]>
// CHECK: %[[QR:.*]] = graph.Rope(%[[Q]], %[[P:.*]]) {theta = 1.000000e+04 : f64}
// CHECK: %[[KR:.*]] = graph.Rope(%{{.*}}, %[[P]]) {theta = 1.000000e+04 : f64}
// CHECK: %[[A:.*]] = graph.Attention(%[[QR]], %[[KR]], %{{.*}}) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 4 : i64, mask = "causal", scale = 2.500000e-01 : f64}
// CHECK-NOT: MultiHeadAttention
// CHECK-NOT: RotaryEmbedding
graph.graph attributes {input_names = ["input_ids", "q", "k", "v"], source = "mha", meta = "{}"} {
^bb0(%ids: tensor<1x?xi64, ["", "s"]>, %q: tensor<1x?x64xf32, ["", "s", ""]>, %k: tensor<1x?x64xf32, ["", "s", ""]>, %v: tensor<1x?x64xf32, ["", "s", ""]>):
  %zero = graph.constant "val_4" dense<0> : tensor<i64> : tensor<i64>
  %one = graph.constant "val_6" dense<1> : tensor<i64> : tensor<i64>
  %ax0 = graph.constant "val_11" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %col = graph.constant "val_22" dense<[-1, 1]> : tensor<2xi64> : tensor<2xi64>
  %inv = graph.constant "val_15" dense<[[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]]> : tensor<1x8xf32> : tensor<1x8xf32>
  %0 = graph.Shape(%ids) {start = 1 : i64, end = 2 : i64} : (tensor<1x?xi64, ["", "s"]>) -> tensor<1xi64>
  %1 = graph.Squeeze(%0) : (tensor<1xi64>) -> tensor<i64>
  %2 = graph.Range(%zero, %1, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = graph.Unsqueeze(%2, %ax0) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %3 = graph.ReduceMax(%pos) {keepdims = 0 : i64} : (tensor<1x?xi64>) -> tensor<i64>
  %4 = graph.Add(%3, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %5 = graph.Range(%zero, %4, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %6 = graph.Reshape(%5, %col) : (tensor<?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %7 = graph.Cast(%6) {to = "f32"} : (tensor<?x1xi64>) -> tensor<?x1xf32>
  %angles = graph.MatMul(%7, %inv) : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  %cos = graph.Cos(%angles) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %sin = graph.Sin(%angles) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %qr = graph.com.microsoft.RotaryEmbedding(%q, %pos, %cos, %sin) : (tensor<1x?x64xf32, ["", "s", ""]>, tensor<1x?xi64>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<1x?x64xf32, ["", "s", ""]>
  %kr = graph.com.microsoft.RotaryEmbedding(%k, %pos, %cos, %sin) : (tensor<1x?x64xf32, ["", "s", ""]>, tensor<1x?xi64>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<1x?x64xf32, ["", "s", ""]>
  %y = graph.com.microsoft.MultiHeadAttention(%qr, %kr, %v) {num_heads = 4 : i64, unidirectional = 1 : i64} : (tensor<1x?x64xf32, ["", "s", ""]>, tensor<1x?x64xf32, ["", "s", ""]>, tensor<1x?x64xf32, ["", "s", ""]>) -> tensor<1x?x64xf32, ["", "s", ""]>
  graph.output %y {names = ["o"]} : tensor<1x?x64xf32, ["", "s", ""]>
}

// -----

// Negative: MultiHeadAttention reading past K/V is not raised.
// CHECK-LABEL: source = "mha-past"
// CHECK-NOT: graph.Attention
// CHECK: graph.com.microsoft.MultiHeadAttention
graph.graph attributes {input_names = ["q", "k", "v", "past_key", "past_value"], source = "mha-past", meta = "{}"} {
^bb0(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>, %pk: tensor<1x4x?x16xf32>, %pv: tensor<1x4x?x16xf32>):
  %none = graph.none
  %y = graph.com.microsoft.MultiHeadAttention(%q, %k, %v, %none, %none, %none, %pk, %pv) {num_heads = 4 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, none, none, none, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x?x64xf32>
  graph.output %y {names = ["o"]} : tensor<1x?x64xf32>
}
