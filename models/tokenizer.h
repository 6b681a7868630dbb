// Hugging Face tokenizer.json, byte-level BPE family. This part decodes ids to
// text (vocab + added tokens, GPT-2 byte-to-unicode mapping undone, special
// tokens skipped). Encoding text is not implemented yet: `strata run --prompt`
// says so and --prompt-ids is the way in.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace strata::models {

class Tokenizer {
 public:
  // Throws strata::Error naming the file when it is unreadable or not a
  // byte-level BPE tokenizer.
  static Tokenizer load(const std::string& path);
  std::string decode(const std::vector<int64_t>& ids, bool skipSpecial = true) const;
  int64_t vocabSize() const { return (int64_t)idToToken_.size(); }

 private:
  std::map<int64_t, std::string> idToToken_;
  std::map<int64_t, bool> special_;
};

}  // namespace strata::models
