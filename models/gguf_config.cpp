#include "models/gguf_config.h"

#include <algorithm>

#include "ops/error.h"

namespace strata::models {

LlamaConfig llamaConfigFromGguf(const GgufFile& f) {
  const GgufValue* archValue = f.find("general.architecture");
  if (!archValue || archValue->type != GgufType::String)
    fail("{}: metadata 'general.architecture' is missing or not a string", f.path);
  const std::string arch = archValue->value.get<std::string>();
  if (arch != "llama" && arch != "qwen2")
    fail("{}: general.architecture '{}' is not supported (llama, qwen2)", f.path, arch);
  // The config.json this metadata stands for; parseLlamaConfig checks each
  // field's domain (its errors name the config.json field, the source names
  // the file and the metadata prefix).
  nlohmann::json j = {{"model_type", arch}};
  auto integer = [&](const std::string& key, const char* field, bool required) {
    const GgufValue* v = f.find(arch + "." + key);
    if (!v) {
      if (required) fail("{}: metadata '{}.{}' is missing", f.path, arch, key);
      return false;
    }
    if (!isIntegerType(v->type)) fail("{}: metadata '{}.{}' must be an integer", f.path, arch, key);
    j[field] = v->value;
    return true;
  };
  integer("embedding_length", "hidden_size", true);
  integer("feed_forward_length", "intermediate_size", true);
  integer("block_count", "num_hidden_layers", true);
  integer("attention.head_count", "num_attention_heads", true);
  integer("attention.head_count_kv", "num_key_value_heads", false);
  if (!integer("attention.key_length", "head_dim", false)) integer("rope.dimension_count", "head_dim", false);
  integer("context_length", "max_position_embeddings", false);
  if (!integer("vocab_size", "vocab_size", false)) {
    const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != GgufType::Array)
      fail("{}: neither '{}.vocab_size' nor 'tokenizer.ggml.tokens' gives the vocabulary size", f.path, arch);
    j["vocab_size"] = tokens->value.size();
  }
  for (auto [key, field, required] : {std::tuple{"attention.layer_norm_rms_epsilon", "rms_norm_eps", true},
                                      std::tuple{"rope.freq_base", "rope_theta", false}}) {
    const GgufValue* v = f.find(arch + "." + key);
    if (!v) {
      if (required) fail("{}: metadata '{}.{}' is missing", f.path, arch, key);
      continue;
    }
    if (v->type != GgufType::F32 && v->type != GgufType::F64)
      fail("{}: metadata '{}.{}' must be a float", f.path, arch, key);
    j[field] = v->value;
  }
  if (const GgufValue* s = f.find(arch + ".rope.scaling.type");
      s && !(s->type == GgufType::String && s->value.get<std::string>() == "none"))
    fail("{}: metadata '{}.rope.scaling.type' '{}': RoPE scaling is not supported yet", f.path, arch,
         s->type == GgufType::String ? s->value.get<std::string>() : "(not a string)");
  for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                            std::pair{"tokenizer.ggml.eos_token_id", "eos_token_id"}}) {
    if (const GgufValue* v = f.find(key)) {
      if (!isIntegerType(v->type)) fail("{}: metadata '{}' must be an integer", f.path, key);
      j[field] = v->value;
    }
  }
  const auto has = [&](const std::string& name) {
    return std::any_of(f.tensors.begin(), f.tensors.end(), [&](const GgufTensor& t) { return t.name == name; });
  };
  j["tie_word_embeddings"] = !has("output.weight");
  j["attention_bias"] = arch == "qwen2" || has("blk.0.attn_q.bias");
  return parseLlamaConfig(j, f.path + " (" + arch + ".* metadata)");
}

}  // namespace strata::models
