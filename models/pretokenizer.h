// Pre-tokenization as Hugging Face tokenizers does it: the text (after the
// normalizer) goes through a list of steps, each of which splits every
// piece the step before left, or rewrites it (ByteLevel maps bytes to
// GPT-2's alphabet, Metaspace turns spaces into its replacement); each
// final piece is then BPE-encoded on its own. Regexes are PCRE2 with
// Unicode properties, the same patterns tokenizers uses.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata::models {

// GPT-2's pattern: what a ByteLevel pre-tokenizer with use_regex splits by.
extern const char* const kGpt2SplitPattern;

// What becomes of the delimiters (the pattern's matches) in a split, as
// tokenizers names it: dropped, a piece each, appended to the piece before
// them, prepended to the piece after them, or a piece per run of them.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class RegexSplitter {
 public:
  // Throws strata::Error with PCRE2's message and offset for a bad pattern.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  struct Segment {
    std::string_view text;
    bool match;  // a match of the pattern (else the text between matches)
  };
  // The matches of `text` and the text between them, in order; they cover
  // it. Empty matches are skipped. `text` is UTF-8 (invalid UTF-8 is an
  // error naming the byte offset).
  std::vector<Segment> segments(std::string_view text) const;
  // "Isolated" splitting: every match is a piece, and so is any text between
  // matches. Concatenating the pieces gives `text` back.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The pieces `segments` become under `behavior`, with the roles of matches
// and the rest swapped when `invert`; empty pieces are dropped.
std::vector<std::string_view> applySplitBehavior(std::vector<RegexSplitter::Segment> segments, SplitBehavior behavior,
                                                 bool invert);

// A tokenizer.json pre_tokenizer: ByteLevel, Split (Regex or String
// pattern, every behavior, invert), Digits, Punctuation, WhitespaceSplit,
// Metaspace, or a Sequence of them; null is no step.
class PreTokenizer {
 public:
  PreTokenizer() = default;
  // Throws strata::Error naming `path` and the component for one it does
  // not implement.
  PreTokenizer(const nlohmann::json& config, const std::string& path);
  // The pieces of `text`, each to be BPE-encoded on its own (the whole
  // text when there are no steps). `atStart`: the text begins the input
  // (Metaspace's "first" scheme).
  std::vector<std::string> apply(const std::string& text, bool atStart) const;
  // Whether a ByteLevel step maps the text's bytes (the vocabulary is then
  // GPT-2's byte alphabet, which byte fallback cannot combine with).
  bool byteLevel() const;

 private:
  struct Step;
  void add(const nlohmann::json& config, const std::string& path);
  std::vector<std::shared_ptr<const Step>> steps_;
};

}  // namespace strata::models
