// `strata bench kernels`: generated CPU kernels against oneDNN, same run.
#pragma once
#include <string>

namespace strata::tools {
// Prints a table (and writes JSON to jsonPath when not empty); returns the
// exit status.
// `only`: "gemm", "attention" or "" (both).
int benchKernels(const std::string& jsonPath, double secondsPerCase, const std::string& only = "");
}  // namespace strata::tools
