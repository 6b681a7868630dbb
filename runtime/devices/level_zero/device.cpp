#include "runtime/devices/level_zero/device.h"

#include <level_zero/ze_api.h>

#include <cstdint>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "ops/error.h"
#include "runtime/spirv_kernels.h"

namespace strata::runtime {

// The entry points the device calls beyond discovery's, typed by ze_api.h
// and taken from the loader driver.h opened; and the device's objects.
struct LevelZeroApi {
#define STRATA_ZE_CALLS(X)                                                                                         \
  X(zeContextCreate) X(zeContextDestroy) X(zeDeviceGetCommandQueueGroupProperties) X(zeCommandListCreateImmediate) \
  X(zeCommandListDestroy) X(zeCommandListAppendBarrier) X(zeCommandListAppendMemoryCopy)                         \
  X(zeCommandListAppendMemoryFill) X(zeCommandListAppendLaunchKernel) X(zeEventPoolCreate) X(zeEventPoolDestroy)  \
  X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSynchronize) X(zeEventHostReset) X(zeMemAllocDevice) X(zeMemFree) \
  X(zeModuleCreate) X(zeModuleDestroy) X(zeModuleBuildLogGetString) X(zeModuleBuildLogDestroy) X(zeKernelCreate)  \
  X(zeKernelDestroy) X(zeKernelSetGroupSize) X(zeKernelSetArgumentValue)
#define STRATA_ZE_MEMBER(f) decltype(&::f) f = nullptr;
  STRATA_ZE_CALLS(STRATA_ZE_MEMBER)
#undef STRATA_ZE_MEMBER

  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  ze_command_list_handle_t list = nullptr;  // immediate, asynchronous
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t done = nullptr;  // host-visible: synchronize() waits on it

  void check(ze_result_t r, const std::string& what) const {
    if (r != ZE_RESULT_SUCCESS) fail("level_zero device: {} failed: {}", what, level_zero::resultName(r));
  }
};

namespace {

// A kernel of a built module: its Level Zero kernel and its parameters.
struct ZeKernel {
  ze_kernel_handle_t kernel = nullptr;
  SpirvKernel signature;
};

class ZeExecutable final : public Executable {
 public:
  ZeExecutable(const LevelZeroApi& api, ze_module_handle_t module, const std::vector<SpirvKernel>& kernels)
      : api_(api), module_(module) {
    for (const SpirvKernel& s : kernels) {
      ze_kernel_desc_t desc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, s.name.c_str()};
      ze_kernel_handle_t k = nullptr;
      api_.check(api_.zeKernelCreate(module_, &desc, &k), "zeKernelCreate(" + s.name + ")");
      kernels_[s.name] = {k, s};
    }
  }
  ~ZeExecutable() override {
    for (auto& [name, k] : kernels_) api_.zeKernelDestroy(k.kernel);
    api_.zeModuleDestroy(module_);
  }
  KernelHandle kernel(const std::string& name) const override {
    auto k = kernels_.find(name);
    if (k == kernels_.end()) fail("level_zero device: the SPIR-V module has no kernel '{}'", name);
    return KernelHandle{&k->second};
  }

 private:
  const LevelZeroApi& api_;
  ze_module_handle_t module_;
  std::map<std::string, ZeKernel> kernels_;
};

}  // namespace

std::unique_ptr<LevelZeroDevice> LevelZeroDevice::open() {
  std::vector<level_zero::GpuInfo> found = level_zero::gpus();  // throws "no Level Zero device: ..."
  return std::unique_ptr<LevelZeroDevice>(new LevelZeroDevice(std::move(found.front())));
}

