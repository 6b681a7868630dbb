#include "models/gguf_tokenizer.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

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

// llama.cpp's names for Llama 3's pre-tokenizer.
bool isLlama3Pre(const std::string& pre) { return pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3"; }

// A flag of the vocabulary, `fallback` when the file does not say.
bool flag(const GgufFile& f, const std::string& key, bool fallback) {
  return f.find(key) ? f.need(key, GgufType::Bool).value.get<bool>() : fallback;
}

// tokenizer.ggml.model "llama": SentencePiece pieces with scores. llama.cpp
// merges the adjacent pair whose concatenation is the piece of highest
// score (leftmost first); as BPE, every split of a piece into two pieces is
// a merge ranked by the piece's score, equal scores tying (Bpe's
// merge_ranks). Spaces are U+2581, one is put before the text and after
// each special token (add_space_prefix), and characters no piece covers
// become their <0xXX> byte pieces.
void spmModel(const GgufFile& f, const nlohmann::json& tokens, nlohmann::json& j) {
  const GgufValue& scores = f.need("tokenizer.ggml.scores", GgufType::Array);
  if (scores.elemType != GgufType::F32 || scores.value.size() != tokens.size())
    fail("{}: tokenizer.ggml.scores must list one f32 score per token", f.path);
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i].get_ref<const std::string&>(), i);
  // Dense ranks: the highest score ranks 0.
  std::vector<double> distinct;
  for (const auto& v : scores.value) distinct.push_back(v.get<double>());
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  nlohmann::json merges = nlohmann::json::array(), ranks = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i].get_ref<const std::string&>();
    const double score = scores.value[i].get<double>();
    const int64_t rank = std::lower_bound(distinct.begin(), distinct.end(), score, std::greater<>()) - distinct.begin();
    for (size_t cut = 1; cut < t.size(); ++cut) {
      if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
      std::string left = t.substr(0, cut), right = t.substr(cut);
      if (!ids.count(left) || !ids.count(right)) continue;
      merges.push_back({left, right});
      ranks.push_back(rank);
    }
  }
  bool bytes = true;
  for (int b = 0; b < 256 && bytes; ++b) bytes = ids.count(fmt::format("<0x{:02X}>", b)) != 0;
  j["model"]["merges"] = std::move(merges);
  j["model"]["merge_ranks"] = std::move(ranks);
  j["model"]["byte_fallback"] = bytes;
  j["model"]["fuse_unk"] = true;
  int64_t unk = 0;
  if (const GgufValue* u = f.find("tokenizer.ggml.unknown_token_id")) {
    if (!isIntegerType(u->type)) fail("{}: metadata 'tokenizer.ggml.unknown_token_id' must be an integer", f.path);
    unk = u->value.get<int64_t>();
  }
  if (unk >= 0 && unk < (int64_t)tokens.size()) j["model"]["unk_token"] = tokens[unk];
  if (flag(f, "tokenizer.ggml.remove_extra_whitespaces", false))
    fail("{}: tokenizer.ggml.remove_extra_whitespaces is not supported yet", f.path);
  const bool prefix = flag(f, "tokenizer.ggml.add_space_prefix", true);
  nlohmann::json norm = nlohmann::json::array();
  if (prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", std::move(norm)}};
  j["pre_tokenizer"] = nullptr;
  nlohmann::json dec = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}}};
  if (prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  j["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(dec)}};
}

// tokenizer.ggml.model "gpt2": byte-level BPE with merges and the
// pre-tokenizer tokenizer.ggml.pre names (llama.cpp's regexes).
void bpeModel(const GgufFile& f, const std::string& pre, nlohmann::json& j) {
  const GgufValue& merges = f.need("tokenizer.ggml.merges", GgufType::Array);
  if (merges.elemType != GgufType::String) fail("{}: tokenizer.ggml.merges must be a list of strings", f.path);
  nlohmann::json mergeList = nlohmann::json::array();
  for (const nlohmann::json& m : merges.value) mergeList.push_back(m);  // "left right"
  j["model"]["merges"] = std::move(mergeList);
  j["model"]["ignore_merges"] = isLlama3Pre(pre);
  j["model"]["byte_fallback"] = false;
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
  if (isLlama3Pre(pre)) j["pre_tokenizer"] = splits({kLlama3Split});
  else if (pre == "qwen2") j["pre_tokenizer"] = splits({kQwen2Split});
  else if (pre == "gpt-2") j["pre_tokenizer"] = splits({kGpt2Split});
  else if (pre == "smollm") j["pre_tokenizer"] = splits({R"(\p{N})", kGpt2Split});
  else if (pre == "default")  // llama.cpp's regexes for a BPE vocabulary without a known pre-tokenizer
    j["pre_tokenizer"] = splits({R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Split, R"(\p{N}+)", R"([0-9][0-9][0-9])"});
  else
    fail("{}: tokenizer.ggml.pre '{}' is not supported yet (llama-bpe, qwen2, gpt-2, smollm and default are)", f.path,
         pre);
  j["decoder"] = {{"type", "ByteLevel"}};
}

}  // namespace

Tokenizer tokenizerFromGguf(const GgufFile& f) {
  const std::string model = f.need("tokenizer.ggml.model", GgufType::String).value.get<std::string>();
  if (model != "gpt2" && model != "llama")
    fail("{}: tokenizer.ggml.model '{}' is not supported yet (gpt2, byte-level BPE, and llama, SentencePiece, are)",
         f.path, model);
  const GgufValue& tokens = f.need("tokenizer.ggml.tokens", GgufType::Array);
  if (tokens.elemType != GgufType::String) fail("{}: tokenizer.ggml.tokens must be a list of strings", f.path);
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
  j["model"] = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"dropout", nullptr}};
  j["added_tokens"] = std::move(added);
  if (model == "llama") spmModel(f, tokens.value, j);
  else bpeModel(f, pre, j);
  // llama.cpp's default where the file does not say: bos for SentencePiece
  // and for the Llama 3 pre-tokenizer, none for other byte-level BPE.
  const bool addBos = flag(f, "tokenizer.ggml.add_bos_token", model == "llama" || isLlama3Pre(pre));
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
