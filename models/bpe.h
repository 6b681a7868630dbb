// The BPE model of a Hugging Face tokenizer.json: vocabulary, merges by
// rank, and the two ways a word becomes initial symbols (byte-level
// alphabet, or code points with SentencePiece's byte fallback).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::models {

struct BpeOptions {
  // Words arrive in GPT-2's byte alphabet (a ByteLevel pre-tokenizer mapped
  // them); otherwise they are plain UTF-8 and a code point missing from the
  // vocabulary becomes its <0xXX> byte tokens (byte_fallback) or unk.
  bool byteFallback = false;
  bool fuseUnk = false;       // consecutive unknown code points give one unk
  bool ignoreMerges = false;  // a word that is itself in the vocabulary is one token
};

class Bpe {
 public:
  // `merges` as (left, right) pairs in rank order, or with `ranks` (one
  // per merge, any order) ranked by those: equal ranks tie, and the
  // leftmost pair of the lowest rank merges first (a SentencePiece
  // vocabulary's merges ranked by their result's score, as llama.cpp's SPM
  // tokenizer merges: models/gguf_tokenizer.h). Throws strata::Error
  // (prefixed with `where`) when a merge's parts or result are not in the
  // vocabulary, or byte fallback lacks a <0xXX> token.
  Bpe(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      std::optional<int64_t> unk, BpeOptions options, const std::string& where,
      const std::vector<int64_t>* ranks = nullptr);

  // Appends the ids of one pre-tokenized word: the adjacent pair of lowest
  // merge rank (leftmost on ties) is merged until no pair has a rank.
  void encodeWord(const std::string& word, std::vector<int64_t>& out) const;
  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }

 private:
  static uint64_t key(int64_t a, int64_t b) { return ((uint64_t)a << 32) | (uint32_t)b; }
  void initialSymbols(const std::string& word, std::vector<int64_t>& syms) const;

  std::unordered_map<std::string, int64_t> vocab_;
  struct Merge {
    int64_t rank, result;
  };
  std::unordered_map<uint64_t, Merge> merges_;  // key(left id, right id)
  std::optional<int64_t> unk_;
  int64_t byteIds_[256] = {};  // <0xXX> ids when byte fallback is on
  BpeOptions options_;
};

}  // namespace strata::models
