//===- Passes.td - graph normalization passes ----------------------------===//
#ifndef STRATA_GRAPH_PASSES
#define STRATA_GRAPH_PASSES

include "mlir/Pass/PassBase.td"

def GraphInferShapes : Pass<"graph-infer-shapes", "::strata::graph::GraphOp"> {
  let summary = "Infer result shapes (with symbolic dims) and element types";
  let description = [{
    Walks the graph in order and refines every node's result type from its
    operands: broadcasting, matmul, reshape/expand by a known shape operand,
    gathers, reductions and strata's own ops. Dims that are the same symbol
    keep their name (`sequence`); dims that cannot be known become `?`.
  }];
}

def GraphFoldShapeArith : Pass<"graph-fold-shape-arith", "::strata::graph::GraphOp"> {
  let summary = "Fold exporter shape arithmetic into constants and symbolic dims";
  let description = [{
    Exporters compute shapes at run time with Shape/Gather/Concat/Unsqueeze/
    Slice/Cast/Add/Mul/Equal/Where chains. This pass evaluates such chains
    symbolically (each entry an affine sum of input dims and a constant) and
    replaces every fully known shape operand with a `graph.constant` (all
    static) or one `graph.MakeShape` that reads the dims directly, so the
    chains become dead.
  }];
}

def GraphDCE : Pass<"graph-dce", "::strata::graph::GraphOp"> {
  let summary = "Remove nodes, weights and constants whose results are unused";
}

#endif  // STRATA_GRAPH_PASSES
