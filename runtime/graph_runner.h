// What runs a region graph for the paged model (runtime/paged_generate.h)
// and the scheduler: the CPU executor (runtime/executor.h: reference ops or
// generated CPU kernels) or the GPU one (runtime/cuda_executor.h).
//
// Contract of run(): the inputs are the graph's inputs by name, the integer
// step inputs (ids, positions, tables, ...) as host tensors and the
// kv_cache.* inputs as tensors in cacheDevice()'s memory of cacheDType();
// the outputs (logits) come back as host f32 tensors. Errors name the node.
#pragma once
#include <map>
#include <string>

#include "ops/graph_def.h"
#include "runtime/device.h"

namespace strata::runtime {

using TensorMap = std::map<std::string, ops::Tensor>;

class GraphRunner {
 public:
  virtual ~GraphRunner() = default;
  virtual const ops::GraphDef& graph() const = 0;
  virtual TensorMap run(const TensorMap& inputs) const = 0;
  // Where the KV cache must live, and its element type.
  virtual Device& cacheDevice() const { return cpuDevice(); }
  virtual ops::DType cacheDType() const;  // default: the graph's kv_cache.0 input type (f32 without one)
};

}  // namespace strata::runtime
