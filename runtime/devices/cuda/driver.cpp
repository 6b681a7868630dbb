#include "runtime/devices/cuda/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "ops/error.h"

namespace strata::runtime::cuda {

namespace {

struct Loaded {
  Driver api{};
  bool ok = false;
  std::string why;
};

// Resolves every entry point; the first missing one is the reason.
bool resolve(void* lib, Driver& d, std::string& why) {
  bool ok = true;
  auto get = [&](auto& fn, const char* name) {
    void* p = dlsym(lib, name);
    if (!p && ok) {
      why = fmt::format("libcuda.so.1 has no {}", name);
      ok = false;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  get(d.cuInit, "cuInit");
  get(d.cuGetErrorName, "cuGetErrorName");
  get(d.cuGetErrorString, "cuGetErrorString");
  get(d.cuDeviceGetCount, "cuDeviceGetCount");
  get(d.cuDeviceGet, "cuDeviceGet");
  get(d.cuDeviceGetName, "cuDeviceGetName");
  get(d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  get(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  get(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  get(d.cuCtxSetCurrent, "cuCtxSetCurrent");
  get(d.cuCtxSynchronize, "cuCtxSynchronize");
  get(d.cuMemGetInfo, "cuMemGetInfo_v2");
  get(d.cuMemAlloc, "cuMemAlloc_v2");
  get(d.cuMemFree, "cuMemFree_v2");
  get(d.cuMemsetD8, "cuMemsetD8_v2");
  get(d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  get(d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  get(d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  get(d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  get(d.cuMemHostAlloc, "cuMemHostAlloc");
  get(d.cuMemFreeHost, "cuMemFreeHost");
  get(d.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  get(d.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  get(d.cuModuleUnload, "cuModuleUnload");
  get(d.cuModuleGetFunction, "cuModuleGetFunction");
  get(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  get(d.cuFuncGetAttribute, "cuFuncGetAttribute");
  get(d.cuCtxGetLimit, "cuCtxGetLimit");
  get(d.cuCtxSetLimit, "cuCtxSetLimit");
  get(d.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  get(d.cuLaunchKernel, "cuLaunchKernel");
  get(d.cuEventCreate, "cuEventCreate");
  get(d.cuEventRecord, "cuEventRecord");
  get(d.cuEventSynchronize, "cuEventSynchronize");
  get(d.cuEventQuery, "cuEventQuery");
  get(d.cuEventElapsedTime, "cuEventElapsedTime");
  get(d.cuEventDestroy, "cuEventDestroy_v2");
  get(d.cuStreamCreate, "cuStreamCreate");
  get(d.cuStreamDestroy, "cuStreamDestroy_v2");
  get(d.cuStreamWaitEvent, "cuStreamWaitEvent");
  get(d.cuFuncGetParamInfo, "cuFuncGetParamInfo");
  get(d.cuGraphCreate, "cuGraphCreate");
  get(d.cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
  get(d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  get(d.cuGraphLaunch, "cuGraphLaunch");
  get(d.cuGraphExecDestroy, "cuGraphExecDestroy");
  get(d.cuGraphDestroy, "cuGraphDestroy");
  d.cuLaunchKernelEx = reinterpret_cast<decltype(d.cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  d.cuGraphAddDependencies =
      reinterpret_cast<decltype(d.cuGraphAddDependencies)>(dlsym(lib, "cuGraphAddDependencies_v2"));
  d.cuTensorMapEncodeTiled =
      reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
  return ok;
}

const Loaded& load() {
  static Loaded l = [] {
    Loaded r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      r.why = fmt::format("libcuda.so.1 not found ({})", e ? e : "dlopen failed");
      return r;
    }
    if (!resolve(lib, r.api, r.why)) return r;
    CUresult rc = r.api.cuInit(0);
    if (rc != 0) {
      const char* name = nullptr;
      r.api.cuGetErrorName(rc, &name);  // safe after a failed cuInit (a string table lookup)
      r.why = fmt::format("cuInit failed: {} ({})", name ? name : "unknown error", rc);
      return r;
    }
    int count = 0;
    if (r.api.cuDeviceGetCount(&count) != 0 || count == 0) {
      r.why = "the driver reports no device";
      return r;
    }
    r.ok = true;
    return r;
  }();
  return l;
}

}  // namespace

const Driver* driver(std::string* why) {
  const Loaded& l = load();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

void check(CUresult r, const char* what) {
  if (r == 0) return;
  const Driver* d = driver();
  const char *name = nullptr, *text = nullptr;
  if (d) {
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &text);
  }
  fail("{}: {} ({})", what, name ? name : fmt::format("CUDA error {}", r), text ? text : "no description");
}

void allowSharedBytes(const Driver& d, CUfunction f, unsigned sharedBytes) {
  if (sharedBytes > 48 * 1024)  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    check(d.cuFuncSetAttribute(f, 8, (int)sharedBytes), "cuFuncSetAttribute(max dynamic shared memory)");
}

}  // namespace strata::runtime::cuda
