// Hugging Face tokenizer.json, byte-level BPE family (GPT-2, Llama 3, Qwen2):
// added/special tokens matched literally first, the pre-tokenizer's regex
// split (models/pretokenizer.h), bytes mapped to GPT-2's byte alphabet, BPE
// merges by rank, and the post-processor's template (bos). Decoding undoes
// the byte mapping. SentencePiece-style (metaspace) tokenizers are rejected
// with a clear error at load.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/pretokenizer.h"

namespace strata::models {

class Tokenizer {
 public:
  // Throws strata::Error naming the file when it is unreadable, malformed,
  // or uses a component this tokenizer does not implement (named).
  static Tokenizer load(const std::string& path);
  // Text to ids; `addSpecial` applies the post-processor's template (e.g.
  // the bos token). Throws on invalid UTF-8.
  std::vector<int64_t> encode(const std::string& text, bool addSpecial = true) const;
  std::string decode(const std::vector<int64_t>& ids, bool skipSpecial = true) const;
  // The id of an added token (by its literal content), if there is one.
  std::optional<int64_t> tokenId(const std::string& content) const;
  // Ids 0..vocabSize()-1 (the model's vocabulary must cover them).
  int64_t vocabSize() const { return idToToken_.empty() ? 0 : idToToken_.rbegin()->first + 1; }

 private:
  void encodePiece(const std::string& piece, std::vector<int64_t>& out) const;

  std::map<int64_t, std::string> idToToken_;
  std::map<int64_t, bool> special_;
  std::unordered_map<std::string, int64_t> vocab_;         // BPE symbol -> id
  std::unordered_map<std::string, int64_t> mergeRank_;     // "left right" -> rank
  std::vector<std::pair<std::string, int64_t>> added_;     // literal added tokens, longest first
  std::shared_ptr<const RegexSplitter> splitter_;          // null: no regex split
  bool addPrefixSpace_ = false, ignoreMerges_ = false;
  std::optional<int64_t> unk_;
  std::vector<int64_t> prefix_, suffix_;                   // template ids around the text
};

}  // namespace strata::models
