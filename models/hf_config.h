// The Llama-family subset of a Hugging Face config.json: Llama, Mistral,
// Qwen2 and Gemma share one architecture (pre-norm decoder, GQA,
// rotate-half RoPE, gated MLP); they differ in q/k/v bias, tied embeddings
// and defaults, and Gemma in its norms (weight 1 + w), its embedding
// (scaled by sqrt(hidden_size)) and its MLP's activation (tanh GELU).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::models {

struct LlamaConfig {
  std::string modelType;  // llama | mistral | qwen2 | gemma
  int64_t hiddenSize = 0, intermediateSize = 0, numLayers = 0, numHeads = 0, numKvHeads = 0, headDim = 0, vocabSize = 0;
  int64_t maxPositions = 0;
  double rmsNormEps = 1e-6, ropeTheta = 10000.0;
  bool qkvBias = false, oBias = false, mlpBias = false, tieEmbeddings = false;
  bool gemma() const { return modelType == "gemma"; }  // 1 + w norms, scaled embedding, GeGLU (tanh)
  std::optional<int64_t> bosId, eosId;
};

// Throws strata::Error naming `source` and the field that is missing or wrong.
LlamaConfig parseLlamaConfig(const nlohmann::json& j, const std::string& source);
LlamaConfig readLlamaConfig(const std::string& path);
nlohmann::json toJson(const LlamaConfig& c);  // the same fields as config.json

}  // namespace strata::models
