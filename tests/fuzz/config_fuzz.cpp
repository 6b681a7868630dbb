// libFuzzer: config.json parsing (JSON, then the Llama-family fields) must
// reject bad input with an error, never crash.
#include "models/hf_config.h"
#include "ops/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    strata::models::parseLlamaConfig(j, "fuzz/config.json");
  } catch (const strata::Error&) {
  }
  return 0;
}
