// RUN: strata-opt %s --graph-raise-llm-ops -split-input-file | FileCheck %s

// Rotate-half RoPE as the TorchScript exporter writes it for tiny-llama
// (decoder_with_past.onnx): cos/sin of position_ids * inv_freq, Slice/Neg/
// Concat for rotate_half. theta is recovered by evaluating the angle table.
// CHECK-LABEL: source = "rope"
// CHECK: %[[R:.*]] = graph.Rope(%arg0, %arg1) {theta = 1.000000e+04 : f64}
// CHECK-NOT: graph.Cos
// CHECK: graph.output %[[R]]
graph.graph attributes {input_names = ["x", "position_ids"], source = "rope", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]> : tensor<8xf32> : tensor<8xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = graph.Concat(%2, %2) {axis = -1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  %4 = graph.Cos(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %6 = graph.Sin(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %lo = graph.Slice(%x, %c0, %c8, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %hi = graph.Slice(%x, %c8, %big, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %8 = graph.Mul(%x, %5) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %9 = graph.Neg(%hi) : (tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %10 = graph.Concat(%9, %lo) {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %11 = graph.Mul(%10, %7) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %12 = graph.Add(%8, %11) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %12 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Negative: the frequencies are not theta^(-2i/D) for any theta.
// CHECK-LABEL: source = "not-geometric"
// CHECK-NOT: graph.Rope
// CHECK: graph.Cos
graph.graph attributes {input_names = ["x", "position_ids"], source = "not-geometric", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[1.000000e+00, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.001]> : tensor<8xf32> : tensor<8xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = graph.Concat(%2, %2) {axis = -1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  %4 = graph.Cos(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %6 = graph.Sin(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %lo = graph.Slice(%x, %c0, %c8, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %hi = graph.Slice(%x, %c8, %big, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %8 = graph.Mul(%x, %5) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %9 = graph.Neg(%hi) : (tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %10 = graph.Concat(%9, %lo) {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %11 = graph.Mul(%10, %7) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %12 = graph.Add(%8, %11) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %12 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Negative: halves swapped (Neg of the first half): not rotate_half.
// CHECK-LABEL: source = "swapped"
// CHECK-NOT: graph.Rope
graph.graph attributes {input_names = ["x", "position_ids"], source = "swapped", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[1.000000e+00, 0.316227764, 1.000000e-01, 0.0316227786, 0.00999999977, 0.00316227786, 1.000000e-03, 3.16227786E-4]> : tensor<8xf32> : tensor<8xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %3 = graph.Concat(%2, %2) {axis = -1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  %4 = graph.Cos(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %6 = graph.Sin(%3) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<?x?x16xf32>, tensor<1xi64>) -> tensor<?x1x?x16xf32>
  %lo = graph.Slice(%x, %c0, %c8, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %hi = graph.Slice(%x, %c8, %big, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %8 = graph.Mul(%x, %5) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %9 = graph.Neg(%lo) : (tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %10 = graph.Concat(%9, %hi) {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %11 = graph.Mul(%10, %7) : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %12 = graph.Add(%8, %11) : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  graph.output %12 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Positions [S] shared by every sequence (a dynamo export without
// position_ids computes an arange of the sequence): both ropes take one
// [1, S] view of them (paged attention checks that q and k share it).
// CHECK-LABEL: source = "arange-positions"
// CHECK: %[[P:.*]] = graph.Unsqueeze(%arg2, %{{.*}}) : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
// CHECK-NOT: graph.Unsqueeze(%arg2
// CHECK-DAG: graph.Rope(%arg0, %[[P]]) {theta = 1.000000e+04 : f64}
// CHECK-DAG: graph.Rope(%arg1, %[[P]]) {theta = 1.000000e+04 : f64}
// CHECK-NOT: graph.Cos
graph.graph attributes {input_names = ["q", "k", "positions"], source = "arange-positions", meta = "{}"} {
^bb0(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %pos: tensor<?xi64>):
  %ax01 = graph.constant "ax01" dense<[0, 1]> : tensor<2xi64> : tensor<2xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[[[1.000000e+00], [0.316227764], [1.000000e-01], [0.0316227786], [0.00999999977], [0.00316227786], [1.000000e-03], [3.16227786E-4]]]> : tensor<1x8x1xf32> : tensor<1x8x1xf32>
  %0 = graph.Unsqueeze(%pos, %ax01) : (tensor<?xi64>, tensor<2xi64>) -> tensor<1x1x?xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<1x1x?xi64>) -> tensor<1x1x?xf32>
  %2 = graph.MatMul(%inv, %1) : (tensor<1x8x1xf32>, tensor<1x1x?xf32>) -> tensor<1x8x?xf32>
  %t = graph.Transpose(%2) {perm = array<i64: 0, 2, 1>} : (tensor<1x8x?xf32>) -> tensor<1x?x8xf32>
  %3 = graph.Concat(%t, %t) {axis = -1 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x16xf32>
  %4 = graph.Cos(%3) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %6 = graph.Sin(%3) : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<1x?x16xf32>, tensor<1xi64>) -> tensor<1x1x?x16xf32>
  %qlo = graph.Slice(%q, %c0, %c8, %axl, %step) : (tensor<1x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x?x8xf32>
  %qhi = graph.Slice(%q, %c8, %big, %axl, %step) : (tensor<1x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x?x8xf32>
  %q8 = graph.Mul(%q, %5) : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %q9 = graph.Neg(%qhi) : (tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32>
  %q10 = graph.Concat(%q9, %qlo) {axis = -1 : i64} : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x16xf32>
  %q11 = graph.Mul(%q10, %7) : (tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x4x?x16xf32>
  %q12 = graph.Add(%q8, %q11) : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %klo = graph.Slice(%k, %c0, %c8, %axl, %step) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %khi = graph.Slice(%k, %c8, %big, %axl, %step) : (tensor<1x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x8xf32>
  %k8 = graph.Mul(%k, %5) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %k9 = graph.Neg(%khi) : (tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %k10 = graph.Concat(%k9, %klo) {axis = -1 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x16xf32>
  %k11 = graph.Mul(%k10, %7) : (tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>) -> tensor<1x2x?x16xf32>
  %k12 = graph.Add(%k8, %k11) : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32>
  graph.output %q12, %k12 {names = ["q_rot", "k_rot"]} : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>
}

// -----

// Partial rotary (Phi-3, partial_rotary_factor 0.5): the rope on the first
// 8 of 16 head dims (its table over 8 dims, theta^(-2i/8)), concatenated
// with the 8 dims that pass through -> one Rope of x with rotary_dim 8.
// CHECK-LABEL: source = "partial-rope"
// CHECK: %[[R:.*]] = graph.Rope(%arg0, %arg1) {rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK-NOT: graph.Concat
// CHECK: graph.output %[[R]]
graph.graph attributes {input_names = ["x", "position_ids"], source = "partial-rope", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>):
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c4 = graph.constant "c4" dense<[4]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]> : tensor<4xf32> : tensor<4xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %3 = graph.Concat(%2, %2) {axis = -1 : i64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  %4 = graph.Cos(%3) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<?x?x8xf32>, tensor<1xi64>) -> tensor<?x1x?x8xf32>
  %6 = graph.Sin(%3) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<?x?x8xf32>, tensor<1xi64>) -> tensor<?x1x?x8xf32>
  %rot = graph.Slice(%x, %c0, %c8, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %pass = graph.Slice(%x, %c8, %big, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %lo = graph.Slice(%rot, %c0, %c4, %axl, %step) : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %hi = graph.Slice(%rot, %c4, %big, %axl, %step) : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %8 = graph.Mul(%rot, %5) : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %9 = graph.Neg(%hi) : (tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  %10 = graph.Concat(%9, %lo) {axis = -1 : i64} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x8xf32>
  %11 = graph.Mul(%10, %7) : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %12 = graph.Add(%8, %11) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %13 = graph.Concat(%12, %pass) {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  graph.output %13 {names = ["y"]} : tensor<?x4x?x16xf32>
}

// -----

// Negative: the part concatenated after the rope is not the rest of x.
// CHECK-LABEL: source = "partial-rope-other-tail"
// CHECK: graph.Concat(%{{.*}}, %arg2)
graph.graph attributes {input_names = ["x", "position_ids", "other"], source = "partial-rope-other-tail", meta = "{}"} {
^bb0(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>, %other: tensor<?x4x?x8xf32>):
  %ax2 = graph.constant "ax2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %ax1 = graph.constant "ax1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %axl = graph.constant "axl" dense<[3]> : tensor<1xi64> : tensor<1xi64>
  %c0 = graph.constant "c0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %c4 = graph.constant "c4" dense<[4]> : tensor<1xi64> : tensor<1xi64>
  %c8 = graph.constant "c8" dense<[8]> : tensor<1xi64> : tensor<1xi64>
  %big = graph.constant "big" dense<[9223372036854775807]> : tensor<1xi64> : tensor<1xi64>
  %step = graph.constant "step" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %inv = graph.constant "inv_freq" dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]> : tensor<4xf32> : tensor<4xf32>
  %0 = graph.Unsqueeze(%pos, %ax2) : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %1 = graph.Cast(%0) {to = "f32"} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %2 = graph.Mul(%1, %inv) : (tensor<?x?x1xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %3 = graph.Concat(%2, %2) {axis = -1 : i64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  %4 = graph.Cos(%3) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %5 = graph.Unsqueeze(%4, %ax1) : (tensor<?x?x8xf32>, tensor<1xi64>) -> tensor<?x1x?x8xf32>
  %6 = graph.Sin(%3) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %7 = graph.Unsqueeze(%6, %ax1) : (tensor<?x?x8xf32>, tensor<1xi64>) -> tensor<?x1x?x8xf32>
  %rot = graph.Slice(%x, %c0, %c8, %axl, %step) : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %lo = graph.Slice(%rot, %c0, %c4, %axl, %step) : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %hi = graph.Slice(%rot, %c4, %big, %axl, %step) : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %8 = graph.Mul(%rot, %5) : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %9 = graph.Neg(%hi) : (tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  %10 = graph.Concat(%9, %lo) {axis = -1 : i64} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x8xf32>
  %11 = graph.Mul(%10, %7) : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %12 = graph.Add(%8, %11) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %13 = graph.Concat(%12, %other) {axis = -1 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  graph.output %13 {names = ["y"]} : tensor<?x4x?x16xf32>
}
