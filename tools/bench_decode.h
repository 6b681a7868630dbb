// `strata bench decode`: end-to-end decode speed of a model on the CPU
// through the generated kernels, against the memory roofline measured in the
// same run (weight bytes read per decode step over a measured copy
// bandwidth).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::tools {

struct BenchDecodeOpts {
  std::string model;   // HF folder, .gguf or .onnx; empty: a random model from `config`
  std::string config;  // HF config.json for the random model (default models/configs/llama-100m.json)
  std::vector<int64_t> batches = {1, 4};
  int64_t promptTokens = 128, decodeTokens = 32, blockSize = 16;
  std::string jsonPath;
  bool profile = false;  // after the timings: time per region kind of a prefill and a decode step per batch
};

int benchDecode(const BenchDecodeOpts& o);

}  // namespace strata::tools
