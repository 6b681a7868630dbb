// Recorded kernel launches and the CUDA graphs made of them: a decode step
// launches ~420 small kernels, and replaying them as one graph saves the
// per-launch work on both sides (CudaDevice::record, CudaExecutor).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/cuda_driver.h"

namespace strata::runtime {

// The launches some work enqueued, in order, with their argument bytes and
// dependencies (indices of earlier launches: the previous launch on the
// same branch, and every branch's last launch after a concurrently()).
// Equal records launch the same kernels on the same arguments, so a graph
// made from one replays the other.
struct LaunchRecord {
  struct Launch {
    cuda::CUfunction f = nullptr;
    std::array<unsigned, 3> grid{}, block{};
    unsigned sharedBytes = 0;
    std::vector<uint8_t> args;      // every argument's bytes, at its offset
    std::vector<size_t> argOffsets;  // where each argument starts in `args`
    std::vector<size_t> deps;
    // The kernel waits for its predecessor with griddepcontrol.wait before
    // touching memory (CudaDevice::allowProgrammaticLaunch), so it may be
    // scheduled while that one runs.
    bool programmatic = false;
    bool operator==(const Launch&) const = default;
    // The kernelParams array of cuLaunchKernel / a kernel node: pointers
    // into `args`.
    std::vector<void*> argPointers() const {
      std::vector<void*> p;
      for (size_t off : argOffsets) p.push_back(const_cast<uint8_t*>(args.data() + off));
      return p;
    }
  };
  std::vector<Launch> launches;
  // A concurrently() call: its branches' launches, branch i being
  // [i ? ends[i - 1] : begin, ends[i]).
  struct Fork {
    size_t begin = 0;
    std::vector<size_t> ends;
    bool operator==(const Fork&) const = default;
  };
  std::vector<Fork> forks;
  // False when the recorded work also copied or downloaded (CudaDevice::
  // record with enqueue): its launches alone are not that work.
  bool launchesOnly = true;
  bool operator==(const LaunchRecord&) const = default;
};

// An instantiated graph of a record's launches (owned; move-only). A
// programmatic launch that follows exactly one launch gets a programmatic
// edge (when the driver has cuGraphAddDependencies_v2): as on the stream,
// it is scheduled while its predecessor finishes instead of after it.
class CudaGraph {
 public:
  CudaGraph() = default;
  CudaGraph(const cuda::Driver& d, const LaunchRecord& r);
  CudaGraph(CudaGraph&& o) noexcept { *this = std::move(o); }
  CudaGraph& operator=(CudaGraph&& o) noexcept;
  ~CudaGraph();
  explicit operator bool() const { return exec_ != nullptr; }
  // Enqueues the whole graph on the default stream.
  void launch() const;
  // How many of its edges are programmatic.
  size_t programmaticEdges() const { return programmaticEdges_; }

 private:
  const cuda::Driver* d_ = nullptr;
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
  size_t programmaticEdges_ = 0;
};

}  // namespace strata::runtime
