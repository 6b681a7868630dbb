// region.gemm's operands and attributes as one struct, so the GEMM patterns
// read a region, change a part and build the new one without re-deriving the
// operand layout (x, weights, biases, residual, rows, norm; see GraphOps.td).
#pragma once
#include <string>

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace strata::graph {

struct GemmParts {
  mlir::Value x;
  llvm::SmallVector<mlir::Value> weights, biases;  // biases empty or one per weight
  mlir::Value residual, rows;
  // The RMSNorm prologue (graph-fuse-gemm-norm): x's rows normalized by
  // this 1-D weight with normEps before the product.
  mlir::Value norm;
  double normEps = 0;
  std::string layout = "kn", epilogue = "none";

  // A region.gemm that is only a product (no epilogue, residual, rows or norm).
  bool plain() const { return epilogue == "none" && !residual && !rows && !norm; }
};

// nullopt when `op` is not a region.gemm.
std::optional<GemmParts> readGemm(mlir::Operation* op);
mlir::Operation* buildGemm(mlir::OpBuilder& b, mlir::Location loc, const GemmParts& g, mlir::TypeRange results);

}  // namespace strata::graph
