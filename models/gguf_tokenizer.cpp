#include "models/gguf_tokenizer.h"

#include "ops/error.h"

namespace strata::models {

namespace {

// The split regexes of the pre-tokenizers llama.cpp names (as the models'
// tokenizer.json files spell them).
const char* const kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's (what ByteLevel's use_regex splits by).
const char* const kGpt2Split = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

}  // namespace

Tokenizer tokenizerFromGguf(const GgufFile& f) {
  const std::string model = f.need("tokenizer.ggml.model", GgufType::String).value.get<std::string>();
  if (model != "gpt2")
    fail("{}: tokenizer.ggml.model '{}' is not supported yet (gpt2, byte-level BPE, is)", f.path, model);
  const GgufValue& tokens = f.need("tokenizer.ggml.tokens", GgufType::Array);
  const GgufValue& merges = f.need("tokenizer.ggml.merges", GgufType::Array);
  if (tokens.elemType != GgufType::String || merges.elemType != GgufType::String)
    fail("{}: tokenizer.ggml.tokens and .merges must be lists of strings", f.path);
  std::string pre = "default";
  if (f.find("tokenizer.ggml.pre")) pre = f.need("tokenizer.ggml.pre", GgufType::String).value.get<std::string>();
  const nlohmann::json* types = nullptr;
  if (const GgufValue* t = f.find("tokenizer.ggml.token_type")) {
    if (t->type != GgufType::Array || !isIntegerType(t->elemType) || t->value.size() != tokens.value.size())
      fail("{}: tokenizer.ggml.token_type must list one integer type per token", f.path);
    types = &t->value;
  }

  nlohmann::json j;
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (size_t i = 0; i < tokens.value.size(); ++i) {
    const std::string& t = tokens.value[i].get_ref<const std::string&>();
    if (vocab.contains(t)) fail("{}: tokenizer.ggml.tokens lists '{}' twice (ids {} and {})", f.path, t, vocab[t].get<int64_t>(), i);
    vocab[t] = i;
    const int64_t type = types ? (*types)[i].get<int64_t>() : 1;
    if (type == 3 || type == 4)  // control, user-defined
      added.push_back({{"id", i}, {"content", t}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", type == 4}, {"special", type == 3}});
  }
  nlohmann::json mergeList = nlohmann::json::array();
  for (const nlohmann::json& m : merges.value) mergeList.push_back(m);  // "left right"
  j["model"] = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(mergeList)},
                {"ignore_merges", pre == "llama-bpe"}, {"byte_fallback", false}, {"dropout", nullptr}};
  j["added_tokens"] = std::move(added);
  // llama.cpp splits by its pre-tokenizer's regexes one after another (each
  // splitting the pieces of the one before, keeping every byte), then maps
  // bytes as ByteLevel does: a Sequence of Isolated Splits and a ByteLevel
  // without its own regex.
  auto splits = [](std::initializer_list<const char*> regexes) {
    nlohmann::json seq = nlohmann::json::array();
    for (const char* r : regexes)
      seq.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    seq.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
    return nlohmann::json{{"type", "Sequence"}, {"pretokenizers", std::move(seq)}};
  };
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") j["pre_tokenizer"] = splits({kLlama3Split});
  else if (pre == "qwen2") j["pre_tokenizer"] = splits({kQwen2Split});
  else if (pre == "gpt-2") j["pre_tokenizer"] = splits({kGpt2Split});
  else if (pre == "smollm") j["pre_tokenizer"] = splits({R"(\p{N})", kGpt2Split});
  else if (pre == "default")  // llama.cpp's regexes for a BPE vocabulary without a known pre-tokenizer
    j["pre_tokenizer"] = splits({R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Split, R"(\p{N}+)", R"([0-9][0-9][0-9])"});
  else
    fail("{}: tokenizer.ggml.pre '{}' is not supported yet (llama-bpe, qwen2, gpt-2, smollm and default are)", f.path,
         pre);
  j["decoder"] = {{"type", "ByteLevel"}};
  bool addBos = false;
  if (f.find("tokenizer.ggml.add_bos_token"))
    addBos = f.need("tokenizer.ggml.add_bos_token", GgufType::Bool).value.get<bool>();
  if (addBos) {
    const GgufValue& bos = f.need("tokenizer.ggml.bos_token_id", GgufType::U32);
    const int64_t id = bos.value.get<int64_t>();
    if (id < 0 || id >= (int64_t)tokens.value.size())
      fail("{}: tokenizer.ggml.bos_token_id {} is outside the {} tokens", f.path, id, tokens.value.size());
    const std::string& content = tokens.value[id].get_ref<const std::string&>();
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", {{{"SpecialToken", {{"id", content}, {"type_id", 0}}}},
                                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                           {"special_tokens", {{content, {{"id", content}, {"ids", {id}}, {"tokens", {content}}}}}}};
  }
  return Tokenizer::fromJson(j, f.path + " (tokenizer.ggml.*)");
}

}  // namespace strata::models
