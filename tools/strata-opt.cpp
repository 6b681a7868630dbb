// strata-opt: mlir-opt for strata's dialects and passes (used by lit tests).
#include "graph/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<strata::graph::GraphDialect>();
  strata::graph::registerGraphPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "strata-opt: strata's graph passes\n", registry));
}
