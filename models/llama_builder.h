// Builds the graph of a Llama-family HF checkpoint directly from high-level
// ops (Gather, RMSNorm, Linear, Rope, Attention, Silu, Add/Mul, Reshape,
// Transpose), referencing the checkpoint's tensors in place.
//
// Inputs: input_ids [batch, sequence] i64, position_ids [batch, sequence] i64.
// Output: logits [batch, sequence, vocab] f32. No KV cache: the runtime's
// paged cache takes that role once regions are formed.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "models/hf_config.h"
#include "ops/graph_def.h"

namespace strata::models {

// Throws strata::Error naming the missing tensor or the shape mismatch;
// `fileName` maps a Hugging Face tensor name to the name the source file
// uses (GGUF's), for those messages (null: the same names), and
// `configName` says where the configuration came from.
ops::GraphDef buildLlamaGraph(const LlamaConfig& cfg, const std::map<std::string, ops::WeightRef>& weights,
                              const std::string& source,
                              const std::function<std::string(const std::string&)>& fileName = nullptr,
                              const std::string& configName = "config.json");

// Reads an HF directory: config.json + model.safetensors or the shards named
// by model.safetensors.index.json.
ops::GraphDef loadHfCheckpoint(const std::string& dir);

}  // namespace strata::models
