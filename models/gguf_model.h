// A GGUF file as a model: its config (models/gguf_config.h) and its
// tensors, under the Hugging Face names the Llama graph builder reads,
// referenced in place in the .gguf file.
#pragma once
#include <string>

#include "models/gguf.h"
#include "ops/graph_def.h"

namespace strata::models {

// Architectures llama and qwen2; tensor types F32, F16, BF16 and llama.cpp's
// block formats of ops/quant.h (WeightRef::quant; others are an error
// naming the tensor and its type). attn_q / attn_k of
// architecture llama carry llama.cpp's interleaved RoPE row order, which
// loading undoes (ops::WeightRef::interleavedRopeHeads). Throws
// strata::Error naming the file and the tensor or key.
ops::GraphDef loadGgufModel(const std::string& path);
ops::GraphDef ggufModel(const GgufFile& f);

}  // namespace strata::models
