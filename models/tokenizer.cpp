#include "models/tokenizer.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ops/error.h"

namespace strata::models {

using nlohmann::json;

namespace {
// GPT-2's byte-level alphabet: printable bytes stand for themselves, the
// others are shifted to code points 256+. Returns code point -> byte.
std::map<uint32_t, uint8_t> unicodeToByte() {
  std::map<uint32_t, uint8_t> m;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    m[printable ? b : next++] = (uint8_t)b;
  }
  return m;
}

// Decodes one UTF-8 code point at s[i], advancing i; invalid bytes map to U+FFFD.
uint32_t nextCodePoint(const std::string& s, size_t& i) {
  auto c = (uint8_t)s[i++];
  int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
  uint32_t cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0f : extra == 1 ? c & 0x1f : c;
  for (int k = 0; k < extra; ++k) {
    if (i >= s.size() || ((uint8_t)s[i] & 0xc0) != 0x80) return 0xfffd;
    cp = (cp << 6) | ((uint8_t)s[i++] & 0x3f);
  }
  return cp;
}
void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back((char)cp);
  } else if (cp < 0x800) {
    out.push_back((char)(0xc0 | (cp >> 6)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back((char)(0xe0 | (cp >> 12)));
    out.push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  } else {
    out.push_back((char)(0xf0 | (cp >> 18)));
    out.push_back((char)(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  }
}

// byte -> its character in GPT-2's alphabet, UTF-8 encoded.
const std::vector<std::string>& byteToUnicode() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    for (const auto& [cp, b] : unicodeToByte()) appendUtf8(t[b], cp);
    return t;
  }();
  return table;
}

// A ByteLevel pre-tokenizer's settings (trim_offsets only affects offsets,
// which strata does not report).
void readByteLevel(const json& p, bool& addPrefixSpace, bool& useRegex) {
  addPrefixSpace = p.value("add_prefix_space", false);
  useRegex = p.value("use_regex", true);
}

// The ids a post-processor puts around the text: TemplateProcessing's
// "single" template (special tokens before / after sequence A); ByteLevel
// adds none; Sequence combines.
void readPostProcessor(const json& p, const std::string& path, std::vector<int64_t>& prefix, std::vector<int64_t>& suffix) {
  if (p.is_null()) return;
  std::string type = p.value("type", "");
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
  std::ifstream f(path);
  if (!f) fail("cannot open tokenizer '{}'", path);
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
  Tokenizer t;
  try {
    const json& model = j.at("model");
    if (model.value("type", "") != "BPE") fail("{}: model type '{}' is not supported (BPE)", path, model.value("type", ""));
    if (model.value("byte_fallback", false))
      fail("{}: a SentencePiece-style BPE (byte_fallback) is not supported; byte-level BPE is", path);
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(k) && !model[k].is_null() && !model[k].get<std::string>().empty())
        fail("{}: BPE option '{}' is not supported", path, k);
    if (!model.at("vocab").is_object() || !model.at("merges").is_array())
      fail("{}: malformed tokenizer (model.vocab must be an object, model.merges a list)", path);
    for (const auto& [tok, id] : model.at("vocab").items()) {
      t.idToToken_[id.get<int64_t>()] = tok;
      t.vocab_[tok] = id.get<int64_t>();
    }
    int64_t rank = 0;
    for (const json& m : model.at("merges")) {
      std::string key = m.is_array() ? m.at(0).get<std::string>() + " " + m.at(1).get<std::string>() : m.get<std::string>();
      t.mergeRank_.emplace(key, rank++);
    }
    t.ignoreMerges_ = model.value("ignore_merges", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto it = t.vocab_.find(model["unk_token"].get<std::string>());
      if (it != t.vocab_.end()) t.unk_ = it->second;
    }
    if (j.contains("added_tokens"))
      for (const json& a : j["added_tokens"]) {
        int64_t id = a.at("id").get<int64_t>();
        std::string content = a.at("content").get<std::string>();
        t.idToToken_[id] = content;
        t.special_[id] = a.value("special", false);
        t.added_.emplace_back(content, id);
      }
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

    if (j.contains("normalizer") && !j["normalizer"].is_null())
      fail("{}: normalizer '{}' is not supported", path, j["normalizer"].value("type", "?"));
    const json& pre = j.value("pre_tokenizer", json());
    std::string preType = pre.is_null() ? "" : pre.value("type", "");
    bool useRegex = false;
    if (preType == "ByteLevel") {
      readByteLevel(pre, t.addPrefixSpace_, useRegex);
      if (useRegex) t.splitter_ = std::make_shared<RegexSplitter>(kGpt2SplitPattern);
    } else if (preType == "Sequence") {
      // Llama 3 / Qwen2: Split(regex, Isolated) then ByteLevel without regex.
      const json& list = pre.at("pretokenizers");
      if (list.size() != 2 || list[0].value("type", "") != "Split" || list[1].value("type", "") != "ByteLevel")
        fail("{}: pre_tokenizer sequence {} is not supported (Split then ByteLevel is)", path, list.dump());
      const json& split = list[0];
      if (split.value("behavior", "") != "Isolated" || split.value("invert", false))
        fail("{}: Split behavior '{}' (invert {}) is not supported", path, split.value("behavior", ""),
             split.value("invert", false));
      const json& pat = split.at("pattern");
      if (!pat.contains("Regex")) fail("{}: Split pattern {} is not supported (Regex is)", path, pat.dump());
      t.splitter_ = std::make_shared<RegexSplitter>(pat["Regex"].get<std::string>());
      readByteLevel(list[1], t.addPrefixSpace_, useRegex);
      if (useRegex) fail("{}: a second regex split after Split is not supported", path);
    } else {
      fail("{}: pre_tokenizer '{}' is not supported (ByteLevel or Split + ByteLevel are)", path, preType);
    }
    if (j.contains("decoder") && !j["decoder"].is_null() && j["decoder"].value("type", "") != "ByteLevel")
      fail("{}: decoder '{}' is not supported (ByteLevel is)", path, j["decoder"].value("type", ""));
    readPostProcessor(j.value("post_processor", json()), path, t.prefix_, t.suffix_);
  } catch (const json::exception& e) {
    fail("{}: malformed tokenizer ({})", path, e.what());
  }
  return t;
}

