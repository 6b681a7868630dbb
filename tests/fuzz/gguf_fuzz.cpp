// libFuzzer: the GGUF reader (models/gguf.h) must reject bad bytes with
// strata::Error, never crash, read out of bounds or allocate from a
// corrupt count. Seeds: tests/data/gguf (files gguf-py wrote).
#include "models/gguf.h"
#include "ops/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    strata::models::parseGguf(data, size, "fuzz.gguf");
  } catch (const strata::Error&) {
  }
  return 0;
}
