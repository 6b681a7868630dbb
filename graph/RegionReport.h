// What region formation made of a model, for `strata inspect --regions`:
// every region with its kind, layer, shapes (symbolic), FLOPs per token and
// bytes, and every node that is not in a region (fallback), by op and name.
// MLIR-free: it reads the GraphDef graph::formRegions returns.
#pragma once
#include <nlohmann/json.hpp>

#include "ops/graph_def.h"

namespace strata::graph {

// {"regions": [{"kind", "detail", "stage", "layer", "nodes", "inputs",
//   "outputs", "flops", "flops_unit", "weight_bytes", ...}], "fallback":
//   [{"op", "name"}], "layers": n, "counts": {kind: n}}.
// Layers follow the residual stream: the k-th residual GEMM closes half-layer
// k, so a region's layer is (residual GEMMs before it) / 2; regions after the
// last layer are stage "head", the embedding is stage "embed".
nlohmann::json describeRegions(const ops::GraphDef& g);

}  // namespace strata::graph
