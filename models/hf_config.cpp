#include "models/hf_config.h"

#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "models/json_input.h"
#include "ops/error.h"

namespace strata::models {

using nlohmann::json;

namespace {
// Sizes past these are not models but mistakes (or attacks): every product
// of them strata forms fits in 64 bits.
constexpr int64_t kMaxDim = int64_t(1) << 20;        // hidden, intermediate, heads, head_dim, layers
constexpr int64_t kMaxVocab = int64_t(1) << 24;      // ids stay exact in f32 (the sampling kernels' indices)
constexpr int64_t kMaxPositions = int64_t(1) << 24;  // context

int64_t positive(const json& j, const char* key, const std::string& src, int64_t max = kMaxDim) {
  if (!j.contains(key) || j[key].is_null()) fail("{}: missing field '{}'", src, key);
  if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0 || j[key].get<int64_t>() > max)
    fail("{}: field '{}' must be an integer in 1..{}, got {}", src, key, max, j[key].dump());
  return j[key].get<int64_t>();
}
// A token id inside the vocabulary; eos may be a list of them (the first
// is the one strata keeps, all are checked).
std::optional<int64_t> tokenId(const json& j, const char* key, int64_t vocab, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const json& f = j[key];
  if (f.is_array() && f.empty()) fail("{}: field '{}' is an empty list (a token id or a list of them)", src, key);
  for (const json& v : f.is_array() ? f : json::array({f}))
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab)
      fail("{}: field '{}' must be token ids in 0..{} (vocab_size {}), got {}", src, key, vocab - 1, vocab, f.dump());
  return (f.is_array() ? f[0] : f).get<int64_t>();
}
double number(const json& j, const char* key, double dflt, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_number()) fail("{}: field '{}' must be a number, got {}", src, key, j[key].dump());
  return j[key].get<double>();
}
// A finite number > 0 (and below `below` when given).
double positiveNumber(const json& j, const char* key, double dflt, const std::string& src, double below = 0) {
  const double v = number(j, key, dflt, src);
  if (!std::isfinite(v) || v <= 0 || (below > 0 && v >= below))
    fail("{}: field '{}' must be a finite number > 0{}, got {}", src, key,
         below > 0 ? fmt::format(" and < {}", below) : "", j.contains(key) ? j[key].dump() : std::to_string(v));
  return v;
}
std::string text(const json& j, const char* key, const std::string& dflt, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_string()) fail("{}: field '{}' must be a string, got {}", src, key, j[key].dump());
  return j[key].get<std::string>();
}
bool flag(const json& j, const char* key, bool dflt, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_boolean()) fail("{}: field '{}' must be true or false, got {}", src, key, j[key].dump());
  return j[key].get<bool>();
}
}  // namespace

namespace {
// GPT-2's keys (transformers' GPT2Config): the sizes under their own names,
// n_inner defaulting to 4 n_embd, tied embeddings always (GPT2LMHeadModel).
LlamaConfig parseGpt2Config(const json& j, const std::string& src) {
  LlamaConfig c;
  c.modelType = "gpt2";
  if (j.contains("architectures") && !j["architectures"].is_null() &&
      j["architectures"] != json::array({"GPT2LMHeadModel"}))
    fail("{}: architectures {} is not supported for gpt2 (GPT2LMHeadModel)", src, j["architectures"].dump());
  c.hiddenSize = positive(j, "n_embd", src);
  c.numLayers = positive(j, "n_layer", src);
  c.numHeads = c.numKvHeads = positive(j, "n_head", src);
  c.vocabSize = positive(j, "vocab_size", src, kMaxVocab);
  c.maxPositions = positive(j, "n_positions", src, kMaxPositions);
  c.intermediateSize = j.contains("n_inner") && !j["n_inner"].is_null() ? positive(j, "n_inner", src) : 4 * c.hiddenSize;
  if (c.hiddenSize % c.numHeads)
    fail("{}: n_embd ({}) is not a multiple of n_head ({})", src, c.hiddenSize, c.numHeads);
  c.headDim = c.hiddenSize / c.numHeads;
  c.rmsNormEps = positiveNumber(j, "layer_norm_epsilon", 1e-5, src, /*below=*/1.0);
  const std::string act = text(j, "activation_function", "gelu_new", src);
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.geluApproximate = "tanh";
  else if (act == "gelu") c.geluApproximate = "none";
  else fail("{}: activation_function '{}' is not supported (gelu_new, gelu_pytorch_tanh, gelu)", src, act);
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"})
    if (flag(j, key, false, src)) fail("{}: {} is not supported", src, key);
  if (!flag(j, "scale_attn_weights", true, src)) fail("{}: scale_attn_weights false is not supported", src);
  if (!flag(j, "tie_word_embeddings", true, src)) fail("{}: an untied GPT-2 lm_head is not supported", src);
  c.tieEmbeddings = true;
  c.bosId = tokenId(j, "bos_token_id", c.vocabSize, src);
  c.eosId = tokenId(j, "eos_token_id", c.vocabSize, src);
  return c;
}
}  // namespace

