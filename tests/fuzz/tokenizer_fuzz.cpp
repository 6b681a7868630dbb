// libFuzzer: tokenizer.json (models/tokenizer.h). The input is a
// tokenizer's JSON text, then a NUL byte, then text to encode; a tokenizer
// that loads must encode that text (or refuse invalid UTF-8 with an error)
// and decode the ids back, never crash or hang. Seeds: tests/data/tokenizers.
#include <string>

#include "models/tokenizer.h"
#include "ops/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string json = all.substr(0, nul), text = nul == std::string::npos ? "hello world" : all.substr(nul + 1);
  try {
    auto tok = strata::models::Tokenizer::parse(json, "fuzz/tokenizer.json");
    std::vector<int64_t> ids = tok.encode(text, /*addSpecial=*/true);
    tok.decode(ids, /*skipSpecial=*/false);
    tok.decode(ids, /*skipSpecial=*/true);
  } catch (const strata::Error&) {
  }
  return 0;
}
