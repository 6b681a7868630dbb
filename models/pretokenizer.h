// Pre-tokenization for Hugging Face byte-level BPE tokenizers: splits text
// into pieces with the tokenizer's regex (PCRE2 with Unicode properties, the
// same patterns tokenizers uses), each piece then BPE-encoded on its own.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::models {

// GPT-2's pattern: what a ByteLevel pre-tokenizer with use_regex splits by.
extern const char* const kGpt2SplitPattern;

class RegexSplitter {
 public:
  // Throws strata::Error with PCRE2's message and offset for a bad pattern.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  // "Isolated" splitting: every match is a piece, and so is any text between
  // matches. Concatenating the pieces gives `text` back. `text` is UTF-8
  // (invalid UTF-8 is an error naming the byte offset).
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::models