LlamaConfig parseLlamaConfig(const json& j, const std::string& src) {
  if (!j.is_object()) fail("{}: expected a JSON object", src);
  LlamaConfig c;
  if (!j.contains("model_type") || !j["model_type"].is_string()) fail("{}: missing field 'model_type'", src);
  c.modelType = j["model_type"].get<std::string>();
  if (c.modelType == "gpt2") return parseGpt2Config(j, src);
  if (c.modelType != "llama" && c.modelType != "mistral" && c.modelType != "qwen2" && c.modelType != "gemma" &&
      c.modelType != "phi3")
    fail("{}: model_type '{}' is not supported (llama, mistral, qwen2, gemma, phi3, gpt2)", src, c.modelType);
  if (j.contains("architectures") && !j["architectures"].is_null()) {
    static const std::map<std::string, std::string> kArch = {
        {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"},
        {"GemmaForCausalLM", "gemma"}, {"Phi3ForCausalLM", "phi3"}};
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty()) fail("{}: field 'architectures' must be a list of class names", src);
    for (const json& name : a) {
      auto it = name.is_string() ? kArch.find(name.get<std::string>()) : kArch.end();
      if (it == kArch.end())
        fail("{}: architecture {} is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
             "GemmaForCausalLM, Phi3ForCausalLM)",
             src,
             name.dump());
      if (it->second != c.modelType)
        fail("{}: architecture '{}' does not match model_type '{}'", src, it->first, c.modelType);
    }
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    const std::string dt = text(j, key, "float32", src);
    if (dt != "float32" && dt != "float16" && dt != "bfloat16")
      fail("{}: {} '{}' is not a checkpoint type strata reads (float32, float16, bfloat16)", src, key, dt);
  }
  c.hiddenSize = positive(j, "hidden_size", src);
  c.intermediateSize = positive(j, "intermediate_size", src);
  c.numLayers = positive(j, "num_hidden_layers", src);
  c.numHeads = positive(j, "num_attention_heads", src);
  c.vocabSize = positive(j, "vocab_size", src, kMaxVocab);
  c.numKvHeads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                     ? positive(j, "num_key_value_heads", src) : c.numHeads;
  if (!(j.contains("head_dim") && !j["head_dim"].is_null()) && c.hiddenSize % c.numHeads)
    fail("{}: hidden_size ({}) is not a multiple of num_attention_heads ({}) and there is no head_dim", src,
         c.hiddenSize, c.numHeads);
  c.headDim = j.contains("head_dim") && !j["head_dim"].is_null() ? positive(j, "head_dim", src) : c.hiddenSize / c.numHeads;
  if (c.numHeads % c.numKvHeads)
    fail("{}: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})", src, c.numHeads, c.numKvHeads);
  if (c.headDim % 2) fail("{}: head_dim ({}) must be even for rotary embeddings", src, c.headDim);
  c.maxPositions = j.contains("max_position_embeddings") ? positive(j, "max_position_embeddings", src, kMaxPositions)
                                                          : 4096;
  if (!j.contains("rms_norm_eps")) fail("{}: missing field 'rms_norm_eps'", src);
  c.rmsNormEps = positiveNumber(j, "rms_norm_eps", 1e-6, src, /*below=*/1.0);
  c.ropeTheta = positiveNumber(j, "rope_theta", 10000.0, src);
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {  // transformers >= 5
    const json& rp = j["rope_parameters"];
    if (!rp.is_object()) fail("{}: field 'rope_parameters' must be an object, got {}", src, rp.dump());
    c.ropeTheta = positiveNumber(rp, "rope_theta", c.ropeTheta, src + " rope_parameters");
    const std::string type = text(rp, "rope_type", "default", src + " rope_parameters");
    if (type != "default") fail("{}: rope_type '{}' is not supported (only 'default')", src, type);
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    fail("{}: rope_scaling is not supported yet", src);
  // Gemma's MLP is GELU's tanh form whatever hidden_act says (transformers
  // reads hidden_activation, defaulting to gelu_pytorch_tanh).
  const std::string want = c.gemma() ? "gelu_pytorch_tanh" : "silu";
  std::string act = text(j, c.gemma() && j.contains("hidden_activation") ? "hidden_activation" : "hidden_act", want, src);
  if (c.gemma() && act == "gelu") act = want;  // Gemma 1's config says gelu, its code runs the tanh form
  if (act != want) fail("{}: hidden_act '{}' is not supported ({} for {})", src, act, want, c.modelType);
  if (j.contains("use_bidirectional_attention") && !j["use_bidirectional_attention"].is_null() &&
      flag(j, "use_bidirectional_attention", false, src))
    fail("{}: use_bidirectional_attention is not supported (a causal decoder only)", src);
  c.qkvBias = flag(j, "attention_bias", c.modelType == "qwen2", src);
  c.oBias = c.modelType == "qwen2" ? false : c.qkvBias;
  c.mlpBias = flag(j, "mlp_bias", false, src);
  c.tieEmbeddings = flag(j, "tie_word_embeddings", c.gemma(), src);
  if (c.phi3()) {
    const double f = positiveNumber(j, "partial_rotary_factor", 1.0, src, /*below=*/1.0 + 1e-9);
    const double r = f * (double)c.headDim;
    if (r != std::floor(r) || (int64_t)r % 2)
      fail("{}: partial_rotary_factor {} gives {} rotary dims of head_dim {} (must be an even integer)", src, f, r,
           c.headDim);
    c.rotaryDim = (int64_t)r == c.headDim ? 0 : (int64_t)r;
    // Sliding-window attention is the same as full attention up to the
    // window: contexts stop there.
    if (j.contains("sliding_window") && !j["sliding_window"].is_null())
      c.maxPositions = std::min(c.maxPositions, positive(j, "sliding_window", src, kMaxPositions));
  }
  c.bosId = tokenId(j, "bos_token_id", c.vocabSize, src);
  c.eosId = tokenId(j, "eos_token_id", c.vocabSize, src);
  return c;
}

LlamaConfig readLlamaConfig(const std::string& path) { return parseLlamaConfig(readJsonFile(path), path); }

json toJson(const LlamaConfig& c) {
  if (c.gpt2()) {
    json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"n_embd", c.hiddenSize},
              {"n_layer", c.numLayers}, {"n_head", c.numHeads}, {"n_inner", c.intermediateSize},
              {"vocab_size", c.vocabSize}, {"n_positions", c.maxPositions}, {"layer_norm_epsilon", c.rmsNormEps},
              {"activation_function", c.geluApproximate == "tanh" ? "gelu_new" : "gelu"},
              {"tie_word_embeddings", true}, {"torch_dtype", "float32"}};
    if (c.bosId) j["bos_token_id"] = *c.bosId;
    if (c.eosId) j["eos_token_id"] = *c.eosId;
    return j;
  }
  json j = {{"model_type", c.modelType}, {"architectures", {c.modelType == "qwen2"     ? "Qwen2ForCausalLM"
                                                            : c.modelType == "mistral" ? "MistralForCausalLM"
                                                            : c.gemma()                ? "GemmaForCausalLM"
                                                            : c.phi3()                 ? "Phi3ForCausalLM"
                                                                                       : "LlamaForCausalLM"}},
            {"hidden_size", c.hiddenSize}, {"intermediate_size", c.intermediateSize}, {"num_hidden_layers", c.numLayers},
            {"num_attention_heads", c.numHeads}, {"num_key_value_heads", c.numKvHeads}, {"head_dim", c.headDim},
            {"vocab_size", c.vocabSize}, {"max_position_embeddings", c.maxPositions}, {"rms_norm_eps", c.rmsNormEps},
            {"rope_theta", c.ropeTheta}, {"hidden_act", c.gemma() ? "gelu_pytorch_tanh" : "silu"},
            {"tie_word_embeddings", c.tieEmbeddings},
            {"mlp_bias", c.mlpBias}, {"torch_dtype", "float32"}};
  if (c.modelType != "qwen2") j["attention_bias"] = c.qkvBias;
  if (c.rotaryDim) j["partial_rotary_factor"] = (double)c.rotaryDim / (double)c.headDim;
  if (c.bosId) j["bos_token_id"] = *c.bosId;
  if (c.eosId) j["eos_token_id"] = *c.eosId;
  return j;
}

}  // namespace strata::models
