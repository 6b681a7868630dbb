// `strata devices`: what this machine can run strata's kernels on, one
// line a device kind (the host CPU and its kernel target; CUDA GPUs; Intel
// GPUs through Level Zero), or why a kind has none.
#pragma once
#include <string>

namespace strata::tools {

// The host CPU's model name (/proc/cpuinfo), "unknown CPU" without one.
std::string cpuModel();

// Prints the listing (JSON with `json`); returns the exit status (0: a
// kind without devices is an answer, not an error).
int devicesCommand(bool json);

}  // namespace strata::tools
