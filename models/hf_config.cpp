#include "models/hf_config.h"

#include <fstream>

#include "ops/error.h"

namespace strata::models {

using nlohmann::json;

namespace {
int64_t positive(const json& j, const char* key, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) fail("{}: missing field '{}'", src, key);
  if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
    fail("{}: field '{}' must be a positive integer, got {}", src, key, j[key].dump());
  return j[key].get<int64_t>();
}
std::optional<int64_t> tokenId(const json& j, const char* key, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];  // eos may be a list
  if (!v.is_number_integer()) fail("{}: field '{}' must be a token id, got {}", src, key, j[key].dump());
  return v.get<int64_t>();
}
double number(const json& j, const char* key, double dflt, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_number()) fail("{}: field '{}' must be a number, got {}", src, key, j[key].dump());
  return j[key].get<double>();
}
bool flag(const json& j, const char* key, bool dflt, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_boolean()) fail("{}: field '{}' must be true or false, got {}", src, key, j[key].dump());
  return j[key].get<bool>();
}
}  // namespace

LlamaConfig parseLlamaConfig(const json& j, const std::string& src) {
  if (!j.is_object()) fail("{}: expected a JSON object", src);
  LlamaConfig c;
  if (!j.contains("model_type") || !j["model_type"].is_string()) fail("{}: missing field 'model_type'", src);
  c.modelType = j["model_type"].get<std::string>();
  if (c.modelType != "llama" && c.modelType != "mistral" && c.modelType != "qwen2")
    fail("{}: model_type '{}' is not supported (llama, mistral, qwen2)", src, c.modelType);
  c.hiddenSize = positive(j, "hidden_size", src);
  c.intermediateSize = positive(j, "intermediate_size", src);
  c.numLayers = positive(j, "num_hidden_layers", src);
  c.numHeads = positive(j, "num_attention_heads", src);
  c.vocabSize = positive(j, "vocab_size", src);
  c.numKvHeads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                     ? positive(j, "num_key_value_heads", src) : c.numHeads;
  c.headDim = j.contains("head_dim") && !j["head_dim"].is_null() ? positive(j, "head_dim", src) : c.hiddenSize / c.numHeads;
  if (c.numHeads % c.numKvHeads)
    fail("{}: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})", src, c.numHeads, c.numKvHeads);
  if (c.headDim % 2) fail("{}: head_dim ({}) must be even for rotary embeddings", src, c.headDim);
  c.maxPositions = j.contains("max_position_embeddings") ? positive(j, "max_position_embeddings", src) : 4096;
  if (!j.contains("rms_norm_eps")) fail("{}: missing field 'rms_norm_eps'", src);
  c.rmsNormEps = number(j, "rms_norm_eps", 1e-6, src);
  c.ropeTheta = number(j, "rope_theta", 10000.0, src);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {  // transformers >= 5
    const json& rp = j["rope_parameters"];
    c.ropeTheta = number(rp, "rope_theta", c.ropeTheta, src);
    if (rp.contains("rope_type") && rp["rope_type"] != "default")
      fail("{}: rope_type '{}' is not supported (only 'default')", src, rp["rope_type"].dump());
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    fail("{}: rope_scaling is not supported yet", src);
  std::string act = j.value("hidden_act", "silu");
  if (act != "silu") fail("{}: hidden_act '{}' is not supported (silu)", src, act);
  c.qkvBias = flag(j, "attention_bias", c.modelType == "qwen2", src);
  c.oBias = c.modelType == "qwen2" ? false : c.qkvBias;
  c.mlpBias = flag(j, "mlp_bias", false, src);
  c.tieEmbeddings = flag(j, "tie_word_embeddings", false, src);
  c.bosId = tokenId(j, "bos_token_id", src);
  c.eosId = tokenId(j, "eos_token_id", src);
  return c;
}

LlamaConfig readLlamaConfig(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("cannot open '{}'", path);
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
  return parseLlamaConfig(j, path);
}

json toJson(const LlamaConfig& c) {
  json j = {{"model_type", c.modelType}, {"architectures", {c.modelType == "qwen2" ? "Qwen2ForCausalLM"
                                                            : c.modelType == "mistral" ? "MistralForCausalLM" : "LlamaForCausalLM"}},
            {"hidden_size", c.hiddenSize}, {"intermediate_size", c.intermediateSize}, {"num_hidden_layers", c.numLayers},
            {"num_attention_heads", c.numHeads}, {"num_key_value_heads", c.numKvHeads}, {"head_dim", c.headDim},
            {"vocab_size", c.vocabSize}, {"max_position_embeddings", c.maxPositions}, {"rms_norm_eps", c.rmsNormEps},
            {"rope_theta", c.ropeTheta}, {"hidden_act", "silu"}, {"tie_word_embeddings", c.tieEmbeddings},
            {"mlp_bias", c.mlpBias}, {"torch_dtype", "float32"}};
  if (c.modelType != "qwen2") j["attention_bias"] = c.qkvBias;
  if (c.bosId) j["bos_token_id"] = *c.bosId;
  if (c.eosId) j["eos_token_id"] = *c.eosId;
  return j;
}

}  // namespace strata::models
