// The level_zero device (runtime/device.h) for Intel GPUs (PVC, Arc
// B-series, Lunar Lake), over the loader that driver.h opens at run time:
// device memory (zeMemAllocDevice), the xe kernel set's SPIR-V module built
// by the driver (zeModuleCreate; a refused module throws with the build
// log), kernels with their group sizes, and every copy and launch on one
// immediate command list, a barrier after each so that they run in issue
// order as the executor expects (Level Zero 1.4's command lists may
// overlap commands otherwise). Kernel parameters come from the module
// (runtime/spirv_kernels.h), as on the opencl test device, which runs the
// same kernel sets through the same launches on a machine without an
// Intel GPU (runtime/devices/opencl/device.h).
//
// Written to the Level Zero 1.4 specification and compiled against its
// header; without an Intel GPU here, what it has been run through is the
// path to "no Level Zero device: ..." (docs/runtime.md says what only a
// GPU can tell). Every call is checked: a failure throws strata::Error
// naming the call and its result.
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"
#include "runtime/devices/level_zero/driver.h"

namespace strata::runtime {

struct LevelZeroApi;

class LevelZeroDevice final : public Device {
 public:
  // The first GPU discovery lists (driver.h); throws "no Level Zero device:
  // ..." without one.
  static std::unique_ptr<LevelZeroDevice> open();
  ~LevelZeroDevice() override;

  const char* name() const override { return "level_zero"; }
  std::string description() const override { return info_.name; }
  bool hostAddressable() const override { return false; }
  // "" for the GPU's own part ("xe:pvc" on a Data Center GPU Max), else
  // why not (level_zero::xePart).
  std::string cannotRun(const std::string& target) const override;
  int computeUnits() const override { return int(info_.xeCores); }
  int64_t localMemoryPerUnit() const override { return info_.maxSharedLocalMemory; }
  uint64_t capacity() const override { return info_.memoryBytes; }
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() const override;
  void upload(void* dst, const void* host, size_t bytes) override;
  void download(void* host, const void* src, size_t bytes) override;
  // A module from SPIR-V; throws with the driver's build log.
  std::unique_ptr<Executable> loadExecutable(const std::string& image) const override;

 protected:
  void enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool early) const override;

 private:
  explicit LevelZeroDevice(level_zero::GpuInfo info);
  // Appends a barrier that signals the host event and waits for it.
  void drain() const;
  level_zero::GpuInfo info_;
  std::unique_ptr<LevelZeroApi> api_;
};

}  // namespace strata::runtime
