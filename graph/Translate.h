// GraphDef <-> graph dialect. Import creates one graph.graph op; export
// reads it back (node names travel as NameLoc locations, attributes as MLIR
// attributes). Both throw strata::Error naming the node at fault.
#pragma once
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "ops/graph_def.h"

namespace strata::graph {

class GraphOp;

mlir::OwningOpRef<mlir::ModuleOp> importGraph(mlir::MLIRContext& ctx, const ops::GraphDef& g);
ops::GraphDef exportGraph(GraphOp g);
// A dense constant as a tensor; an attribute as GraphDef JSON.
ops::Tensor tensorFor(mlir::DenseElementsAttr a);
nlohmann::json jsonFor(mlir::Attribute a);
// The single graph.graph op of a module; throws if there is not exactly one.
GraphOp findGraph(mlir::ModuleOp m);

}  // namespace strata::graph
