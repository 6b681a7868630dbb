// Conversions between GraphDef dims/dtypes and MLIR tensor types with the
// graph dialect's symbolic-dim encoding.
#pragma once
#include <optional>
#include <vector>

#include "mlir/IR/BuiltinTypes.h"
#include "ops/graph_def.h"

namespace strata::graph {

// nullopt for unranked tensors.
std::optional<std::vector<ops::Dim>> getDims(mlir::Type t);
// A ranked tensor type; the encoding is dropped when no dim is named.
mlir::RankedTensorType makeTensorType(mlir::MLIRContext* ctx, const std::vector<ops::Dim>& dims, mlir::Type elt);
mlir::Type elementTypeFor(mlir::MLIRContext* ctx, ops::DType t);
// Throws strata::Error for element types outside ops::DType.
ops::DType dtypeFor(mlir::Type elt);

}  // namespace strata::graph
