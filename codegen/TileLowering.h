// What the CPU and NVVM lowerings of tile IR share: block pointers as
// strided memref views (one definition of what a block pointer addresses)
// and element type conversion.
//
// `!tile.ptr<T>` is `memref<?xT>`; a `!tile.block_ptr<tensor<...xT>>` is a
// strided view of that buffer starting at the block: offset = sum(offset_i *
// stride_i), sizes = what is left of the array from the block on (so an
// element (i, j) of the block exists iff i < size0 and j < size1), strides
// as given. A unit innermost stride stays static in the view's type.
#pragma once

#include "codegen/TileDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"

namespace strata::tile {

// The memref type of a tile pointer or block pointer; other types unchanged.
mlir::Type memRefTypeOf(mlir::Type t);

// The view of a `tile.make_block_ptr` (its base already a memref).
mlir::Value lowerMakeBlockPtr(mlir::OpBuilder& b, MakeBlockPtrOp op, mlir::Value base);

// The view of a `tile.advance` of `view` (moved by the op's offsets, sizes
// shrunk by as much).
mlir::Value lowerAdvance(mlir::OpBuilder& b, AdvanceOp op, mlir::Value view);

// `tile.block_lookup`: the table entry (its table already a memref) as an index.
mlir::Value lowerBlockLookup(mlir::OpBuilder& b, BlockLookupOp op);

// `tile.convert` of `src` (a vector) to the vector type `dst`: sitofp from
// i8, extf when widening, truncf (round to nearest even) when narrowing,
// `src` itself when the element types agree.
mlir::Value lowerConvert(mlir::OpBuilder& b, mlir::Location loc, mlir::Value src, mlir::VectorType dst);

// The rewrite both lowerings drive: walks `body` in pre-order; an scf.for's
// loop-carried values take their (already lowered) init's type when that is
// a memref (a view with a static unit stride must stay one), else
// `retype(value)`; every other op goes to `lower` (builder at the op), whose
// non-null result replaces the op's first result (`replaced(old, new)` is
// told first); replaced ops and tile ops without results (stores,
// prefetches, copies, waits, barriers) are erased. Stops at the
// first op `lower` fails on (it has reported the error).
mlir::LogicalResult rewriteTileOps(mlir::OpBuilder& b, mlir::Block* body,
                                   llvm::function_ref<mlir::Type(mlir::Value)> retype,
                                   llvm::function_ref<mlir::FailureOr<mlir::Value>(mlir::Operation*)> lower,
                                   llvm::function_ref<void(mlir::Value, mlir::Value)> replaced = nullptr);

}  // namespace strata::tile
