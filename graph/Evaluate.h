// Concrete evaluation of a value's backward slice with the ops/ reference
// kernels. Region formation uses it to classify the parts of an export that
// are pure functions of input dims and small inputs (attention masks,
// position tables): evaluate them on probe inputs and compare with the
// closed form (causal, padding, arange, theta^(-2i/D)). No weight is ever read.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "graph/GraphDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "ops/tensor.h"

namespace strata::graph {

class Evaluator {
 public:
  // Graph inputs by name; a slice that reads another input cannot be evaluated.
  void setInput(const std::string& name, ops::Tensor t) { inputs_[name] = std::move(t); }
  // Takes this tensor for `v` instead of evaluating its definition.
  void setValue(mlir::Value v, ops::Tensor t) { memo_[v] = std::move(t); }
  // nullopt when the slice reads a weight, an unknown input, an op without a
  // reference kernel, or a kernel fails on the probe.
  std::optional<ops::Tensor> eval(mlir::Value v);

 private:
  std::map<std::string, ops::Tensor> inputs_;
  llvm::DenseMap<mlir::Value, ops::Tensor> memo_;
};

// The dims an LLM export's inputs take on a probe: batch B, new tokens S,
// cached tokens P. Inputs are recognized by their conventional names
// (input_ids, attention_mask, position_ids, past_key_values.*); static dims
// in their types win over the probe's.
struct ProbeDims {
  int64_t batch = 2, seq = 3, past = 2;
};
// Sets input_ids (zeros), position_ids (past + i), attention_mask (ones, with
// `padRow`'s first key masked when padRow >= 0) and past K/V (zeros) for every
// such input of `g`. Returns the batch actually used (static batch dims win).
int64_t setProbeInputs(Evaluator& e, GraphOp g, const ProbeDims& d, int64_t padRow, ops::Tensor* maskOut = nullptr);

}  // namespace strata::graph
