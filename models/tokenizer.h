// Hugging Face tokenizer.json with a BPE model, both families:
//  - byte-level BPE (GPT-2, Llama 3, Qwen2): the pre-tokenizer's splits
//    (models/pretokenizer.h), bytes mapped to GPT-2's alphabet;
//  - SentencePiece-style BPE (Llama 2, Mistral): a Prepend/Replace normalizer
//    or a Metaspace pre-tokenizer turns spaces into U+2581, code points
//    missing from the vocabulary fall back to <0xXX> byte tokens.
// Added/special tokens are matched literally first (before normalization);
// the post-processor's template adds bos. Decoding runs the file's decoder
// steps (models/text_steps.h). Components strata does not implement are
// rejected at load, by name.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/bpe.h"
#include "models/pretokenizer.h"
#include "models/text_steps.h"

namespace strata::models {

// Token ids are below this (2^24: exact in f32, as the sampling kernels
// need; every real vocabulary is far smaller).
constexpr int64_t kMaxTokenId = int64_t(1) << 24;

class Tokenizer {
 public:
  // A tokenizer.json, or a .gguf file's tokenizer.ggml.* vocabulary
  // (models/gguf_tokenizer.h). Throws strata::Error naming the file when it
  // is unreadable, malformed, or uses a component this tokenizer does not
  // implement (named).
  static Tokenizer load(const std::string& path);
  // The same from the file's text in memory (`path` names it in errors).
  static Tokenizer parse(const std::string& text, const std::string& path);
  // The same from a parsed tokenizer.json document (a GGUF's vocabulary
  // is turned into one: models/gguf_tokenizer.h).
  static Tokenizer fromJson(const nlohmann::json& j, const std::string& path);
  // Text to ids; `addSpecial` applies the post-processor's template (e.g.
  // the bos token). Throws on invalid UTF-8.
  std::vector<int64_t> encode(const std::string& text, bool addSpecial = true) const;
  std::string decode(const std::vector<int64_t>& ids, bool skipSpecial = true) const;
  // The id of an added token (by its literal content), if there is one.
  std::optional<int64_t> tokenId(const std::string& content) const;
  // Whether `id` is one of the tokenizer's (decode refuses others).
  bool hasId(int64_t id) const { return idToToken_.count(id) != 0; }
  // Ids 0..vocabSize()-1 (the model's vocabulary must cover them).
  int64_t vocabSize() const { return idToToken_.empty() ? 0 : idToToken_.rbegin()->first + 1; }

 private:
  Tokenizer() = default;
  // Normalizes, pre-tokenizes and BPE-encodes text between added tokens;
  // `atStart`: the segment begins the input (Metaspace's "first" scheme).
  void encodeSegment(const std::string& segment, bool atStart, std::vector<int64_t>& out) const;

  std::map<int64_t, std::string> idToToken_;
  std::string path_;  // the file, for errors
  std::map<int64_t, bool> special_;                        // added tokens: id -> special
  std::vector<std::pair<std::string, int64_t>> added_;     // literal added tokens, longest first
  std::unique_ptr<const Bpe> bpe_;
  Normalizer normalizer_;
  Decoder decoder_;
  PreTokenizer preTokenizer_;
  std::vector<int64_t> prefix_, suffix_;                   // template ids around the text
};

}  // namespace strata::models
