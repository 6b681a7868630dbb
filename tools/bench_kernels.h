// `strata bench kernels`: generated CPU kernels against oneDNN, same run.
#pragma once
#include <string>

namespace strata::tools {
// Prints a table (and writes JSON to jsonPath when not empty); returns the
// exit status.
int benchKernels(const std::string& jsonPath, double secondsPerCase);
}  // namespace strata::tools
