#include "runtime/devices/cuda/replay.h"

namespace strata::runtime {

using namespace cuda;

CudaGraph::CudaGraph(const Driver& d, const LaunchRecord& r) : d_(&d) {
  check(d.cuGraphCreate(&graph_, 0), "cuGraphCreate");
  std::vector<CUgraphNode> nodes(r.launches.size());
  std::vector<CUgraphNode> deps;
  for (size_t i = 0; i < r.launches.size(); ++i) {
    const LaunchRecord::Launch& l = r.launches[i];
    std::vector<void*> argPtrs = l.argPointers();
    deps.clear();
    for (size_t j : l.deps) deps.push_back(nodes[j]);
    const bool programmaticEdge = l.early && deps.size() == 1 && d.cuGraphAddDependencies;
    const LaunchShape& s = l.shape;
    CUfunction f = static_cast<CUfunction>(const_cast<void*>(l.kernel.native));
    allowSharedBytes(d, f, s.sharedBytes);
    KernelNodeParams p{f,
                       s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1], s.block[2], s.sharedBytes,
                       argPtrs.data(), nullptr, nullptr, nullptr};
    // The driver copies the argument values into the node here.
    check(d.cuGraphAddKernelNode(&nodes[i], graph_, deps.data(), programmaticEdge ? 0 : deps.size(), &p),
          "cuGraphAddKernelNode");
    if (programmaticEdge) {
      check(d.cuGraphAddDependencies(graph_, &deps[0], &nodes[i], &kProgrammaticEdge, 1), "cuGraphAddDependencies");
      ++programmaticEdges_;
    }
  }
  check(d.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
}

CudaGraph::~CudaGraph() {
  if (exec_) d_->cuGraphExecDestroy(exec_);
  if (graph_) d_->cuGraphDestroy(graph_);
}

void CudaGraph::launch() const { check(d_->cuGraphLaunch(exec_, nullptr), "cuGraphLaunch"); }

}  // namespace strata::runtime