LevelZeroDevice::LevelZeroDevice(level_zero::GpuInfo info) : info_(std::move(info)), api_(new LevelZeroApi) {
  LevelZeroApi& a = *api_;
#define STRATA_ZE_LOAD(f)                                                                     \
  a.f = reinterpret_cast<decltype(a.f)>(level_zero::entryPoint(#f));                          \
  if (!a.f) fail("no Level Zero device: libze_loader.so.1 has no {} (a loader of 1.4 or later)", #f);
  STRATA_ZE_CALLS(STRATA_ZE_LOAD)
#undef STRATA_ZE_LOAD
  a.device = reinterpret_cast<ze_device_handle_t>(info_.device);
  const auto driver = reinterpret_cast<ze_driver_handle_t>(info_.driver);
  ze_context_desc_t cdesc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  a.check(a.zeContextCreate(driver, &cdesc, &a.context), "zeContextCreate");
  // The first queue group that takes compute work.
  uint32_t groups = 0;
  a.check(a.zeDeviceGetCommandQueueGroupProperties(a.device, &groups, nullptr), "zeDeviceGetCommandQueueGroupProperties");
  std::vector<ze_command_queue_group_properties_t> props(groups);
  for (auto& p : props) p = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, nullptr, 0, 0, 0};
  a.check(a.zeDeviceGetCommandQueueGroupProperties(a.device, &groups, props.data()),
          "zeDeviceGetCommandQueueGroupProperties");
  uint32_t ordinal = groups;
  for (uint32_t i = 0; i < groups && ordinal == groups; ++i)
    if (props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) ordinal = i;
  if (ordinal == groups) fail("level_zero device: {} has no compute queue group", info_.name);
  ze_command_queue_desc_t qdesc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  a.check(a.zeCommandListCreateImmediate(a.context, a.device, &qdesc, &a.list), "zeCommandListCreateImmediate");
  ze_event_pool_desc_t pdesc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  a.check(a.zeEventPoolCreate(a.context, &pdesc, 1, &a.device, &a.pool), "zeEventPoolCreate");
  ze_event_desc_t edesc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  a.check(a.zeEventCreate(a.pool, &edesc, &a.done), "zeEventCreate");
}

LevelZeroDevice::~LevelZeroDevice() {
  LevelZeroApi& a = *api_;
  if (a.list && a.done) {
    try {
      drain();
    } catch (const Error&) {
    }
  }
  if (a.done) a.zeEventDestroy(a.done);
  if (a.pool) a.zeEventPoolDestroy(a.pool);
  if (a.list) a.zeCommandListDestroy(a.list);
  if (a.context) a.zeContextDestroy(a.context);
}

std::string LevelZeroDevice::cannotRun(const std::string& target) const {
  const std::string part = level_zero::xePart(info_.deviceId);
  if (part.empty())
    return fmt::format("{} (device 0x{:04x}) is not a GPU strata knows (level_zero::xePart: PVC, BMG, LNL, DG2)",
                       info_.name, info_.deviceId);
  if (target == "xe:" + part) return "";
  return fmt::format("kernels built for {} cannot run on {} (xe:{})", target, info_.name, part);
}

void LevelZeroDevice::drain() const {
  const LevelZeroApi& a = *api_;
  a.check(a.zeCommandListAppendBarrier(a.list, a.done, 0, nullptr), "zeCommandListAppendBarrier");
  a.check(a.zeEventHostSynchronize(a.done, UINT64_MAX), "zeEventHostSynchronize");
  a.check(a.zeEventHostReset(a.done), "zeEventHostReset");
}

void* LevelZeroDevice::allocate(size_t bytes) {
  const LevelZeroApi& a = *api_;
  const size_t n = bytes < 64 ? 64 : bytes;
  ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* p = nullptr;
  if (ze_result_t r = a.zeMemAllocDevice(a.context, &desc, n, 128, a.device, &p); r != ZE_RESULT_SUCCESS)
    fail("level_zero device: cannot allocate {} bytes on {} ({} allocated of {}): {}", bytes, info_.name,
         allocated_.load(), info_.memoryBytes, level_zero::resultName(r));
  const uint8_t zero = 0;
  a.check(a.zeCommandListAppendMemoryFill(a.list, p, &zero, 1, n, nullptr, 0, nullptr), "zeCommandListAppendMemoryFill");
  a.check(a.zeCommandListAppendBarrier(a.list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
  allocated_ += bytes;
  return p;
}

void LevelZeroDevice::release(void* p, size_t bytes) {
  if (!p) return;
  drain();  // nothing enqueued may still use it
  api_->check(api_->zeMemFree(api_->context, p), "zeMemFree");
  allocated_ -= bytes;
}

void LevelZeroDevice::copy(void* dst, const void* src, size_t bytes) {
  noteNonLaunch("copy");
  ++copies_;
  if (!bytes) return;
  const LevelZeroApi& a = *api_;
  a.check(a.zeCommandListAppendMemoryCopy(a.list, dst, src, bytes, nullptr, 0, nullptr), "zeCommandListAppendMemoryCopy");
  a.check(a.zeCommandListAppendBarrier(a.list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
}

void LevelZeroDevice::synchronize() const { drain(); }

// Host memory here is pageable: the copy is complete when drain() returns,
// so `host` may change right after.
void LevelZeroDevice::upload(void* dst, const void* host, size_t bytes) {
  if (!bytes) return;
  const LevelZeroApi& a = *api_;
  a.check(a.zeCommandListAppendMemoryCopy(a.list, dst, host, bytes, nullptr, 0, nullptr), "upload");
  drain();
}

void LevelZeroDevice::download(void* host, const void* src, size_t bytes) {
  noteNonLaunch("download");
  if (!bytes) return;
  const LevelZeroApi& a = *api_;
  a.check(a.zeCommandListAppendMemoryCopy(a.list, host, src, bytes, nullptr, 0, nullptr), "download");
  drain();
}

std::unique_ptr<Executable> LevelZeroDevice::loadExecutable(const std::string& image) const {
  const LevelZeroApi& a = *api_;
  const std::vector<SpirvKernel> kernels = spirvKernels(image, "level_zero device: the kernel set's SPIR-V module");
  ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, image.size(),
                        reinterpret_cast<const uint8_t*>(image.data()), "", nullptr};
  ze_module_handle_t module = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  const ze_result_t r = a.zeModuleCreate(a.context, a.device, &desc, &module, &log);
  std::string text;
  if (log) {
    size_t n = 0;
    if (a.zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n) {
      text.resize(n);
      a.zeModuleBuildLogGetString(log, &n, text.data());
      text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
    }
    a.zeModuleBuildLogDestroy(log);
  }
  if (r != ZE_RESULT_SUCCESS)
    fail("level_zero device: {} did not build the kernel set's SPIR-V module ({} bytes): {}; build log:\n{}", info_.name,
         image.size(), level_zero::resultName(r), text.empty() ? "(empty)" : text);
  return std::make_unique<ZeExecutable>(a, module, kernels);
}

void LevelZeroDevice::enqueue(KernelHandle h, const LaunchShape& shape, std::span<void* const> slots, bool) const {
  const LevelZeroApi& a = *api_;
  const ZeKernel& k = *static_cast<const ZeKernel*>(h.native);
  if (shape.sharedBytes)
    fail("kernel {}: {} bytes of dynamic local memory (xe kernels take none)", k.signature.name, shape.sharedBytes);
  const std::vector<KernelArgument> args = kernelArguments(k.signature, slots);
  for (size_t i = 0; i < args.size(); ++i)
    a.check(a.zeKernelSetArgumentValue(k.kernel, uint32_t(i), args[i].bytes, args[i].value),
            fmt::format("kernel {}: zeKernelSetArgumentValue({})", k.signature.name, i));
  a.check(a.zeKernelSetGroupSize(k.kernel, shape.block[0], shape.block[1], shape.block[2]),
          fmt::format("kernel {}: zeKernelSetGroupSize({}, {}, {})", k.signature.name, shape.block[0], shape.block[1],
                      shape.block[2]));
  const ze_group_count_t groups{uint32_t(shape.grid[0]), uint32_t(shape.grid[1]), uint32_t(shape.grid[2])};
  a.check(a.zeCommandListAppendLaunchKernel(a.list, k.kernel, &groups, nullptr, 0, nullptr),
          fmt::format("kernel {}: launch of [{}, {}, {}] work-groups", k.signature.name, shape.grid[0], shape.grid[1],
                      shape.grid[2]));
  a.check(a.zeCommandListAppendBarrier(a.list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
}

}  // namespace strata::runtime
