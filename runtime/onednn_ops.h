// The ops outside every region that `--backend cpu` runs through oneDNN
// (Debian's libdnnl: a well-kept library's kernels instead of the ops/
// reference loops; docs/runtime.md, "Ops outside the regions"): MatMul
// (batched, broadcast), Gemm (transposes, a broadcast C, alpha = beta = 1), Softmax, LayerNormalization, Gelu (erf and tanh),
// the elementwise ops oneDNN has (Relu, Tanh, Sigmoid, Exp, Log, Sqrt, Abs,
// Neg, Reciprocal, Pow by one exponent), binary
// Add / Sub / Mul / Div / Max / Min with broadcasting, ReduceMean / Sum /
// Max / Min, Transpose and Concat, on f32 tensors. Everything else (other
// ops, other element types, forms oneDNN lacks such as a broadcast first
// operand of Sub) stays on the reference kernels. Primitives are built once
// per node and input shapes and kept.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/graph_def.h"
#include "ops/tensor.h"

namespace strata::runtime {

class OneDnnOps {
 public:
  OneDnnOps();
  ~OneDnnOps();
  OneDnnOps(const OneDnnOps&) = delete;
  OneDnnOps& operator=(const OneDnnOps&) = delete;

  // Whether oneDNN runs `n` on f32 inputs (its op and attributes; the
  // shapes decide the rest at run time): what `strata inspect --regions`
  // reports as the engine of a node outside the regions.
  static bool covers(const ops::NodeDef& n);
  // `n` on `in` through oneDNN, or nullopt when it cannot run this node on
  // these inputs (not covered, not all f32, a broadcast form oneDNN lacks):
  // the caller runs the reference kernel then.
  std::optional<std::vector<ops::Tensor>> run(const ops::NodeDef& n, const std::vector<ops::Tensor>& in);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime
