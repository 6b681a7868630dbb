#include "models/text_steps.h"

#include <map>

#include <nlohmann/json.hpp>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "models/utf8.h"
#include "ops/error.h"

namespace strata::models {

using nlohmann::json;

namespace utf8 {
bool valid(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = (uint8_t)s[i];
    size_t n = length(c);
    if ((c >= 0x80 && c < 0xc2) || c > 0xf4 || i + n > s.size()) return false;
    size_t j = i;
    uint32_t cp = next(s, j);
    if (cp == 0xfffd && !(n == 3 && s.compare(i, 3, "\xef\xbf\xbd") == 0)) return false;
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i = j;
  }
  return true;
}
}  // namespace utf8

namespace {

const std::map<uint32_t, uint8_t>& byteOfChar() {
  static const std::map<uint32_t, uint8_t> m = [] {
    std::map<uint32_t, uint8_t> r;
    uint32_t shifted = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      r[printable ? b : shifted++] = (uint8_t)b;
    }
    return r;
  }();
  return m;
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// A Replace component's pattern: only literal strings are implemented.
std::string stringPattern(const json& j, const std::string& where, const char* component) {
  const json& p = j.at("pattern");
  if (!p.contains("String"))
    fail("{}: {} Replace with pattern {} is not supported (a String pattern is)", where, component, p.dump());
  return p["String"].get<std::string>();
}

// Text in the given Unicode normalization form, through ICU (which works in
// UTF-16: converted in and out with ICU's own UTF-8 routines).
std::string normalizeUnicode(const std::string& text, const std::string& form) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* n = form == "NFC"    ? unorm2_getNFCInstance(&err)
                          : form == "NFD"  ? unorm2_getNFDInstance(&err)
                          : form == "NFKC" ? unorm2_getNFKCInstance(&err)
                                           : unorm2_getNFKDInstance(&err);
  std::u16string in(text.size() + 1, u'\0'), out(text.size() * 4 + 16, u'\0');
  int32_t inLen = 0, outLen = 0, len = 0;
  u_strFromUTF8(in.data(), (int32_t)in.size(), &inLen, text.data(), (int32_t)text.size(), &err);
  if (U_SUCCESS(err)) outLen = unorm2_normalize(n, in.data(), inLen, out.data(), (int32_t)out.size(), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {  // compatibility forms can expand a lot (U+FDFA: 18 units)
    err = U_ZERO_ERROR;
    out.assign(outLen + 1, u'\0');
    outLen = unorm2_normalize(n, in.data(), inLen, out.data(), (int32_t)out.size(), &err);
  }
  std::string r(outLen * 3 + 1, '\0');
  if (U_SUCCESS(err)) u_strToUTF8(r.data(), (int32_t)r.size(), &len, out.data(), outLen, &err);
  if (U_FAILURE(err)) fail("tokenizer normalizer {}: {}", form, u_errorName(err));
  r.resize(len);
  return r;
}

// "<0xAB>" -> 0xAB; -1 for any other token.
int byteToken(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>' || !std::isxdigit((unsigned char)t[3]) ||
      !std::isxdigit((unsigned char)t[4]))
    return -1;
  return std::stoi(t.substr(3, 2), nullptr, 16);
}

}  // namespace

const std::string& byteLevelChar(unsigned char b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    for (const auto& [cp, byte] : byteOfChar()) utf8::append(t[byte], cp);
    return t;
  }();
  return table[b];
}

Normalizer::Normalizer(const json& j, const std::string& where) {
  if (!j.is_null()) add(j, where);
}

std::string componentType(const json& j, const std::string& where, const char* what) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    fail("{}: a {} without a 'type': {}", where, what, j.dump().substr(0, 200));
  return j["type"].get<std::string>();
}

void Normalizer::add(const json& j, const std::string& where) {
  std::string type = componentType(j, where, "normalizer");
  if (type == "Sequence") {
    for (const json& n : j.at("normalizers")) add(n, where);
  } else if (type == "Prepend") {
    steps_.push_back({Step::Prepend, j.at("prepend").get<std::string>(), ""});
  } else if (type == "Replace") {
    steps_.push_back({Step::Replace, stringPattern(j, where, "normalizer"), j.at("content").get<std::string>()});
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    steps_.push_back({Step::Unicode, type, ""});
  } else {
    fail("{}: normalizer '{}' is not supported (Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD are)", where, type);
  }
}

