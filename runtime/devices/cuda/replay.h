// CUDA graphs of recorded launches (runtime/device.h LaunchRecord): a
// decode step launches ~420 small kernels, and replaying them as one graph
// saves the per-launch work on both sides (the GPU executor's step graphs).
#pragma once
#include <cstddef>

#include "runtime/device.h"
#include "runtime/devices/cuda/driver.h"

namespace strata::runtime {

// An instantiated graph of a record's launches. An early launch
// (Device::allowEarlyLaunch) that follows exactly one launch gets a
// programmatic edge (when the driver has cuGraphAddDependencies_v2): as on
// the stream, it is scheduled while its predecessor finishes instead of
// after it.
class CudaGraph final : public Replay {
 public:
  CudaGraph(const cuda::Driver& d, const LaunchRecord& r);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  // Enqueues the whole graph on the default stream.
  void launch() const override;
  size_t earlyEdges() const override { return programmaticEdges_; }

 private:
  const cuda::Driver* d_ = nullptr;
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
  size_t programmaticEdges_ = 0;
};

}  // namespace strata::runtime
