#include "models/tokenizer.h"

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
    for (const auto& [tok, id] : model.at("vocab").items()) t.idToToken_[id.get<int64_t>()] = tok;
    if (j.contains("added_tokens"))
      for (const json& a : j["added_tokens"]) {
        int64_t id = a.at("id").get<int64_t>();
        t.idToToken_[id] = a.at("content").get<std::string>();
        t.special_[id] = a.value("special", false);
      }
  } catch (const json::exception& e) {
    fail("{}: malformed tokenizer ({})", path, e.what());
  }
  return t;
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
