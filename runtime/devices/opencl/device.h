// The Xe test device behind the device interface (runtime/device.h): Intel's
// CPU OpenCL runtime with strata's built-in definitions (xe_cpu_device.h),
// so the GPU executor runs an xe artifact (`strata compile --target
// xe:pvc|xe:bmg`) here as the level_zero device would on an Intel GPU: the
// same SPIR-V kernel set, the same launches. What it is for: end-to-end
// tests of the xe kernel set on a machine without an Intel GPU. Its speed
// says nothing about a GPU's.
//
// Memory is OpenCL shared virtual memory (clSVMAlloc), so device addresses
// are pointers, as the executor expects of every GPU; copies and launches go
// to one in-order queue. Executables are SPIR-V modules; each kernel's
// parameters come from the module (runtime/spirv_kernels.h) and a launch's
// ABI slots are set on them one by one. Work-groups are `block` work-items
// (a kernel set's "threads"), the global size grid x block.
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"
#include "runtime/devices/opencl/xe_cpu_device.h"

namespace strata::runtime {

class OpenClDevice final : public Device {
 public:
  // The first OpenCL device XeCpuDevice::open takes, or null with *why
  // saying what was missing (no ICD, no such device, no SVM).
  static std::unique_ptr<OpenClDevice> open(std::string* why);
  ~OpenClDevice() override;

  const char* name() const override { return "opencl"; }
  std::string description() const override;
  bool hostAddressable() const override { return false; }
  std::string cannotRun(const std::string& target) const override;
  int computeUnits() const override { return computeUnits_; }
  uint64_t capacity() const override { return capacity_; }
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() const override;
  void upload(void* dst, const void* host, size_t bytes) override;
  void download(void* host, const void* src, size_t bytes) override;
  std::unique_ptr<Executable> loadExecutable(const std::string& image) const override;

 protected:
  void enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool early) const override;

 private:
  explicit OpenClDevice(std::unique_ptr<opencl::XeCpuDevice> cl);
  std::unique_ptr<opencl::XeCpuDevice> cl_;
  opencl::XeCpuDevice::Handles h_;
  int computeUnits_ = 1;
  uint64_t capacity_ = 0;
};

}  // namespace strata::runtime
