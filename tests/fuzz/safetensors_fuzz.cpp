// libFuzzer: the safetensors header parser must reject bad bytes with strata::Error.
#include "models/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    strata::models::parseSafetensorsHeader(data, size, "fuzz.safetensors");
  } catch (const strata::Error&) {
  }
  return 0;
}
