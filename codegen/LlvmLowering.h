// The lowering steps every backend shares: the layout passes before its
// tile conversion, memref/vector/scf/arith/math/func down to the LLVM
// dialect after it, and the collection of MLIR diagnostics into error
// messages.
#pragma once

#include <memory>
#include <string>

#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

namespace strata::tile {

// assign-layouts, distribute-to-warps and match-target-size for `target`
// (a uArch row name), on a function pass manager: what turns workgroup
// tile IR into the per-warp, target-sized IR each backend's conversion takes.
void addTileLayoutPasses(mlir::OpPassManager& funcPm, const std::string& target);

// The canonicalizer every backend runs after its tile conversion, walking
// the IR bottom-up. The pass's default top-down walk first hoists every
// constant to its region's entry; on an unrolled kernel (90k ops, 18k
// constants: a large GEMM with its epilogue) that took 5 s of the unit's
// compile, bottom-up 0.2 s, and both give the same PTX and cubin for every
// kernel of the default GPU set and of the Llama-3-8B model's, and the same
// CPU kernels.so for tiny-llama (2026-11-25).
std::unique_ptr<mlir::Pass> createLoweredCanonicalizerPass();

// expand-strided-metadata, lower-affine, scf-to-cf, vector/memref/math/
// arith/func/cf/ub to LLVM, reconcile-unrealized-casts.
void addLowerToLLVMPasses(mlir::OpPassManager& pm, const mlir::ConvertVectorToLLVMPassOptions& vectorOptions);

// Appends "<location>: <message>" lines for every diagnostic of `ctx` to
// `out` while the handler lives.
std::unique_ptr<mlir::ScopedDiagnosticHandler> collectDiagnostics(mlir::MLIRContext& ctx, std::string& out);

}  // namespace strata::tile
