//===- TileBase.td - tile dialect: dialect, layout encodings, types ------===//
//
// Tiles are builtin ranked tensors with a static shape; their encoding (when
// present) is one of the layout encodings below and says how the workgroup's
// tile is split between warps (ML-Triton, section 2). Block pointers name a
// rectangular block of a strided array in global memory.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TILE_BASE
#define STRATA_TILE_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/TensorEncoding.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::strata::tile";
  let summary = "Workgroup-level tile programs with workload-aware layout encodings";
  let description = [{
    A kernel is a `func.func` over `!tile.ptr` arguments and index scalars.
    It starts at workgroup level (tiles are what one workgroup computes,
    encodings absent), gets layout encodings from `assign-layouts`, becomes
    per-warp IR in `distribute-to-warps` (tiles are what one warp computes,
    offsets depend on `tile.warp_id`) and intrinsic-sized IR in
    `match-target-size` (every load, dot and store fits the target's uArch
    table). Elementwise math on tiles uses the arith and math dialects.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect", "::mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// Layout encodings
//===----------------------------------------------------------------------===//

class Tile_Encoding<string name, string mnemonic_>
    : AttrDef<Tile_Dialect, name, [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = mnemonic_;
  let hasCustomAssemblyFormat = 1;
}

def Tile_BlockedEncoding : Tile_Encoding<"BlockedEncoding", "blocked"> {
  let summary = "Each warp owns a sizePerWarp block; warps form a warpsPerCTA grid";
  let description = [{
    `#tile.blocked<{sizePerWarp = [32, 64], warpsPerCTA = [8, 4], order = [1, 0]}>`:
    warp (i, j) of the 8x4 grid computes the 32x64 block at (32*i, 64*j).
    `order` lists dims fastest-varying first (memory order of the block).
    Per dim, the tile is either split over the warps
    (shape = sizePerWarp * warpsPerCTA) or the same block is held by every
    warp of that dim (shape = sizePerWarp).
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$sizePerWarp,
                        ArrayRefParameter<"int64_t">:$warpsPerCTA,
                        ArrayRefParameter<"int64_t">:$order);
  let genVerifyDecl = 1;
}

def Tile_DotOperandEncoding : Tile_Encoding<"DotOperandEncoding", "dot_op"> {
  let summary = "Layout of operand opIdx (0 = A, 1 = B) of a dot whose result has `parent`";
  let description = [{
    Equivalent blocked layout (paper, Table 3): for A, sizePerWarp =
    [parent[0], K] (each warp reads the full K extent of its rows); for B,
    sizePerWarp = [K, parent[1]]; warpsPerCTA is the parent's. Parents nest:
    in FlashAttention-2, K is `dot_op<{opIdx = 1, parent = dot_op<{opIdx = 0, ...}>}>`.
  }];
  let parameters = (ins "unsigned":$opIdx, "::mlir::Attribute":$parent);
  let genVerifyDecl = 1;
}

def Tile_SliceEncoding : Tile_Encoding<"SliceEncoding", "slice"> {
  let summary = "The parent layout with dim removed (results of reductions)";
  let description = [{
    Equivalent blocked layout: the parent's with entry `dim` erased from
    sizePerWarp and warpsPerCTA (paper, Table 3).
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Tile_PtrType : TypeDef<Tile_Dialect, "Ptr"> {
  let mnemonic = "ptr";
  let summary = "Pointer to global memory holding elements of one type";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Tile_BlockPtrType : TypeDef<Tile_Dialect, "BlockPtr"> {
  let mnemonic = "block_ptr";
  let summary = "A block of a strided array: base, shape, strides, offsets; block shape in the tile type";
  let parameters = (ins "::mlir::RankedTensorType":$tileType);
  let assemblyFormat = "`<` $tileType `>`";
  let genVerifyDecl = 1;
}

def Tile_Tile : TensorOf<[F16, BF16, F32, I32, I16, I8, I1]>;
// What tile.convert converts: the float types, i8 (signed: quantized
// weights' and activations' values) and i32 (integer dot sums).
def Tile_ConvertibleTile : TensorOf<[F16, BF16, F32, I8, I32]>;
def Tile_FloatTile : TensorOf<[F16, BF16, F32]>;
def Tile_ConvertedTile : TensorOf<[F16, BF16, F32, I8]>;

#endif  // STRATA_TILE_BASE
