#include "models/tokenizer.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/gguf_tokenizer.h"
#include "models/json_input.h"
#include "models/utf8.h"
#include "ops/error.h"

namespace strata::models {

using nlohmann::json;

namespace {

// The ids a post-processor puts around the text: TemplateProcessing's
// "single" template (special tokens before / after sequence A); ByteLevel
// adds none; Sequence combines.
void readPostProcessor(const json& p, const std::string& path, std::vector<int64_t>& prefix, std::vector<int64_t>& suffix) {
  if (p.is_null()) return;
  std::string type = componentType(p, path, "post_processor");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    for (const json& q : p.at("processors")) readPostProcessor(q, path, prefix, suffix);
    return;
  }
  if (type != "TemplateProcessing") fail("{}: post_processor '{}' is not supported", path, type);
  bool seenText = false;
  for (const json& item : p.at("single")) {
    if (item.contains("Sequence")) {
      seenText = true;
    } else if (item.contains("SpecialToken")) {
      std::string id = item["SpecialToken"].at("id").get<std::string>();
      const json& tok = p.at("special_tokens").at(id);
      for (const json& i : tok.at("ids")) (seenText ? suffix : prefix).push_back(i.get<int64_t>());
    } else {
      fail("{}: post_processor template item {} is not supported", path, item.dump());
    }
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) {
  if (!std::ifstream(path)) fail("cannot open tokenizer '{}'", path);
  if (isGgufPath(path)) return tokenizerFromGguf(readGguf(path));
  return fromJson(readJsonFile(path), path);
}

Tokenizer Tokenizer::parse(const std::string& text, const std::string& path) {
  return fromJson(parseJsonText(text, path), path);
}

Tokenizer Tokenizer::fromJson(const json& j, const std::string& path) {
  if (!j.is_object()) fail("{}: expected a JSON object", path);
  Tokenizer t;
  t.path_ = path;
  try {
    const json& model = j.at("model");
    if (model.value("type", "") != "BPE") fail("{}: model type '{}' is not supported (BPE)", path, model.value("type", ""));
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(k) && !model[k].is_null() && !model[k].get<std::string>().empty())
        fail("{}: BPE option '{}' is not supported", path, k);
    if (model.contains("dropout") && !model["dropout"].is_null())
      fail("{}: BPE dropout is not supported (encoding must be deterministic)", path);
    if (!model.at("vocab").is_object() || !model.at("merges").is_array())
      fail("{}: malformed tokenizer (model.vocab must be an object, model.merges a list)", path);
    std::unordered_map<std::string, int64_t> vocab;
    for (const auto& [tok, id] : model.at("vocab").items()) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() >= (uint64_t)kMaxTokenId)
        fail("{}: model.vocab: token '{}' has id {}; ids are integers in 0..{}", path, tok, id.dump(), kMaxTokenId - 1);
      auto [at, fresh] = t.idToToken_.emplace(id.get<int64_t>(), tok);
      if (!fresh) fail("{}: model.vocab: id {} is given to both '{}' and '{}'", path, id.get<int64_t>(), at->second, tok);
      vocab[tok] = id.get<int64_t>();
    }
    std::vector<std::pair<std::string, std::string>> merges;
    for (const json& m : model.at("merges")) {
      if (m.is_array()) {
        merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      } else {  // the older "left right" spelling
        std::string pair = m.get<std::string>();
        size_t space = pair.find(' ', 1);
        if (space == std::string::npos) fail("{}: merge '{}' is not two symbols", path, pair);
        merges.emplace_back(pair.substr(0, space), pair.substr(space + 1));
      }
    }
    // strata's extension for GGUF SentencePiece vocabularies: a rank per
    // merge (equal ranks tie; models/bpe.h).
    std::vector<int64_t> ranks;
    if (model.contains("merge_ranks")) {
      const json& r = model["merge_ranks"];
      if (!r.is_array() || r.size() != merges.size())
        fail("{}: model.merge_ranks must list one integer per merge", path);
      for (const json& x : r) {
        if (!x.is_number_integer()) fail("{}: model.merge_ranks must list one integer per merge", path);
        ranks.push_back(x.get<int64_t>());
      }
    }
    std::optional<int64_t> unk;
    if (model.contains("unk_token") && model["unk_token"].is_string())
      if (auto it = vocab.find(model["unk_token"].get<std::string>()); it != vocab.end()) unk = it->second;
    BpeOptions options;
    options.byteFallback = model.value("byte_fallback", false);
    options.fuseUnk = model.value("fuse_unk", false);
    options.ignoreMerges = model.value("ignore_merges", false);
    t.bpe_ = std::make_unique<Bpe>(std::move(vocab), merges, unk, options, path,
                                   model.contains("merge_ranks") ? &ranks : nullptr);

