// The Llama-family subset of a Hugging Face config.json: Llama, Mistral,
// Qwen2 and Gemma share one architecture (pre-norm decoder, GQA,
// rotate-half RoPE, gated MLP); they differ in q/k/v bias, tied embeddings
// and defaults, and Gemma in its norms (weight 1 + w), its embedding
// (scaled by sqrt(hidden_size)) and its MLP's activation (tanh GELU).
// Phi-3 is Llama with q/k/v and gate/up fused into one weight each (read
// as row ranges of it, no copy) and, where partial_rotary_factor < 1, RoPE
// on part of each head. GPT-2 (model_type gpt2) fills the same struct from its own keys (n_embd,
// n_layer, n_head, ...): LayerNorm with bias, learned position embeddings,
// Conv1D projections ([in, out] weights with biases, q/k/v fused) and a
// GELU MLP, tied embeddings; models/llama_builder.cpp builds it apart.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::models {

struct LlamaConfig {
  std::string modelType;  // llama | mistral | qwen2 | gemma | phi3 | gpt2
  int64_t hiddenSize = 0, intermediateSize = 0, numLayers = 0, numHeads = 0, numKvHeads = 0, headDim = 0, vocabSize = 0;
  int64_t maxPositions = 0;
  double rmsNormEps = 1e-6, ropeTheta = 10000.0;  // gpt2: rmsNormEps is LayerNorm's epsilon
  bool qkvBias = false, oBias = false, mlpBias = false, tieEmbeddings = false;
  bool gemma() const { return modelType == "gemma"; }  // 1 + w norms, scaled embedding, GeGLU (tanh)
  bool gpt2() const { return modelType == "gpt2"; }
  bool phi3() const { return modelType == "phi3"; }  // fused qkv_proj / gate_up_proj rows, partial rotary
  int64_t rotaryDim = 0;  // RoPE on each head's first rotaryDim dims (partial_rotary_factor); 0: all
  std::string geluApproximate = "tanh";  // gpt2: the MLP's GELU, "tanh" (gelu_new) or "none" (erf)
  std::optional<int64_t> bosId, eosId;
};

// Throws strata::Error naming `source` and the field that is missing or wrong.
LlamaConfig parseLlamaConfig(const nlohmann::json& j, const std::string& source);
LlamaConfig readLlamaConfig(const std::string& path);
nlohmann::json toJson(const LlamaConfig& c);  // the same fields as config.json

}  // namespace strata::models
