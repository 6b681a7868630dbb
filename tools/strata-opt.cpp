// strata-opt: mlir-opt for strata's dialects and passes (used by lit tests).
#include "codegen/Passes.h"
#include "graph/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<strata::graph::GraphDialect, strata::tile::TileDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::LLVM::LLVMDialect>();  // legalize-bf16-storage reads the LLVM dialect
  strata::graph::registerGraphPasses();
  strata::tile::registerTilePasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "strata-opt: strata's graph and tile IR passes\n", registry));
}
