// A Llama-family HF checkpoint with random weights (config.json +
// model.safetensors), for tests and benchmarks where real weights cannot be
// downloaded: Mistral-style (no bias, GQA) and Qwen2-style (q/k/v bias,
// tied embeddings) models come from the same config fields the builder reads.
#pragma once
#include <cstdint>
#include <string>

#include "models/hf_config.h"

namespace strata::models {

// Writes dir/config.json and dir/model.safetensors (f32; matrices uniform in
// +-1/sqrt(fan_in), norm weights near 1, biases small); creates dir. The same
// seed gives the same bytes. Returns the number of parameters.
int64_t writeRandomCheckpoint(const LlamaConfig& cfg, const std::string& dir, uint64_t seed);

}  // namespace strata::models
