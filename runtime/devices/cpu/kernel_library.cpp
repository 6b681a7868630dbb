#include "runtime/devices/cpu/kernel_library.h"

#include <dlfcn.h>

#include <memory>

#include "ops/error.h"

namespace strata::runtime {

abi::KernelLookup loadKernelLibrary(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail("cannot load kernel library {}: {}", path, dlerror());
  auto lib = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  return [lib, path](const std::string& name) {
    void* fn = dlsym(lib.get(), abi::packedSymbol(name).c_str());
    if (!fn) fail("kernel library {} has no kernel '{}'", path, name);
    return reinterpret_cast<abi::PackedKernel>(fn);
  };
}

bool hostRuns(const std::string& target, std::string& why) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = __builtin_cpu_supports("avx512f");
  if (target == "cpu-avx2" && !avx2) why = "this CPU has no AVX2/FMA";
  else if (target == "cpu-avx512" && !avx512) why = "this CPU has no AVX-512F";
  else if (target != "cpu-avx2" && target != "cpu-avx512") why = "unknown CPU target '" + target + "'";
  return why.empty();
#else
  why = "kernels for " + target + " need an x86-64 CPU";
  return false;
#endif
}

}  // namespace strata::runtime
