// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// Attention of the TorchScript decoder-with-past export (tiny-llama,
// decoder_with_past.onnx): past/new K/V concat, GQA repeat-kv by
// Unsqueeze/Expand/Reshape, scale by Div, the causal + padding mask built
// in-graph from CumSum(ones) <= position_ids and attention_mask, applied with
// Where(-max). The mask is classified by evaluating it on probe inputs.
// CHECK-LABEL: source = "gqa-past"
// CHECK: %[[KC:.*]] = graph.Concat(%arg3, %arg6)
// CHECK: %[[VC:.*]] = graph.Concat(%arg4, %arg7)
// CHECK: %[[A:.*]] = graph.Attention(%arg5, %[[KC]], %[[VC]], %arg1) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, mask = "causal+padding", scale = 2.500000e-01 : f64}
// CHECK-NOT: graph.Softmax
// CHECK-NOT: graph.CumSum
// CHECK: graph.output %[[A]], %[[KC]], %[[VC]]
graph.graph attributes {input_names = ["input_ids", "attention_mask", "position_ids", "past_key_values.0.key", "past_key_values.0.value", "q", "k", "v"], source = "gqa-past", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %am: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %pk: tensor<?x2x?x16xf32>, %pv: tensor<?x2x?x16xf32>, %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>):
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %axm1 = graph.constant "axm1" dense<-1> : tensor<i32> : tensor<i32>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax3 = graph.constant "ax3" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %four = graph.constant "four" dense<4.0> : tensor<f32> : tensor<f32>
  %neg = graph.constant "neg" dense<-3.40282347E+38> : tensor<f32> : tensor<f32>
  %ms = graph.MakeShape(%ids, %am) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 1, 1, 1>]}]} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<2xi64>
  %ones = graph.ConstantOfShape(%ms) {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  %cs = graph.CumSum(%ones, %axm1) : (tensor<?x?xi64>, tensor<i32>) -> tensor<?x?xi64>
  %kvi = graph.Sub(%cs, %one) : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %kv1 = graph.Unsqueeze(%kvi, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %kv2 = graph.Unsqueeze(%kv1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %p1 = graph.Unsqueeze(%pos, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %p2 = graph.Unsqueeze(%p1, %ax3) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x?x1xi64>
  %le = graph.LessOrEqual(%kv2, %p2) : (tensor<?x1x1x?xi64>, tensor<?x1x?x1xi64>) -> tensor<?x1x?x?xi1>
  %a1 = graph.Unsqueeze(%am, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %a2 = graph.Unsqueeze(%a1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %ab = graph.Cast(%a2) {to = "bool"} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %and = graph.And(%le, %ab) : (tensor<?x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %masked = graph.Not(%and) : (tensor<?x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %kc = graph.Concat(%pk, %k) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = graph.Concat(%pv, %v) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %e5 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 2, 2, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<5xi64>
  %r4 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 4, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<4xi64>
  %ku = graph.Unsqueeze(%kc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ke = graph.Expand(%ku, %e5) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %kr = graph.Reshape(%ke, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vu = graph.Unsqueeze(%vc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ve = graph.Expand(%vu, %e5) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %vr = graph.Reshape(%ve, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = graph.Transpose(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = graph.MatMul(%q, %kt) : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %sd = graph.Div(%s, %four) : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %w = graph.Where(%masked, %neg, %sd) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.Softmax(%w) {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.MatMul(%p, %vr) : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %o, %kc, %vc {names = ["o", "present.0.key", "present.0.value"]} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// Negative: keys strictly before the query (Less): neither causal nor
// padding, so the attention stays decomposed.
// CHECK-LABEL: source = "strict-mask"
// CHECK-NOT: graph.Attention
// CHECK: graph.Softmax
graph.graph attributes {input_names = ["input_ids", "attention_mask", "position_ids", "past_key_values.0.key", "past_key_values.0.value", "q", "k", "v"], source = "strict-mask", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %am: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %pk: tensor<?x2x?x16xf32>, %pv: tensor<?x2x?x16xf32>, %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>):
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %axm1 = graph.constant "axm1" dense<-1> : tensor<i32> : tensor<i32>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax3 = graph.constant "ax3" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %four = graph.constant "four" dense<4.0> : tensor<f32> : tensor<f32>
  %neg = graph.constant "neg" dense<-3.40282347E+38> : tensor<f32> : tensor<f32>
  %ms = graph.MakeShape(%ids, %am) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 1, 1, 1>]}]} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<2xi64>
  %ones = graph.ConstantOfShape(%ms) {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  %cs = graph.CumSum(%ones, %axm1) : (tensor<?x?xi64>, tensor<i32>) -> tensor<?x?xi64>
  %kvi = graph.Sub(%cs, %one) : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %kv1 = graph.Unsqueeze(%kvi, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %kv2 = graph.Unsqueeze(%kv1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %p1 = graph.Unsqueeze(%pos, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %p2 = graph.Unsqueeze(%p1, %ax3) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x?x1xi64>
  %le = graph.Less(%kv2, %p2) : (tensor<?x1x1x?xi64>, tensor<?x1x?x1xi64>) -> tensor<?x1x?x?xi1>
  %a1 = graph.Unsqueeze(%am, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %a2 = graph.Unsqueeze(%a1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %ab = graph.Cast(%a2) {to = "bool"} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %and = graph.And(%le, %ab) : (tensor<?x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %masked = graph.Not(%and) : (tensor<?x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %kc = graph.Concat(%pk, %k) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = graph.Concat(%pv, %v) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %e5 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 2, 2, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<5xi64>
  %r4 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 4, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<4xi64>
  %ku = graph.Unsqueeze(%kc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ke = graph.Expand(%ku, %e5) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %kr = graph.Reshape(%ke, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vu = graph.Unsqueeze(%vc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ve = graph.Expand(%vu, %e5) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %vr = graph.Reshape(%ve, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = graph.Transpose(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = graph.MatMul(%q, %kt) : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %sd = graph.Div(%s, %four) : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %w = graph.Where(%masked, %neg, %sd) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.Softmax(%w) {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.MatMul(%p, %vr) : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %o, %kc, %vc {names = ["o", "present.0.key", "present.0.value"]} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// The same with Tile([1, 1, n, 1, 1]) repeating each KV head (GQA grouping).
// CHECK-LABEL: source = "gqa-tile"
// CHECK: graph.Attention(%arg5, %{{.*}}, %{{.*}}, %arg1) {causal = 1 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, mask = "causal+padding"
// CHECK-NOT: graph.Tile
graph.graph attributes {input_names = ["input_ids", "attention_mask", "position_ids", "past_key_values.0.key", "past_key_values.0.value", "q", "k", "v"], source = "gqa-tile", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64>, %am: tensor<?x?xi64>, %pos: tensor<?x?xi64>, %pk: tensor<?x2x?x16xf32>, %pv: tensor<?x2x?x16xf32>, %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>):
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %axm1 = graph.constant "axm1" dense<-1> : tensor<i32> : tensor<i32>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax3 = graph.constant "ax3" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %four = graph.constant "four" dense<4.0> : tensor<f32> : tensor<f32>
  %neg = graph.constant "neg" dense<-3.40282347E+38> : tensor<f32> : tensor<f32>
  %ms = graph.MakeShape(%ids, %am) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, {c = 0 : i64, terms = [array<i64: 1, 1, 1>]}]} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<2xi64>
  %ones = graph.ConstantOfShape(%ms) {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  %cs = graph.CumSum(%ones, %axm1) : (tensor<?x?xi64>, tensor<i32>) -> tensor<?x?xi64>
  %kvi = graph.Sub(%cs, %one) : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %kv1 = graph.Unsqueeze(%kvi, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %kv2 = graph.Unsqueeze(%kv1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %p1 = graph.Unsqueeze(%pos, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %p2 = graph.Unsqueeze(%p1, %ax3) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x?x1xi64>
  %le = graph.LessOrEqual(%kv2, %p2) : (tensor<?x1x1x?xi64>, tensor<?x1x?x1xi64>) -> tensor<?x1x?x?xi1>
  %a1 = graph.Unsqueeze(%am, %ax1) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %a2 = graph.Unsqueeze(%a1, %ax2) : (tensor<?x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?xi64>
  %ab = graph.Cast(%a2) {to = "bool"} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %and = graph.And(%le, %ab) : (tensor<?x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %masked = graph.Not(%and) : (tensor<?x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %kc = graph.Concat(%pk, %k) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = graph.Concat(%pv, %v) {axis = 2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %e5 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 2, 2, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<5xi64>
  %r4 = graph.MakeShape(%ids, %kc) {dims = [{c = 0 : i64, terms = [array<i64: 0, 0, 1>]}, 4, {c = 0 : i64, terms = [array<i64: 1, 2, 1>]}, 16]} : (tensor<?x?xi64>, tensor<?x2x?x16xf32>) -> tensor<4xi64>
  %reps = graph.constant "reps" dense<[1, 1, 2, 1, 1]> : tensor<5xi64> : tensor<5xi64>
  %ku = graph.Unsqueeze(%kc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ke = graph.Tile(%ku, %reps) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %kr = graph.Reshape(%ke, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vu = graph.Unsqueeze(%vc, %ax2) : (tensor<?x2x?x16xf32>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32>
  %ve = graph.Tile(%vu, %reps) : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32>
  %vr = graph.Reshape(%ve, %r4) : (tensor<?x2x2x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = graph.Transpose(%kr) {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = graph.MatMul(%q, %kt) : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %sd = graph.Div(%s, %four) : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %w = graph.Where(%masked, %neg, %sd) : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.Softmax(%w) {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.MatMul(%p, %vr) : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %o, %kc, %vc {names = ["o", "present.0.key", "present.0.value"]} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}


// -----

// repeat-kv as index_select on the head axis: Gather(k, [0, 0, 1, 1], axis 1)
// is GQA grouping and is peeled; [0, 1, 0, 1] (what a plain Tile(k, [1, 2,
// 1, 1]) computes: head h reads h % Hkv) is not, and stays.
// CHECK-LABEL: source = "gqa-gather"
// CHECK: graph.Attention(%arg0, %arg1, %arg2) {causal = 0 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, mask = "none", scale = 2.500000e-01 : f64}
// CHECK: graph.Attention(%arg0, %{{.*}}, %{{.*}}) {causal = 0 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 4 : i64, mask = "none"
graph.graph attributes {input_names = ["q", "k", "v"], source = "gqa-gather", meta = "{}"} {
^bb0(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>):
  %grp = graph.constant "grouped" dense<[0, 0, 1, 1]> : tensor<4xi64> : tensor<4xi64>
  %itl = graph.constant "interleaved" dense<[0, 1, 0, 1]> : tensor<4xi64> : tensor<4xi64>
  %quarter = graph.constant "quarter" dense<0.25> : tensor<f32> : tensor<f32>
  %kg = graph.Gather(%k, %grp) {axis = 1 : i64} : (tensor<1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x4x?x16xf32>
  %vg = graph.Gather(%v, %grp) {axis = 1 : i64} : (tensor<1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x4x?x16xf32>
  %kt = graph.Transpose(%kg) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x?x16xf32>) -> tensor<1x4x16x?xf32>
  %s = graph.MatMul(%q, %kt) : (tensor<1x4x?x16xf32>, tensor<1x4x16x?xf32>) -> tensor<1x4x?x?xf32>
  %ss = graph.Mul(%s, %quarter) : (tensor<1x4x?x?xf32>, tensor<f32>) -> tensor<1x4x?x?xf32>
  %p = graph.Softmax(%ss) {axis = -1 : i64} : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  %o = graph.MatMul(%p, %vg) : (tensor<1x4x?x?xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %ki = graph.Gather(%k, %itl) {axis = 1 : i64} : (tensor<1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x4x?x16xf32>
  %vi = graph.Gather(%v, %itl) {axis = 1 : i64} : (tensor<1x2x?x16xf32>, tensor<4xi64>) -> tensor<1x4x?x16xf32>
  %kti = graph.Transpose(%ki) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x?x16xf32>) -> tensor<1x4x16x?xf32>
  %si = graph.MatMul(%q, %kti) : (tensor<1x4x?x16xf32>, tensor<1x4x16x?xf32>) -> tensor<1x4x?x?xf32>
  %ssi = graph.Mul(%si, %quarter) : (tensor<1x4x?x?xf32>, tensor<f32>) -> tensor<1x4x?x?xf32>
  %pi = graph.Softmax(%ssi) {axis = -1 : i64} : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  %oi = graph.MatMul(%pi, %vi) : (tensor<1x4x?x?xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  graph.output %o, %oi {names = ["o", "oi"]} : tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>
}

// -----

// TorchScript's GPT-2: k^T straight from the head split [B, T, H, D] by
// Transpose [0, 2, 3, 1], q and k^T each scaled by D^-1/4, no mask (its
// causal Where is left out here: none). k becomes the head split's
// Transpose [0, 2, 1, 3] feeding the Attention.
// CHECK-LABEL: source = "kt-from-split"
// CHECK: %[[K:.*]] = graph.Transpose(%arg1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK: %[[A:.*]] = graph.Attention(%arg0, %[[K]], %arg2) {causal = 0 : i64, head_dim = 16 : i64, heads = 4 : i64, kv_heads = 4 : i64, mask = "none", scale = 2.500000e-01 : f64}
// CHECK-NOT: graph.Softmax
// CHECK: graph.output %[[A]]
graph.graph attributes {input_names = ["q", "k_split", "v"], source = "kt-from-split", meta = "{}"} {
^bb0(%q: tensor<?x4x?x16xf32>, %ks: tensor<?x?x4x16xf32>, %v: tensor<?x4x?x16xf32>):
  %half = graph.constant "half" dense<5.000000e-01> : tensor<f32> : tensor<f32>
  %kt = graph.Transpose(%ks) {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x16x?xf32>
  %qs = graph.Mul(%q, %half) : (tensor<?x4x?x16xf32>, tensor<f32>) -> tensor<?x4x?x16xf32>
  %kts = graph.Mul(%kt, %half) : (tensor<?x4x16x?xf32>, tensor<f32>) -> tensor<?x4x16x?xf32>
  %s = graph.MatMul(%qs, %kts) : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %p = graph.Softmax(%s) {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = graph.MatMul(%p, %v) : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %o {names = ["o"]} : tensor<?x4x?x16xf32>
}
