// The text of one generated sequence as it streams: incremental
// detokenization and stop strings.
//
// A token's text depends on its neighbours (a multi-byte character split
// over byte tokens, SentencePiece's leading space), so each step decodes a
// short window: the ids from `prefix` and the ids from `prefix` up to
// `read`, and shows the difference once it does not end in an incomplete
// character (U+FFFD). The window starts a few prompt tokens back so the
// first generated token decodes as it follows the prompt.
//
// Stop strings: text that could still become a stop string is held back;
// when one appears the text ends before it and stopped() is true.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::runtime::server {

using DecodeFn = std::function<std::string(const std::vector<int64_t>&)>;

class TextStream {
 public:
  // `promptTail`: the last few prompt tokens (context for the first ones).
  TextStream(DecodeFn decode, std::vector<std::string> stops, std::vector<int64_t> promptTail);
  // Adds a generated token; returns the text that may be shown now (often
  // empty while a character or a possible stop string is incomplete).
  std::string push(int64_t token);
  // The text held back, at the end of the sequence (nothing after a stop).
  std::string finish();
  bool stopped() const { return stopped_; }
  // Everything shown so far.
  const std::string& shown() const { return shown_; }

 private:
  std::string release(std::string text);
  DecodeFn decode_;
  std::vector<std::string> stops_;
  std::vector<int64_t> ids_;
  size_t prefix_ = 0, read_ = 0;
  std::string pending_;  // decoded, not shown (a possible stop string's start)
  std::string shown_;
  bool stopped_ = false;
};

}  // namespace strata::runtime::server
