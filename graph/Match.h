// Small helpers shared by the raising and region-formation patterns: reading
// constants, attributes and static dims off graph values. Matching is by
// op name (the graph dialect's mnemonic = ONNX op type).
#pragma once
#include <optional>
#include <vector>

#include "graph/GraphDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

namespace strata::graph {

// The op defining `v` when its graph op type is `name` (e.g. "Mul").
mlir::Operation* defOf(mlir::Value v, llvm::StringRef name);
bool isOp(mlir::Operation* op, llvm::StringRef name);
// A single-element float or int constant (any rank), as double.
std::optional<double> scalarConstant(mlir::Value v);
// An integer attribute, or nullopt.
std::optional<int64_t> intAttrOf(mlir::Operation* op, llvm::StringRef name);
// An integer list given as attribute `name` or as constant operand `operand`
// (newer opsets); nullopt when neither is known.
std::optional<std::vector<int64_t>> intsAttrOrOperand(mlir::Operation* op, llvm::StringRef name, unsigned operand);
// Rank / static dim of a ranked tensor value; nullopt otherwise.
std::optional<int64_t> rankOf(mlir::Value v);
std::optional<int64_t> staticDim(mlir::Value v, int64_t i);  // i may be negative
// Same element type and dims (dynamic dims compare equal; symbol names in
// the encoding are ignored, inference does not always carry them).
bool sameShape(mlir::Value a, mlir::Value b);
// Dim da of a and dim db of b are the same extent: equal static sizes, or
// the same named symbol.
bool sameExtent(mlir::Value a, int64_t da, mlir::Value b, int64_t db);
// Operand i is present (not an omitted optional input, graph.none).
bool hasOperand(mlir::Operation* op, unsigned i);
// A model weight (graph.weight) of rank `rank`.
bool isWeight(mlir::Value v, int64_t rank);
// The graph input name of a block argument, or "".
std::string inputName(mlir::Value v);
// The other operand of a binary op whose operand `x` is known; nullptr when x
// is neither operand.
mlir::Value otherOperand(mlir::Operation* op, mlir::Value x);
// Creates a graph node op by op type with result types and attributes (the
// generic form every graph op accepts), named after `nameFrom`'s location.
mlir::Operation* createNode(mlir::OpBuilder& b, mlir::Location loc, llvm::StringRef opType, mlir::TypeRange results,
                            mlir::ValueRange operands, llvm::ArrayRef<mlir::NamedAttribute> attrs = {});

// A graph.constant of i64 values ([n], or a 0-d tensor when `scalar`).
mlir::Value createI64Constant(mlir::OpBuilder& b, mlir::Location loc, llvm::ArrayRef<int64_t> values, bool scalar = false);

}  // namespace strata::graph
