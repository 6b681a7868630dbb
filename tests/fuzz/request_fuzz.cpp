// libFuzzer target: the OpenAI request parser of `strata serve` on any body
// (both endpoints). Passes when every input parses or raises ApiError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/server/openai.h"

namespace {

using namespace strata::runtime::server;

// Ids are bytes (a real tokenizer is fuzzed by its own target).
class ByteText : public ServedText {
 public:
  std::vector<int64_t> encode(const std::string& s) const override {
    std::vector<int64_t> ids{1};
    for (unsigned char c : s) ids.push_back(c);
    return ids;
  }
  bool hasChatTemplate() const override { return true; }
  std::vector<int64_t> encodeChat(const ojson& messages) const override { return encode(messages.dump()); }
  std::vector<int64_t> chatStopIds() const override { return {2}; }
  std::string decode(const std::vector<int64_t>& ids) const override { return std::string(ids.begin(), ids.end()); }
  std::string tokenText(int64_t id) const override { return std::string(1, (char)id); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ByteText text;
  ServeLimits lim;
  lim.modelName = "m";
  lim.maxContext = 4096;
  lim.maxTokens = 1024;
  lim.vocabSize = 256;
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {false, true}) {
    try {
      ParsedRequest r = parseRequest(body, chat, lim, text);
      for (const Job& j : r.jobs)
        if (j.promptIds.empty() || j.maxTokens < 1 || j.n < 1) __builtin_trap();  // a job the engine would refuse
    } catch (const ApiError&) {
    }
  }
  return 0;
}
