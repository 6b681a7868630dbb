// The graph compiler's normalization pipeline behind an MLIR-free interface:
// import the GraphDef into the graph dialect, run two rounds of
// graph-infer-shapes + graph-fold-shape-arith + graph-dce, infer once more,
// export it back.
#pragma once
#include "ops/graph_def.h"

namespace strata::graph {

// Throws strata::Error (with the MLIR diagnostics) when verification or a
// pass fails.
ops::GraphDef normalize(const ops::GraphDef& g);

// The graph in the graph dialect's textual form (what strata-opt reads).
std::string printMlir(const ops::GraphDef& g);

}  // namespace strata::graph
