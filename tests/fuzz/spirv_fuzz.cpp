// libFuzzer: the SPIR-V kernel signature reader (runtime/spirv_kernels.h),
// which reads an artifact's kernels.spv before a driver sees it, must reject
// bad modules with strata::Error; the signatures it returns must map a
// launch's slots without reading past them.
#include <cstring>
#include <vector>

#include "ops/error.h"
#include "runtime/spirv_kernels.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string_view module(reinterpret_cast<const char*>(data), size);
    for (const strata::runtime::SpirvKernel& k : strata::runtime::spirvKernels(module, "fuzz.spv")) {
      // As many slots as the parameters need (5 a pointer, 1 a scalar),
      // each pointing at 8 readable bytes.
      size_t n = 0;
      for (const auto& p : k.params) n += p.kind == strata::runtime::SpirvParam::Pointer ? 5 : 1;
      std::vector<uint64_t> values(n);
      std::vector<void*> slots(n);
      for (size_t i = 0; i < n; ++i) slots[i] = &values[i];
      for (const auto& a : strata::runtime::kernelArguments(k, slots))
        if (a.bytes > 8) __builtin_trap();
      if (n) try {
          strata::runtime::kernelArguments(k, std::span(slots).first(n - 1));
          __builtin_trap();  // too few slots must be refused
        } catch (const strata::Error&) {
        }
    }
  } catch (const strata::Error&) {
  }
  return 0;
}
