// Workload detection and root layouts for assign-layouts (ML-Triton 2.1, 3.1).
#pragma once

#include <string>

#include "codegen/TileDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace strata::tile {

enum class Workload { Gemm, Attention, PagedDecode, Reduction, Elementwise };
enum class Tiling { Horizontal, Vertical, Square, SplitK };

const char* workloadName(Workload w);

struct RootChoice {
  Workload workload;
  mlir::Value root;  // the value whose layout is chosen first (a split_k dot's A operand)
  Tiling tiling;
  bool hinted = false;  // tiling came from a dot's `tiling` attribute
};

// Looks at the kernel's dots, reductions, block-table lookups and stores.
// Fails (with a diagnostic on the function) when there is nothing to lay out.
llvm::FailureOr<RootChoice> detectWorkload(mlir::func::FuncOp f);

// The tiling of a row-wise root (reduction, elementwise): horizontal (rows
// over warps), or vertical for a tile of one row (its columns over them).
Tiling rowTiling(llvm::ArrayRef<int64_t> shape);

// Splits `shape` over `numWarps` warps by `tiling`: horizontal puts every
// warp on dim 0, vertical and split_k (given a dot's A operand: its K) on
// the last dim, square halves the dim with the
// larger per-warp extent (dim 0 on ties) one prime factor at a time, so a
// 256x256 tile on 32 warps gets warpsPerCTA [8, 4], sizePerWarp [32, 64].
// Fails with a message when the shape does not divide.
llvm::FailureOr<WarpLayout> rootLayout(llvm::ArrayRef<int64_t> shape, int64_t numWarps, Tiling tiling,
                                       std::string& why);

}  // namespace strata::tile
