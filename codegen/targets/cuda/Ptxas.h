// CUDA's assembler, when this machine has it: the GPU artifacts carry a
// cubin beside their PTX so the runtime loads machine code instead of
// having the driver JIT the PTX in every new process (the 16 MB kernel set
// took about 130 s on the H100). No MLIR here.
#pragma once

#include <optional>
#include <string>

namespace strata::tile {

// The ptxas to use: $STRATA_PTXAS when set ("off" or empty: none), else
// `ptxas` on PATH, else /usr/local/cuda/bin/ptxas; nullopt when there is
// none (the artifact then holds PTX only).
std::optional<std::string> findPtxas();

// Assembles `ptxFile` for `chip` (e.g. sm_90a) into `cubinFile` on one
// thread; throws strata::Error with ptxas's output when it fails. A kernel
// set assembles each compile unit's module as soon as it is compiled, beside
// the other units' compiles (codegen/targets/cuda/KernelSet.cpp), not the
// whole set at the end.
void assembleCubin(const std::string& ptxas, const std::string& ptxFile, const std::string& chip,
                   const std::string& cubinFile);

}  // namespace strata::tile
