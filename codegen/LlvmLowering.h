// The lowering steps every backend shares after its tile conversion:
// memref/vector/scf/arith/math/func down to the LLVM dialect, and the
// collection of MLIR diagnostics into error messages.
#pragma once

#include <memory>
#include <string>

#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

namespace strata::tile {

// expand-strided-metadata, lower-affine, scf-to-cf, vector/memref/math/
// arith/func/cf/ub to LLVM, reconcile-unrealized-casts.
void addLowerToLLVMPasses(mlir::OpPassManager& pm, const mlir::ConvertVectorToLLVMPassOptions& vectorOptions);

// Appends "<location>: <message>" lines for every diagnostic of `ctx` to
// `out` while the handler lives.
std::unique_ptr<mlir::ScopedDiagnosticHandler> collectDiagnostics(mlir::MLIRContext& ctx, std::string& out);

}  // namespace strata::tile
