// Builds the graph of a Llama-family HF checkpoint directly from high-level
// ops (Gather, RMSNorm, Linear, Rope, Attention, Silu, Add/Mul, Reshape,
// Transpose), referencing the checkpoint's tensors in place.
//
// Inputs: input_ids [batch, sequence] i64, position_ids [batch, sequence] i64.
// Output: logits [batch, sequence, vocab] f32. No KV cache: the runtime's
// paged cache takes that role once regions are formed.
#pragma once
#include <map>
#include <string>

#include "models/hf_config.h"
#include "ops/graph_def.h"

namespace strata::models {

// Throws strata::Error naming the missing tensor or the shape mismatch.
ops::GraphDef buildLlamaGraph(const LlamaConfig& cfg, const std::map<std::string, ops::WeightRef>& weights,
                              const std::string& source);

// Reads an HF directory: config.json + model.safetensors or the shards named
// by model.safetensors.index.json.
ops::GraphDef loadHfCheckpoint(const std::string& dir);

}  // namespace strata::models
