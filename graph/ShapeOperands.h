// Reading shape operands: integer constants and MakeShape vectors.
#pragma once
#include <optional>
#include <vector>

#include "mlir/IR/Value.h"
#include "ops/graph_def.h"

namespace strata::graph {

// Values of a graph.constant holding integers (any rank), else nullopt.
std::optional<std::vector<int64_t>> constantInts(mlir::Value v);
// A 1-D shape operand as dims: from a constant (static dims; -1 and 0 kept
// as values for Reshape to interpret) or a MakeShape (an entry that is
// exactly one input dim takes that dim, symbol included; entries it cannot
// know come back as {-1, "?"}, distinct from a literal -1 = {-1, ""}).
std::optional<std::vector<ops::Dim>> shapeOperandDims(mlir::Value v);

}  // namespace strata::graph
