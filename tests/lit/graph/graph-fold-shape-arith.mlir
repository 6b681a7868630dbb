// RUN: strata-opt %s --graph-infer-shapes --graph-fold-shape-arith --graph-dce --graph-infer-shapes -split-input-file | FileCheck %s

// The dynamo exporter's Shape -> Gather -> Unsqueeze -> Concat chain becomes
// one MakeShape reading the symbolic dim straight off the graph input.
// CHECK-LABEL: source = "chain"
// CHECK-NOT: graph.Shape
// CHECK-NOT: graph.Concat
// CHECK: %[[S:.*]] = graph.MakeShape(%arg0) {dims = [1, {c = 0 : i64, terms = [array<i64: 0, 1, 1>]}, 4, 16]}
// CHECK: graph.Reshape(%{{.*}}, %[[S]])
// CHECK-SAME: -> tensor<1x?x4x16xf32, ["", "sequence", "", ""]>
graph.graph attributes {input_names = ["ids", "x"], source = "chain", meta = "{}"} {
^bb0(%ids: tensor<1x?xi64, ["", "sequence"]>, %x: tensor<1x?x64xf32, ["", "sequence", ""]>):
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %zero = graph.constant "axes0" dense<[0]> : tensor<1xi64> : tensor<1xi64>
  %tail = graph.constant "tail" dense<[4, 16]> : tensor<2xi64> : tensor<2xi64>
  %b = graph.constant "b" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %s = graph.Shape(%ids) : (tensor<1x?xi64, ["", "sequence"]>) -> tensor<*xi64>
  %seq = graph.Gather(%s, %one) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %u = graph.Unsqueeze(%seq, %zero) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %shape = graph.Concat(%b, %u, %tail) {axis = 0 : i64} : (tensor<1xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %r = graph.Reshape(%x, %shape) : (tensor<1x?x64xf32, ["", "sequence", ""]>, tensor<*xi64>) -> tensor<*xf32>
  graph.output %r {names = ["r"]} : tensor<*xf32>
}

// -----

// Arithmetic on dims stays affine: past + sequence (the total length), and
// the same symbol on two inputs is one term.
// CHECK-LABEL: source = "affine"
// CHECK: graph.MakeShape(%arg0, %arg1) {dims = [{c = 0 : i64, terms = [array<i64: 0, 1, 1>, array<i64: 1, 2, 1>]}]}
// CHECK-NOT: graph.Add
graph.graph attributes {input_names = ["ids", "past", "mask"], source = "affine", meta = "{}"} {
^bb0(%ids: tensor<?x?xi64, ["batch", "sequence"]>, %past: tensor<?x2x?x16xf32, ["batch", "", "past", ""]>, %mask: tensor<?x?xi64, ["batch", "sequence"]>):
  %i1 = graph.constant "i1" dense<[1]> : tensor<1xi64> : tensor<1xi64>
  %i2 = graph.constant "i2" dense<[2]> : tensor<1xi64> : tensor<1xi64>
  %s1 = graph.Shape(%mask) : (tensor<?x?xi64, ["batch", "sequence"]>) -> tensor<*xi64>
  %seq = graph.Gather(%s1, %i1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s2 = graph.Shape(%past) : (tensor<?x2x?x16xf32, ["batch", "", "past", ""]>) -> tensor<*xi64>
  %p = graph.Gather(%s2, %i2) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %total = graph.Add(%seq, %p) : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %z = graph.ConstantOfShape(%total) : (tensor<*xi64>) -> tensor<*xf32>
  graph.output %z {names = ["z"]} : tensor<*xf32>
}

// -----

// All-static shapes become constants; the Where(Equal(shape, -1), 1, shape)
// idiom is decided because dims are never negative.
// CHECK-LABEL: source = "static"
// CHECK: %[[C:.*]] = graph.constant "folded_shape" dense<[2, 3]> : tensor<2xi64>
// CHECK: graph.Expand(%{{.*}}, %[[C]])
// CHECK-NOT: graph.Where
graph.graph attributes {input_names = ["x"], source = "static", meta = "{}"} {
^bb0(%x: tensor<2x3xf32>):
  %m1 = graph.constant "m1" dense<-1> : tensor<i64> : tensor<i64>
  %ones = graph.constant "ones" dense<[1, 1]> : tensor<2xi64> : tensor<2xi64>
  %s = graph.Shape(%x) : (tensor<2x3xf32>) -> tensor<*xi64>
  %eq = graph.Equal(%s, %m1) : (tensor<*xi64>, tensor<i64>) -> tensor<*xi1>
  %w = graph.Where(%eq, %ones, %s) : (tensor<*xi1>, tensor<2xi64>, tensor<*xi64>) -> tensor<*xi64>
  %e = graph.Expand(%x, %w) : (tensor<2x3xf32>, tensor<*xi64>) -> tensor<*xf32>
  graph.output %e {names = ["e"]} : tensor<*xf32>
}

// -----

// Negative: integer data (token ids, a shape read from an input) is not a
// shape chain and is left alone.
// CHECK-LABEL: source = "data"
// CHECK: graph.Add(%arg0, %{{.*}})
// CHECK: graph.Reshape(%arg2, %arg1)
// CHECK-NOT: graph.MakeShape
graph.graph attributes {input_names = ["ids", "shape", "x"], source = "data", meta = "{}"} {
^bb0(%ids: tensor<?xi64, ["n"]>, %shape: tensor<2xi64>, %x: tensor<6xf32>):
  %one = graph.constant "one" dense<1> : tensor<i64> : tensor<i64>
  %y = graph.Add(%ids, %one) : (tensor<?xi64, ["n"]>, tensor<i64>) -> tensor<*xi64>
  %r = graph.Reshape(%x, %shape) : (tensor<6xf32>, tensor<2xi64>) -> tensor<*xf32>
  graph.output %y, %r {names = ["y", "r"]} : tensor<*xi64>, tensor<*xf32>
}