void Tokenizer::encodePiece(const std::string& piece, std::vector<int64_t>& out) const {
  const auto& bytes = byteToUnicode();
  std::vector<std::string> syms;
  std::string word;
  for (char c : piece) {
    syms.push_back(bytes[(uint8_t)c]);
    word += syms.back();
  }
  if (ignoreMerges_)
    if (auto it = vocab_.find(word); it != vocab_.end()) return out.push_back(it->second);
  // Merge the adjacent pair of lowest rank (leftmost on ties) until none has one.
  for (;;) {
    int64_t bestRank = -1;
    size_t best = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = mergeRank_.find(syms[i] + " " + syms[i + 1]);
      if (it != mergeRank_.end() && (bestRank < 0 || it->second < bestRank)) {
        bestRank = it->second;
        best = i;
      }
    }
    if (bestRank < 0) break;
    syms[best] += syms[best + 1];
    syms.erase(syms.begin() + best + 1);
  }
  for (const auto& s : syms) {
    auto it = vocab_.find(s);
    if (it != vocab_.end()) out.push_back(it->second);
    else if (unk_) out.push_back(*unk_);
    else fail("tokenizer: symbol '{}' is not in the vocabulary and there is no unk token", s);
  }
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool addSpecial) const {
  std::vector<int64_t> ids;
  if (addSpecial) ids = prefix_;
  // Added tokens are matched literally (earliest, then longest) before any
  // pre-tokenization; the text between them is split and BPE-encoded.
  auto encodeText = [&](std::string_view seg) {
    if (seg.empty()) return;
    std::string s(seg);
    if (addPrefixSpace_ && s[0] != ' ') s.insert(s.begin(), ' ');
    if (!splitter_) return encodePiece(s, ids);
    for (std::string_view piece : splitter_->split(s)) encodePiece(std::string(piece), ids);
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t at = std::string::npos;
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& a : added_) {
      size_t f = a.first.empty() ? std::string::npos : text.find(a.first, pos);
      if (f < at) at = f, hit = &a;  // longest first: equal positions keep the longer token
    }
    encodeText(std::string_view(text).substr(pos, (hit ? at : text.size()) - pos));
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
  static const auto table = unicodeToByte();
  std::string out;
  for (int64_t id : ids) {
    auto it = idToToken_.find(id);
    if (it == idToToken_.end()) fail("token id {} is outside the tokenizer's vocabulary", id);
    auto sp = special_.find(id);
    if (sp != special_.end()) {  // added tokens are literal text
      if (!(skipSpecial && sp->second)) out += it->second;
      continue;
    }
    const std::string& s = it->second;
    for (size_t i = 0; i < s.size();) {
      uint32_t cp = nextCodePoint(s, i);
      auto b = table.find(cp);
      if (b != table.end()) out.push_back((char)b->second);
    }
  }
  return out;
}

}  // namespace strata::models