    if (j.contains("added_tokens") && !j["added_tokens"].is_null() && !j["added_tokens"].is_array())
      fail("{}: added_tokens must be a list", path);
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const json& a : j["added_tokens"]) {
        if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
            a["id"].get<uint64_t>() >= (uint64_t)kMaxTokenId)
          fail("{}: added token {}: 'id' must be an integer in 0..{}", path, a.dump(), kMaxTokenId - 1);
        if (!a.contains("content") || !a["content"].is_string() || a["content"].get<std::string>().empty())
          fail("{}: added token {}: 'content' must be a non-empty string", path, a.dump());
        int64_t id = a.at("id").get<int64_t>();
        std::string content = a.at("content").get<std::string>();
        t.idToToken_[id] = content;
        t.special_[id] = a.value("special", false);
        t.added_.emplace_back(content, id);
      }
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

    t.normalizer_ = Normalizer(j.value("normalizer", json()), path);
    t.preTokenizer_ = PreTokenizer(j.value("pre_tokenizer", json()), path);
    if (options.byteFallback && t.preTokenizer_.byteLevel())
      fail("{}: byte_fallback with a ByteLevel pre-tokenizer is not supported", path);
    t.decoder_ = Decoder(j.value("decoder", json()), path);
    readPostProcessor(j.value("post_processor", json()), path, t.prefix_, t.suffix_);
  } catch (const json::exception& e) {
    fail("{}: malformed tokenizer ({})", path, e.what());
  }
  return t;
}

void Tokenizer::encodeSegment(const std::string& segment, bool atStart, std::vector<int64_t>& out) const {
  for (const std::string& piece : preTokenizer_.apply(normalizer_.apply(segment), atStart)) bpe_->encodeWord(piece, out);
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool addSpecial) const {
  if (!utf8::valid(text)) {
    size_t bad = 0;
    while (bad < text.size() && utf8::valid(text.substr(0, bad + utf8::length((uint8_t)text[bad]))))
      bad += utf8::length((uint8_t)text[bad]);
    fail("tokenizer: the text is not valid UTF-8 (at byte offset {})", bad);
  }
  std::vector<int64_t> ids;
  if (addSpecial) ids = prefix_;
  // Added tokens are matched literally (earliest, then longest) before
  // normalization and pre-tokenization; the text between them is encoded.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = std::string::npos;
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& a : added_) {
      size_t f = a.first.empty() ? std::string::npos : text.find(a.first, pos);
      if (f < at) at = f, hit = &a;  // longest first: equal positions keep the longer token
    }
    size_t end = hit ? at : text.size();
    if (end > pos) encodeSegment(text.substr(pos, end - pos), pos == 0, ids);
    if (!hit) break;
    ids.push_back(hit->second);
    pos = at + hit->first.size();
  }
  if (addSpecial) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::optional<int64_t> Tokenizer::tokenId(const std::string& content) const {
  for (const auto& [text, id] : added_)
    if (text == content) return id;
  return std::nullopt;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skipSpecial) const {
  std::vector<DecodedToken> tokens;
  for (int64_t id : ids) {
    auto it = idToToken_.find(id);
    if (it == idToToken_.end()) fail("{}: token id {} is outside the tokenizer's vocabulary", path_, id);
    auto sp = special_.find(id);
    bool added = sp != special_.end();
    if (added && skipSpecial && sp->second) continue;
    tokens.push_back({it->second, added});
  }
  return decoder_.apply(std::move(tokens));
}

}  // namespace strata::models
