#include "runtime/devices/level_zero/driver.h"

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ops/error.h"

namespace strata::runtime::level_zero {

namespace {

constexpr uint32_t kInitGpuOnly = 1;  // ZE_INIT_FLAG_GPU_ONLY
constexpr uint32_t kDeviceTypeGpu = 1;  // ZE_DEVICE_TYPE_GPU

template <class F>
bool entry(void* lib, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) why = fmt::format("libze_loader.so.1 has no {}", name);
  return fn != nullptr;
}

struct Loaded {
  void* lib = nullptr;
  Driver api{};
  bool ok = false;
  std::string why;
};

const Loaded& load() {
  static const Loaded loaded = [] {
    Loaded l;
    void* lib = l.lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      l.why = fmt::format("libze_loader.so.1 not found ({}; Debian's libze1 installs it)", e ? e : "dlopen failed");
      return l;
    }
    Driver& a = l.api;
    if (!entry(lib, "zeInit", a.zeInit, l.why) || !entry(lib, "zeDriverGet", a.zeDriverGet, l.why) ||
        !entry(lib, "zeDeviceGet", a.zeDeviceGet, l.why) ||
        !entry(lib, "zeDeviceGetProperties", a.zeDeviceGetProperties, l.why) ||
        !entry(lib, "zeDeviceGetComputeProperties", a.zeDeviceGetComputeProperties, l.why) ||
        !entry(lib, "zeDeviceGetMemoryProperties", a.zeDeviceGetMemoryProperties, l.why))
      return l;
    // Once, and nothing else after a failure (see driver.h).
    if (ze_result_t r = a.zeInit(kInitGpuOnly); r != 0) {
      l.why = fmt::format("zeInit(ZE_INIT_FLAG_GPU_ONLY) returned {}: no GPU driver initialized", resultName(r));
      return l;
    }
    l.ok = true;
    return l;
  }();
  return loaded;
}

void check(ze_result_t r, const char* what) {
  if (r != 0) fail("Level Zero: {} failed: {}", what, resultName(r));
}

// Level Zero's two-call listing: `get(&count, nullptr)` for the count,
// then `get(&count, items)`.
template <class T, class Get>
std::vector<T> list(Get get, const char* what) {
  uint32_t n = 0;
  check(get(&n, nullptr), what);
  std::vector<T> items(n);
  if (n) check(get(&n, items.data()), what);
  items.resize(n);
  return items;
}

}  // namespace

const Driver* driver(std::string* why) {
  const Loaded& l = load();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

void* entryPoint(const char* name) {
  const Loaded& l = load();
  return l.ok ? dlsym(l.lib, name) : nullptr;
}

std::string xePart(uint32_t id) {
  if (id >= 0x0BD0 && id <= 0x0BDB) return "pvc";
  if ((id >= 0xE200 && id <= 0xE2FF) || id == 0x6420 || id == 0x64A0 || id == 0x64B0) return "bmg";
  if (id >= 0x5690 && id <= 0x56CF) return "dg2";
  return "";
}

std::string resultName(ze_result_t r) {
  const char* name = "unknown result";
  switch (r) {
    case 0: name = "ZE_RESULT_SUCCESS"; break;
    case 0x70000001: name = "ZE_RESULT_ERROR_DEVICE_LOST"; break;
    case 0x70000002: name = "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"; break;
    case 0x70000003: name = "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"; break;
    case 0x70020000: name = "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE"; break;
    case 0x78000001: name = "ZE_RESULT_ERROR_UNINITIALIZED"; break;
    case 0x78000002: name = "ZE_RESULT_ERROR_UNSUPPORTED_VERSION"; break;
    case 0x78000003: name = "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"; break;
    case 0x78000004: name = "ZE_RESULT_ERROR_INVALID_ARGUMENT"; break;
    case 0x78000005: name = "ZE_RESULT_ERROR_INVALID_NULL_HANDLE"; break;
    case 0x78000007: name = "ZE_RESULT_ERROR_INVALID_NULL_POINTER"; break;
    case 0x7ffffffe: name = "ZE_RESULT_ERROR_UNKNOWN"; break;
    default: break;
  }
  return fmt::format("{} (0x{:08x})", name, r);
}

std::vector<GpuInfo> gpus() {
  std::string why;
  const Driver* d = driver(&why);
  if (!d) fail("no Level Zero device: {}", why);
  std::vector<ze_driver_handle_t> drivers = list<ze_driver_handle_t>(d->zeDriverGet, "zeDriverGet");
  std::vector<GpuInfo> out;
  for (ze_driver_handle_t drv : drivers) {
    auto devices = list<ze_device_handle_t>(
        [&](uint32_t* n, ze_device_handle_t* items) { return d->zeDeviceGet(drv, n, items); }, "zeDeviceGet");
    for (ze_device_handle_t dev : devices) {
      DeviceProperties p;
      check(d->zeDeviceGetProperties(dev, &p), "zeDeviceGetProperties");
      if (p.type != kDeviceTypeGpu) continue;
      ComputeProperties c;
      check(d->zeDeviceGetComputeProperties(dev, &c), "zeDeviceGetComputeProperties");
      // Items arrive value-initialized: each MemoryProperties carries its stype.
      auto mem = list<MemoryProperties>(
          [&](uint32_t* n, MemoryProperties* items) { return d->zeDeviceGetMemoryProperties(dev, n, items); },
          "zeDeviceGetMemoryProperties");
      GpuInfo g;
      g.driver = drv, g.device = dev;
      p.name[sizeof p.name - 1] = 0;
      g.name = p.name;
      g.vendorId = p.vendorId;
      g.deviceId = p.deviceId;
      g.eus = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
      g.xeCores = p.numSlices * p.numSubslicesPerSlice;
      g.simdWidth = p.physicalEUSimdWidth;
      g.threadsPerEu = p.numThreadsPerEU;
      g.clockMhz = p.coreClockRate;
      for (const MemoryProperties& m : mem) g.memoryBytes += m.totalSize;
      g.maxGroupSize = c.maxTotalGroupSize;
      g.maxSharedLocalMemory = c.maxSharedLocalMemory;
      for (uint32_t i = 0; i < std::min<uint32_t>(c.numSubGroupSizes, 8); ++i) g.subGroupSizes.push_back(c.subGroupSizes[i]);
      out.push_back(std::move(g));
    }
  }
  if (out.empty()) fail("no Level Zero device: {} driver(s) initialized, none reports a GPU", drivers.size());
  return out;
}

std::string unavailable() {
  try {
    gpus();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

std::string describe(const GpuInfo& g) {
  const std::string part = xePart(g.deviceId);
  return fmt::format("{} (vendor 0x{:04x}, device 0x{:04x}, {}): {} EUs (SIMD {}, {} threads each) at {} MHz, "
                     "{:.1f} GiB, work-groups up to {} items and {} KiB of shared local memory, sub-groups {}",
                     g.name, g.vendorId, g.deviceId, part.empty() ? "not a part strata knows" : "xe:" + part, g.eus, g.simdWidth, g.threadsPerEu, g.clockMhz,
                     g.memoryBytes / double(1ull << 30), g.maxGroupSize, g.maxSharedLocalMemory / 1024,
                     fmt::join(g.subGroupSizes, "/"));
}

}  // namespace strata::runtime::level_zero
