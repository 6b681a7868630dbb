#include "runtime/cuda_graph.h"

#include <utility>

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
    const bool programmaticEdge = l.programmatic && deps.size() == 1 && d.cuGraphAddDependencies;
    KernelNodeParams p{l.f,       l.grid[0],  l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                       l.sharedBytes, argPtrs.data(), nullptr,   nullptr,   nullptr};
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

CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  std::swap(d_, o.d_);
  std::swap(graph_, o.graph_);
  std::swap(exec_, o.exec_);
  std::swap(programmaticEdges_, o.programmaticEdges_);
  return *this;
}

CudaGraph::~CudaGraph() {
  if (exec_) d_->cuGraphExecDestroy(exec_);
  if (graph_) d_->cuGraphDestroy(graph_);
}

void CudaGraph::launch() const { check(d_->cuGraphLaunch(exec_, nullptr), "cuGraphLaunch"); }

}  // namespace strata::runtime
