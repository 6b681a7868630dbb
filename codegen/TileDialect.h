// The tile dialect (TileBase.td, TileOps.td). Only codegen/ and tools/ include this.
#pragma once

#include <optional>

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "codegen/TileDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "codegen/TileAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "codegen/TileTypes.h.inc"

#define GET_OP_CLASSES
#include "codegen/TileOps.h.inc"

namespace strata::tile {

// The blocked layout every encoding maps to (paper, Table 3).
struct WarpLayout {
  llvm::SmallVector<int64_t> sizePerWarp, warpsPerCTA, order;
  int64_t numWarps() const;
};

// The equivalent blocked layout of `enc` on a tile of `shape`: blocked is
// itself; dot_op and slice derive from their parent (recursively, the
// parent seeing the same shape, with a unit dim put back for slices).
// Fails (with no diagnostic) on attributes that are not tile encodings.
llvm::FailureOr<WarpLayout> equivalentBlocked(mlir::Attribute enc, llvm::ArrayRef<int64_t> shape);

// Tile values are tiles (ranked tensors) and block pointers to tiles; the
// helpers below look through a block pointer to its tile.
bool isTileValue(mlir::Value v);
// The tile of a tile value (a block pointer's pointee tile).
mlir::RankedTensorType tileTypeOf(mlir::Value v);
// The tile's encoding, or null.
mlir::Attribute encodingOf(mlir::Type t);
// The same tile (or block pointer) type with another encoding (null drops
// it); other types pass through.
mlir::Type withEncoding(mlir::Type t, mlir::Attribute enc);
// The same tile (or block pointer) type with another shape, keeping element
// type and encoding; other types pass through.
mlir::Type withShape(mlir::Type t, llvm::ArrayRef<int64_t> shape);

// A block pointer used only to move data, by `tile.async_copy` or
// `tile.prefetch` (directly or through `tile.advance`): a workgroup-level
// copy's or prefetch's view, which carries no layout, is not split between
// warps or into target-sized pieces (a prefetch of a pointer derived from a
// laid-out one keeps that layout).
bool isCopyPointer(mlir::Value v);
// A pointer or block pointer into a `tile.alloc` buffer (through
// make_block_ptr, advance and scf.for loop-carried values).
bool isLocalPointer(mlir::Value v);
// The `tile.alloc` a local pointer points into (null for other pointers).
AllocOp localBufferOf(mlir::Value v);
// A pointer into a swizzled (`swizzle = 128`) tile.alloc buffer.
bool isSwizzledLocalPointer(mlir::Value v);
// A tile loaded from a swizzled buffer: the operand of a warpgroup dot,
// read by the matrix unit from local memory (never held in registers).
bool isGroupDotOperand(mlir::Value v);

}  // namespace strata::tile
