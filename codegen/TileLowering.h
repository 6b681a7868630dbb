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

// `tile.convert` of `src` (a vector) to the vector type `dst`: extf when
// widening, truncf (round to nearest even) when narrowing, `src` itself
// when the element types agree.
mlir::Value lowerConvert(mlir::OpBuilder& b, mlir::Location loc, mlir::Value src, mlir::VectorType dst);

}  // namespace strata::tile
