// The null device (runtime/device.h): accounts for allocations, copies and
// launches and holds no data. Addresses are distinct, 256-byte aligned as a
// GPU allocator's, and never dereferenced, so ranges can be checked;
// downloads read zeros; any kernel set loads (its kernels are names),
// launches are counted, and tensor maps are distinct addresses too. What it is
// for: KV-cache sizing and copy-on-write at sizes no machine here has, and
// the GPU executor's launch plan (which kernels, what grids, which steps
// replay) checked without a GPU.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/device.h"

namespace strata::runtime {

// What the null device claims to be: its memory, and the compute units
// and local memory the GPU executor's split choices read.
struct NullDeviceShape {
  uint64_t capacity = 0;
  int computeUnits = 1;
  int64_t localMemoryPerUnit = 0;
};

class NullDevice final : public Device {
 public:
  explicit NullDevice(NullDeviceShape shape) : shape_(shape) {}
  const char* name() const override { return "null"; }
  bool hostAddressable() const override { return false; }
  std::string cannotRun(const std::string&) const override { return ""; }
  int computeUnits() const override { return shape_.computeUnits; }
  int64_t localMemoryPerUnit() const override { return shape_.localMemoryPerUnit; }
  uint64_t capacity() const override { return shape_.capacity; }
  void* allocate(size_t bytes) override;
  void release(void*, size_t bytes) override { allocated_ -= bytes; }
  void copy(void*, const void*, size_t) override;
  void upload(void*, const void*, size_t) override {}
  void download(void* host, const void*, size_t bytes) override;
  std::unique_ptr<Executable> loadExecutable(const std::string& image) const override;
  const void* tensorMap(const TensorMapRequest& r, const std::string& what) const override;
  size_t tensorMapCount() const override { return maps_.size(); }
  // Launches enqueued so far (replayed ones included; recorded ones not),
  // in all and of each kernel by name.
  uint64_t launches() const { return launches_; }
  std::map<std::string, uint64_t> launchesByKernel() const;

 protected:
  void enqueue(KernelHandle k, const LaunchShape&, std::span<void* const>, bool) const override;

 private:
  NullDeviceShape shape_;
  uintptr_t next_ = 1 << 20;
  mutable std::map<TensorMapKey, uintptr_t> maps_;
  mutable uintptr_t nextMap_ = uintptr_t(1) << 44;
  mutable std::atomic<uint64_t> launches_{0};
  mutable std::mutex byKernelLock_;
  mutable std::map<std::string, uint64_t> byKernel_;
};

}  // namespace strata::runtime
