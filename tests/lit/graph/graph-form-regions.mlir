// RUN: strata-opt %s --graph-form-regions -split-input-file | FileCheck %s

// An MLP block as both exporters leave it after raising (tiny-llama): embedding
// gather, rmsnorm, gate/up MatMuls with SiLU and Mul, down MatMul, residual Add.
// CHECK-LABEL: source = "mlp"
// CHECK: %[[E:.*]] = graph.region.embedding(%{{.*}}, %arg0)
// CHECK: %[[N:.*]] = graph.region.rmsnorm(%[[E]], %{{.*}}) {eps = 1.000000e-05 : f64}
// CHECK: %[[G:.*]] = graph.region.gemm(%[[N]], %{{.*}}, %{{.*}}) {bias = 0 : i64, epilogue = "swiglu", layout = "kn", residual = 0 : i64, rows = 0 : i64, weights = 2 : i64}
// CHECK: %[[D:.*]] = graph.region.gemm(%[[G]], %{{.*}}, %[[E]]) {bias = 0 : i64, epilogue = "none", layout = "kn", residual = 1 : i64, rows = 0 : i64, weights = 1 : i64}
// CHECK-NOT: graph.Silu
// CHECK-NOT: graph.Add
// CHECK: graph.output %[[D]]
graph.graph attributes {input_names = ["input_ids"], source = "mlp", meta = "{}"} {
^bb0(%ids: tensor<1x?xi64>):
  %emb = graph.weight "embed" at "/m.bin" [0, 131072] : tensor<512x64xf32>
  %nw = graph.weight "norm" at "/m.bin" [0, 256] : tensor<64xf32>
  %wg = graph.weight "gate" at "/m.bin" [0, 45056] : tensor<64x176xf32>
  %wu = graph.weight "up" at "/m.bin" [0, 45056] : tensor<64x176xf32>
  %wd = graph.weight "down" at "/m.bin" [0, 45056] : tensor<176x64xf32>
  %x = graph.Gather(%emb, %ids) {axis = 0 : i64} : (tensor<512x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %h = graph.RMSNorm(%x, %nw) {eps = 1.000000e-05 : f64} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %g = graph.MatMul(%h, %wg) : (tensor<1x?x64xf32>, tensor<64x176xf32>) -> tensor<1x?x176xf32>
  %s = graph.Silu(%g) : (tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  %u = graph.MatMul(%h, %wu) : (tensor<1x?x64xf32>, tensor<64x176xf32>) -> tensor<1x?x176xf32>
  %m = graph.Mul(%s, %u) : (tensor<1x?x176xf32>, tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  %d = graph.MatMul(%m, %wd) : (tensor<1x?x176xf32>, tensor<176x64xf32>) -> tensor<1x?x64xf32>
  %r = graph.Add(%x, %d) : (tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  graph.output %r {names = ["y"]} : tensor<1x?x64xf32>
}

// -----

// Qwen2-style q/k/v: HF Linear with biases reading one input -> one region
// with three results (weights stay separate operands); lm_head on a row gather.
// CHECK-LABEL: source = "qkv-bias"
// CHECK: %[[QKV:.*]]:3 = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {bias = 1 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 3 : i64}
// CHECK: %[[LM:.*]] = graph.region.gemm(%arg0, %{{.*}}, %arg1) {bias = 0 : i64, epilogue = "none", layout = "nk", residual = 0 : i64, rows = 1 : i64, weights = 1 : i64}
// CHECK: graph.output %[[QKV]]#0, %[[QKV]]#1, %[[QKV]]#2, %[[LM]]
graph.graph attributes {input_names = ["h", "logits_indices"], source = "qkv-bias", meta = "{}"} {
^bb0(%h: tensor<?x?x64xf32>, %rows: tensor<?xi64>):
  %wq = graph.weight "q" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %bq = graph.weight "qb" at "/m.bin" [0, 256] : tensor<64xf32>
  %wk = graph.weight "k" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %bk = graph.weight "kb" at "/m.bin" [0, 128] : tensor<32xf32>
  %wv = graph.weight "v" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %bv = graph.weight "vb" at "/m.bin" [0, 128] : tensor<32xf32>
  %wlm = graph.weight "lm" at "/m.bin" [0, 32768] : tensor<128x64xf32>
  %q = graph.Linear(%h, %wq, %bq) : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %k = graph.Linear(%h, %wk, %bk) : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %v = graph.Linear(%h, %wv, %bv) : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %g = graph.Gather(%h, %rows) {axis = 1 : i64} : (tensor<?x?x64xf32>, tensor<?xi64>) -> tensor<?x?x64xf32>
  %l = graph.Linear(%g, %wlm) : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x128xf32>
  graph.output %q, %k, %v, %l {names = ["q", "k", "v", "logits"]} : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x128xf32>
}

// -----

// Negatives: a product of two activations is no GEMM region; an Add that
// broadcasts is no residual; SiLU of one input times a product of another
// input is no SwiGLU (the two GEMMs do not share x); the projections that do
// share x become one two-result region. The leftover Add, and SiLU times
// the other product, are fused elementwise regions.
// CHECK-LABEL: source = "almost"
// CHECK: graph.MatMul(%arg0, %arg1)
// CHECK: %[[P:.*]]:2 = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}) {{.*}}residual = 0
// CHECK: graph.region.elementwise(%[[P]]#0, %arg2) {body = [{attrs = {}, inputs = array<i64: 0, 1>, op = "Add"}], outputs = array<i64: 2>}
// CHECK: %[[G:.*]] = graph.region.gemm(%arg3
// CHECK: graph.region.elementwise(%[[P]]#1, %[[G]]) {body = [{attrs = {}, inputs = array<i64: 0>, op = "Silu"}, {attrs = {}, inputs = array<i64: 2, 1>, op = "Mul"}], outputs = array<i64: 3>}
graph.graph attributes {input_names = ["x", "y", "b", "z"], source = "almost", meta = "{}"} {
^bb0(%x: tensor<?x8x64xf32>, %y: tensor<?x64x8xf32>, %b: tensor<1x1x64xf32>, %z: tensor<?x8x64xf32>):
  %w = graph.weight "w" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %w2 = graph.weight "w2" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %w3 = graph.weight "w3" at "/m.bin" [0, 16384] : tensor<64x64xf32>
  %xy = graph.MatMul(%x, %y) : (tensor<?x8x64xf32>, tensor<?x64x8xf32>) -> tensor<?x8x8xf32>
  %p = graph.MatMul(%x, %w) : (tensor<?x8x64xf32>, tensor<64x64xf32>) -> tensor<?x8x64xf32>
  %a = graph.Add(%p, %b) : (tensor<?x8x64xf32>, tensor<1x1x64xf32>) -> tensor<?x8x64xf32>
  %g = graph.MatMul(%x, %w2) : (tensor<?x8x64xf32>, tensor<64x64xf32>) -> tensor<?x8x64xf32>
  %s = graph.Silu(%g) : (tensor<?x8x64xf32>) -> tensor<?x8x64xf32>
  %u = graph.MatMul(%z, %w3) : (tensor<?x8x64xf32>, tensor<64x64xf32>) -> tensor<?x8x64xf32>
  %m = graph.Mul(%s, %u) : (tensor<?x8x64xf32>, tensor<?x8x64xf32>) -> tensor<?x8x64xf32>
  graph.output %xy, %a, %m {names = ["xy", "a", "m"]} : tensor<?x8x8xf32>, tensor<?x8x64xf32>, tensor<?x8x64xf32>
}

// -----

// Fused elementwise regions: one region per connected chain (a softmax over
// a scaled, biased activation; the intermediate read outside is an output
// too); a chain interrupted by a non-elementwise op that both reads it and
// feeds it stays unfused (it would depend on itself).
// CHECK-LABEL: source = "elementwise"
// CHECK: %[[E:.*]]:2 = graph.region.elementwise(%arg0, %{{.*}}, %arg1) {body = [{attrs = {}, inputs = array<i64: 0, 1>, op = "Mul"}, {attrs = {}, inputs = array<i64: 3, 2>, op = "Add"}, {attrs = {axis = -1 : i64}, inputs = array<i64: 4>, op = "Softmax"}], outputs = array<i64: 4, 5>}
// CHECK: graph.Exp
// CHECK: graph.MatMul
// CHECK: graph.Add
// CHECK: graph.output %[[E]]#1, %[[E]]#0
graph.graph attributes {input_names = ["x", "bias", "y", "w"], source = "elementwise", meta = "{}"} {
^bb0(%x: tensor<?x8xf32>, %bias: tensor<8xf32>, %y: tensor<8x8xf32>, %w: tensor<8x8xf32>):
  %c = graph.constant "half" dense<5.000000e-01> : tensor<f32> : tensor<f32>
  %0 = graph.Mul(%x, %c) : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %1 = graph.Add(%0, %bias) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %2 = graph.Softmax(%1) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %3 = graph.Exp(%y) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = graph.MatMul(%3, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %5 = graph.Add(%3, %4) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  graph.output %2, %1, %5 {names = ["p", "s", "z"]} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8x8xf32>
}

// -----

// A tied lm_head as dynamo exports it: MatMul by the Transpose of the
// embedding matrix [vocab, hidden] becomes a GEMM reading that matrix in
// place ("nk"); a Transpose of another permutation, or of an activation,
// stays as it is.
// CHECK-LABEL: source = "tied"
// CHECK: graph.region.embedding
// CHECK: %[[L:.*]] = graph.region.gemm(%{{.*}}, %[[E:.*]]) {{.*}}layout = "nk"
// CHECK-NOT: graph.Transpose(%[[E]]
// CHECK: graph.Transpose(%arg1)
// CHECK: graph.MatMul
graph.graph attributes {input_names = ["ids", "y"], source = "tied", meta = "{}"} {
^bb0(%ids: tensor<1x?xi64>, %y: tensor<64x32xf32>):
  %e = graph.weight "embed" at "/m.bin" [0, 8192] : tensor<32x64xf32>
  %x = graph.Gather(%e, %ids) {axis = 0 : i64} : (tensor<32x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %t = graph.Transpose(%e) {perm = array<i64: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
  %l = graph.MatMul(%x, %t) : (tensor<1x?x64xf32>, tensor<64x32xf32>) -> tensor<1x?x32xf32>
  %ty = graph.Transpose(%y) {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %o = graph.MatMul(%l, %ty) : (tensor<1x?x32xf32>, tensor<32x64xf32>) -> tensor<1x?x64xf32>
  graph.output %l, %o {names = ["l", "o"]} : tensor<1x?x32xf32>, tensor<1x?x64xf32>
}

// -----

// LayerNormalization over the last axis with a weight and a bias (GPT-2's)
// -> region.layernorm; over another axis it stays (oneDNN runs it).
// CHECK-LABEL: source = "layernorm"
// CHECK: graph.region.layernorm(%arg0, %{{.*}}, %{{.*}}) {epsilon = 9.9999997473787516E-6 : f64}
// CHECK: graph.LayerNormalization(%arg1
graph.graph attributes {input_names = ["x", "y"], source = "layernorm", meta = "{}"} {
^bb0(%x: tensor<?x?x64xf32>, %y: tensor<?x8x64xf32>):
  %w = graph.weight "ln.weight" at "/m.bin" [0, 256] : tensor<64xf32>
  %b = graph.weight "ln.bias" at "/m.bin" [256, 256] : tensor<64xf32>
  %w2 = graph.weight "ln2.weight" at "/m.bin" [0, 2048] : tensor<8x64xf32>
  %b2 = graph.weight "ln2.bias" at "/m.bin" [2048, 2048] : tensor<8x64xf32>
  %0 = graph.LayerNormalization(%x, %w, %b) {axis = -1 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = graph.LayerNormalization(%y, %w2, %b2) {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<?x8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<?x8x64xf32>
  graph.output %0, %1 {names = ["a", "b"]} : tensor<?x?x64xf32>, tensor<?x8x64xf32>
}

// -----

// GPT-2's MLP: the c_fc projection with its bias and tanh GELU is one
// region (epilogue "gelu"), c_proj with its bias and the residual another;
// an erf GELU stays a node (oneDNN runs it).
// CHECK-LABEL: source = "gelu-epilogue"
// CHECK: %[[F:.*]] = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}) {bias = 1 : i64, epilogue = "gelu", layout = "kn", residual = 0 : i64, rows = 0 : i64, weights = 1 : i64}
// CHECK: graph.region.gemm(%[[F]], %{{.*}}, %{{.*}}, %arg0) {bias = 1 : i64, epilogue = "none", layout = "kn", residual = 1 : i64, rows = 0 : i64, weights = 1 : i64}
// CHECK: graph.Gelu(%{{.*}}) {approximate = "none"}
graph.graph attributes {input_names = ["x"], source = "gelu-epilogue", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %wf = graph.weight "c_fc.weight" at "/m.bin" [0, 65536] : tensor<64x256xf32>
  %bf = graph.weight "c_fc.bias" at "/m.bin" [0, 1024] : tensor<256xf32>
  %wp = graph.weight "c_proj.weight" at "/m.bin" [0, 65536] : tensor<256x64xf32>
  %bp = graph.weight "c_proj.bias" at "/m.bin" [0, 256] : tensor<64xf32>
  %0 = graph.MatMul(%x, %wf) : (tensor<1x?x64xf32>, tensor<64x256xf32>) -> tensor<1x?x256xf32>
  %1 = graph.Add(%0, %bf) : (tensor<1x?x256xf32>, tensor<256xf32>) -> tensor<1x?x256xf32>
  %2 = graph.Gelu(%1) {approximate = "tanh"} : (tensor<1x?x256xf32>) -> tensor<1x?x256xf32>
  %3 = graph.MatMul(%2, %wp) : (tensor<1x?x256xf32>, tensor<256x64xf32>) -> tensor<1x?x64xf32>
  %4 = graph.Add(%3, %bp) : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %5 = graph.Add(%x, %4) : (tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  %6 = graph.MatMul(%5, %wf) : (tensor<1x?x64xf32>, tensor<64x256xf32>) -> tensor<1x?x256xf32>
  %7 = graph.Gelu(%6) {approximate = "none"} : (tensor<1x?x256xf32>) -> tensor<1x?x256xf32>
  graph.output %7 {names = ["y"]} : tensor<1x?x256xf32>
}

// -----

// Gemma's GeGLU: tanh GELU of the gate times up on one input -> one region
// with the geglu epilogue.
// CHECK-LABEL: source = "geglu"
// CHECK: %[[G:.*]] = graph.region.gemm(%arg0, %{{.*}}, %{{.*}}) {bias = 0 : i64, epilogue = "geglu", layout = "nk", residual = 0 : i64, rows = 0 : i64, weights = 2 : i64}
// CHECK-NOT: graph.Gelu
// CHECK: graph.output %[[G]]
graph.graph attributes {input_names = ["x"], source = "geglu", meta = "{}"} {
^bb0(%x: tensor<1x?x64xf32>):
  %wg = graph.weight "gate" at "/m.bin" [0, 45056] : tensor<176x64xf32>
  %wu = graph.weight "up" at "/m.bin" [0, 45056] : tensor<176x64xf32>
  %g = graph.Linear(%x, %wg) : (tensor<1x?x64xf32>, tensor<176x64xf32>) -> tensor<1x?x176xf32>
  %u = graph.Linear(%x, %wu) : (tensor<1x?x64xf32>, tensor<176x64xf32>) -> tensor<1x?x176xf32>
  %a = graph.Gelu(%g) {approximate = "tanh"} : (tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  %y = graph.Mul(%a, %u) : (tensor<1x?x176xf32>, tensor<1x?x176xf32>) -> tensor<1x?x176xf32>
  graph.output %y {names = ["y"]} : tensor<1x?x176xf32>
}
