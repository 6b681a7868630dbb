// libFuzzer: the ONNX loader must reject any bytes with strata::Error, never crash.
#include "models/onnx_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    strata::models::loadOnnxFromBytes(data, size, "/nonexistent-fuzz-dir/model.onnx");
  } catch (const strata::Error&) {
  }
  return 0;
}