std::string Normalizer::apply(std::string text) const {
  for (const Step& s : steps_) {
    if (s.kind == Step::Prepend) {
      if (!text.empty()) text.insert(0, s.a);
    } else if (s.kind == Step::Replace) {
      replaceAll(text, s.a, s.b);
    } else {
      text = normalizeUnicode(text, s.a);
    }
  }
  return text;
}

Decoder::Decoder(const json& j, const std::string& where) {
  if (j.is_null()) joinWithSpaces_ = true;  // tokenizers' behaviour without a decoder
  else add(j, where);
}

void Decoder::add(const json& j, const std::string& where) {
  std::string type = componentType(j, where, "decoder");
  if (type == "Sequence") {
    for (const json& d : j.at("decoders")) add(d, where);
  } else if (type == "ByteLevel") {
    steps_.push_back({Step::ByteLevel});
  } else if (type == "Replace") {
    steps_.push_back({Step::Replace, stringPattern(j, where, "decoder"), j.at("content").get<std::string>()});
  } else if (type == "ByteFallback") {
    steps_.push_back({Step::ByteFallback});
  } else if (type == "Fuse") {
    steps_.push_back({Step::Fuse});
  } else if (type == "Strip") {
    steps_.push_back({Step::Strip, j.at("content").get<std::string>(), "", j.value("start", 0), j.value("stop", 0)});
  } else if (type == "Metaspace") {
    std::string scheme = j.value("prepend_scheme", "always");
    if (!j.value("add_prefix_space", true)) scheme = "never";  // the older spelling
    steps_.push_back({Step::Metaspace, j.value("replacement", "\u2581"), "", scheme != "never" ? 1 : 0});
  } else {
    fail("{}: decoder '{}' is not supported (Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace are)",
         where, type);
  }
}

std::string Decoder::apply(std::vector<DecodedToken> tokens) const {
  for (const Step& s : steps_) {
    switch (s.kind) {
      case Step::ByteLevel:
        for (DecodedToken& t : tokens) {
          if (t.added) continue;
          std::string bytes;
          for (size_t i = 0; i < t.text.size();) {
            auto b = byteOfChar().find(utf8::next(t.text, i));
            if (b != byteOfChar().end()) bytes.push_back((char)b->second);
          }
          t.text = std::move(bytes);
        }
        break;
      case Step::Replace:
        for (DecodedToken& t : tokens) replaceAll(t.text, s.a, s.b);
        break;
      case Step::ByteFallback: {
        // Runs of <0xXX> tokens become their bytes when those are valid
        // UTF-8, else one U+FFFD per byte (tokenizers' rule).
        std::vector<DecodedToken> out;
        std::string run;
        size_t runTokens = 0;
        auto flush = [&] {
          if (!runTokens) return;
          if (utf8::valid(run)) out.push_back({run});
          else
            for (size_t k = 0; k < runTokens; ++k) out.push_back({"\xef\xbf\xbd"});
          run.clear();
          runTokens = 0;
        };
        for (DecodedToken& t : tokens) {
          int b = t.added ? -1 : byteToken(t.text);
          if (b >= 0) {
            run.push_back((char)b);
            ++runTokens;
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case Step::Fuse: {
        DecodedToken all;
        for (const DecodedToken& t : tokens) all.text += t.text;
        tokens = {all};
        break;
      }
      case Step::Strip:
        for (DecodedToken& t : tokens) {
          for (int k = 0; k < s.start && t.text.compare(0, s.a.size(), s.a) == 0 && !s.a.empty(); ++k)
            t.text.erase(0, s.a.size());
          for (int k = 0; k < s.stop && t.text.size() >= s.a.size() && !s.a.empty() &&
                          t.text.compare(t.text.size() - s.a.size(), s.a.size(), s.a) == 0;
               ++k)
            t.text.erase(t.text.size() - s.a.size());
        }
        break;
      case Step::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string& t = tokens[i].text;
          // tokenizers drops every replacement character of the first
          // token (not only a leading one) unless the scheme is "never".
          replaceAll(t, s.a, i == 0 && s.start ? "" : " ");
        }
        break;
    }
  }
  std::string text;
  for (const DecodedToken& t : tokens) text += (joinWithSpaces_ && !text.empty() ? " " : "") + t.text;
  return text;
}

}  // namespace strata::models
