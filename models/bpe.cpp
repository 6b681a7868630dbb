#include "models/bpe.h"

#include <queue>

#include <fmt/format.h>

#include "models/utf8.h"
#include "ops/error.h"

namespace strata::models {

Bpe::Bpe(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         std::optional<int64_t> unk, BpeOptions options, const std::string& where, const std::vector<int64_t>* ranks)
    : vocab_(std::move(vocab)), unk_(unk), options_(options) {
  if (ranks && ranks->size() != merges.size())
    fail("{}: {} merge ranks for {} merges", where, ranks->size(), merges.size());
  auto idOf = [&](const std::string& s, const char* what) {
    auto it = vocab_.find(s);
    if (it == vocab_.end()) fail("{}: {} '{}' is not in the vocabulary", where, what, s);
    return it->second;
  };
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    Merge m{ranks ? (*ranks)[i] : int64_t(i), idOf(a + b, "merge result")};
    merges_.emplace(key(idOf(a, "merge part"), idOf(b, "merge part")), m);  // the first rank of a pair wins
  }
  if (options_.byteFallback)
    for (int b = 0; b < 256; ++b) byteIds_[b] = idOf(fmt::format("<0x{:02X}>", b), "byte-fallback token");
}

void Bpe::initialSymbols(const std::string& word, std::vector<int64_t>& syms) const {
  bool lastUnk = false;
  for (size_t i = 0; i < word.size();) {
    size_t start = i;
    utf8::next(word, i);
    std::string ch = word.substr(start, i - start);
    if (auto it = vocab_.find(ch); it != vocab_.end()) {
      syms.push_back(it->second);
      lastUnk = false;
    } else if (options_.byteFallback) {
      for (char c : ch) syms.push_back(byteIds_[(uint8_t)c]);
      lastUnk = false;
    } else if (unk_) {
      if (!(options_.fuseUnk && lastUnk)) syms.push_back(*unk_);
      lastUnk = true;
    } else {
      fail("tokenizer: symbol '{}' is not in the vocabulary and there is no unk token", ch);
    }
  }
}

void Bpe::encodeWord(const std::string& word, std::vector<int64_t>& out) const {
  if (word.empty()) return;
  if (options_.ignoreMerges)
    if (auto it = vocab_.find(word); it != vocab_.end()) return out.push_back(it->second);
  std::vector<int64_t> id;
  initialSymbols(word, id);
  // Symbols are a linked list over their first positions; the queue holds
  // candidate merges (rank, left position), stale ones are skipped on pop.
  const int n = (int)id.size();
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  struct Cand {
    int64_t rank;
    int pos;
    int64_t result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<>> queue;
  auto consider = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    if (auto it = merges_.find(key(id[left], id[next[left]])); it != merges_.end())
      queue.push({it->second.rank, left, it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  std::vector<bool> alive(n, true);
  while (!queue.empty()) {
    Cand c = queue.top();
    queue.pop();
    int right = next[c.pos];
    if (!alive[c.pos] || right < 0) continue;
    auto it = merges_.find(key(id[c.pos], id[right]));
    if (it == merges_.end() || it->second.result != c.result) continue;  // the pair changed since
    id[c.pos] = c.result;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    consider(prev[c.pos]);
    consider(c.pos);
  }
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(id[i]);
}

}  // namespace strata::models
