// Executor: runs a GraphDef node by node, with the ops/ reference kernels or,
// for nodes that carry a planned kernel (codegen's planCpuKernels), the
// generated kernels that `kernels` resolves.
//
// The graph is checked once at construction (every op known, every input
// produced before it is used, weights readable); run() then binds the graph
// inputs, evaluates the nodes in order and frees each value after its last use.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <memory>

#include "ops/abi.h"
#include "ops/graph_def.h"
#include "runtime/graph_runner.h"
#include "runtime/region_kernels.h"
#include "runtime/weights.h"

namespace strata::runtime {

class Executor final : public GraphRunner {
 public:
  // With `kernels`, every node must carry a planned kernel (no reference op
  // runs then); all of them are resolved here.
  explicit Executor(ops::GraphDef graph, abi::KernelLookup kernels = {});
  const ops::GraphDef& graph() const override { return graph_; }
  // Inputs by graph input name; returns every graph output by name. Errors
  // name the node (name and op) that failed.
  TensorMap run(const TensorMap& inputs) const override;
  // Profiling: GraphRunner's (each node's wall-clock time; nodes run one
  // after another, so nothing else is slowed).
  void setProfiling(bool on) const override { profiling_ = on; }
  std::map<std::string, ProfileRow> takeProfile() const override;


 private:
  ops::GraphDef graph_;
  WeightStore weightStore_;
  TensorMap params_;  // weights and constants
  std::vector<std::vector<std::string>> freeAfter_;  // values dead after node i
  std::unique_ptr<RegionKernels> kernels_;
  mutable bool profiling_ = false;
  mutable std::map<std::string, ProfileRow> profile_;
};

}  // namespace strata::runtime
