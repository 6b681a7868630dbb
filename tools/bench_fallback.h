// `strata bench fallback`: the nodes of a model that no region covers, run
// through oneDNN (what --backend cpu does with them: runtime/onednn_ops.h)
// against the ops/ reference kernels, on the same graph and inputs: time per
// op type and the ratio.
#pragma once
#include <cstdint>
#include <string>

namespace strata::tools {

struct BenchFallbackOpts {
  std::string model;  // HF folder, .gguf or .onnx
  int64_t tokens = 128;  // one sequence of this many random token ids
  int64_t reps = 5;      // timed runs (after one warm-up) per engine
  std::string jsonPath;
};

int benchFallback(const BenchFallbackOpts& o);

}  // namespace strata::tools
