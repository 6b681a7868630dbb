// libFuzzer: the GGUF reader (models/gguf.h) must reject bad bytes with
// strata::Error, never crash, read out of bounds or allocate from a
// corrupt count; a file it reads goes on to the config (gguf_config.h), the
// model graph (gguf_model.h: tensor names, types and shapes) and the
// tokenizer (gguf_tokenizer.h), which must refuse bad metadata the same
// way, and a tokenizer built must encode and decode. Seeds: tests/data/gguf
// (files gguf-py wrote).
#include "models/gguf.h"
#include "models/gguf_config.h"
#include "models/gguf_model.h"
#include "models/gguf_tokenizer.h"
#include "ops/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::models::GgufFile f;
  try {
    f = strata::models::parseGguf(data, size, "fuzz.gguf");
  } catch (const strata::Error&) {
    return 0;
  }
  try {
    strata::models::ggufModel(f);  // the config, then every tensor the graph reads
  } catch (const strata::Error&) {
  }
  try {
    auto tok = strata::models::tokenizerFromGguf(f);
    tok.decode(tok.encode("Hello, world! 123 \xc3\xbcn\xc3\xaf"), false);
  } catch (const strata::Error&) {
  }
  return 0;
}
