// The text steps around a tokenizer.json model: the normalizer (before
// pre-tokenization) and the decoder (ids' token strings back to text), each
// a list of Hugging Face tokenizers' components that strata implements.
// Construction throws strata::Error naming the file and the component that
// is not implemented.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata::models {

// GPT-2's byte alphabet (ByteLevel pre-tokenizer and decoder): byte b is
// the character byteLevelChar(b), UTF-8 encoded; printable bytes stand for
// themselves, the rest are shifted to code points 256 and up.
const std::string& byteLevelChar(unsigned char b);

// A tokenizer.json component's "type" (required, a string); throws naming
// `where` and what the component is ("normalizer", "pre_tokenizer", ...).
std::string componentType(const nlohmann::json& j, const std::string& where, const char* what);

class Normalizer {
 public:
  Normalizer() = default;
  // `j` is the tokenizer.json "normalizer" value (null: identity).
  // Implemented: Sequence, Prepend, Replace (String pattern), NFC, NFD,
  // NFKC, NFKD (through ICU).
  Normalizer(const nlohmann::json& j, const std::string& where);
  std::string apply(std::string text) const;

 private:
  struct Step {
    enum Kind { Prepend, Replace, Unicode } kind;
    std::string a, b;  // Prepend: a; Replace: a -> b; Unicode: a = form name
  };
  void add(const nlohmann::json& j, const std::string& where);
  std::vector<Step> steps_;
};

// One token on its way back to text; added tokens are literal text, which
// the byte-level step leaves alone.
struct DecodedToken {
  std::string text;
  bool added = false;
};

class Decoder {
 public:
  // `j` is the tokenizer.json "decoder" value (null: the tokens joined
  // with spaces, as tokenizers does).
  // Implemented: Sequence, ByteLevel, Replace (String pattern), ByteFallback,
  // Fuse, Strip, Metaspace.
  Decoder(const nlohmann::json& j, const std::string& where);
  Decoder() = default;
  std::string apply(std::vector<DecodedToken> tokens) const;

 private:
  struct Step {
    enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
    std::string a, b;  // Replace: a -> b; Strip: a = content; Metaspace: a = replacement
    int start = 0, stop = 0;  // Strip: counts; Metaspace: start = 1 drops the first token's replacements
  };
  void add(const nlohmann::json& j, const std::string& where);
  std::vector<Step> steps_;
  bool joinWithSpaces_ = false;
};

}  // namespace strata::models
