// Graph normalization passes (declared in Passes.td, one per .cpp).
#pragma once
#include <memory>

#include "graph/GraphDialect.h"
#include "mlir/Pass/Pass.h"

namespace strata::graph {

#define GEN_PASS_DECL
#include "graph/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "graph/Passes.h.inc"

}  // namespace strata::graph
