// The graph dialect (see GraphOps.td). Only graph/ and tools/ include this.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace strata::graph {
// Shared verifier of compute nodes: operand/result counts and the symbolic
// dim encoding of every tensor type.
llvm::LogicalResult verifyNodeOp(mlir::Operation* op, int minIn, int maxIn, int numOut);
// Checks a tensor type's encoding: absent, or one string per dim that is
// empty for static dims.
llvm::LogicalResult verifyEncoding(mlir::Operation* op, mlir::Type t);
}  // namespace strata::graph

#include "graph/GraphOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "graph/GraphOps.h.inc"
