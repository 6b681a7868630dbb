// The graph compiler's pipelines behind an MLIR-free interface (GraphDef in,
// GraphDef out). Both throw strata::Error with the MLIR diagnostics when
// verification or a pass fails.
#pragma once
#include <string>

#include "ops/graph_def.h"

namespace strata::graph {

// Import, then two rounds of graph-infer-shapes + graph-fold-shape-arith +
// graph-dce, then inference once more.
ops::GraphDef normalize(const ops::GraphDef& g);
// What a target's kernels take beyond the regions every backend runs.
struct RegionOptions {
  // graph-fuse-gemm-norm: RMSNorms into the GEMM regions that read them
  // (the CUDA target; the CPU backend refuses the prologue).
  bool normPrologue = false;
  // graph-fuse-rope-kv-write: a layer's q / k RoPE and KV write as one
  // region.rope_kv_write (the CUDA target; the CPU backend refuses it).
  bool ropeKvWrite = false;
};
// normalize, then graph-raise-llm-ops, graph-form-paged-attention,
// graph-form-regions (DESIGN.md steps 2-3) and the fusions `o` asks for:
// the region graph the runtime's paged generator executes (inputs per
// graph-form-paged-attention).
ops::GraphDef formRegions(const ops::GraphDef& g, const RegionOptions& o = {});
// The graph in the graph dialect's textual form (what strata-opt reads).
std::string printMlir(const ops::GraphDef& g);

}  // namespace strata::graph
