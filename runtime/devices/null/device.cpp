#include "runtime/devices/null/device.h"

#include <cstring>
#include <set>

#include "ops/error.h"

namespace strata::runtime {

namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

// Kernels are their names (stable addresses in a set).
class NullExecutable final : public Executable {
 public:
  KernelHandle kernel(const std::string& name) const override { return {&*names_.insert(name).first}; }

 private:
  mutable std::set<std::string> names_;
};

}  // namespace

void* NullDevice::allocate(size_t bytes) {
  if (bytes > shape_.capacity - allocated_)
    fail("null device: cannot allocate {} ({} of {} allocated)", mib(bytes), mib(allocated_), mib(shape_.capacity));
  allocated_ += bytes;
  const uintptr_t p = next_;
  next_ += (bytes + 255) / 256 * 256 + 256;  // a gap: ranges of neighbours never touch
  return reinterpret_cast<void*>(p);
}

void NullDevice::enqueue(KernelHandle k, const LaunchShape&, std::span<void* const>, bool) const {
  ++launches_;
  std::lock_guard lock(byKernelLock_);
  ++byKernel_[*static_cast<const std::string*>(k.native)];
}

std::map<std::string, uint64_t> NullDevice::launchesByKernel() const {
  std::lock_guard lock(byKernelLock_);
  return byKernel_;
}

const void* NullDevice::tensorMap(const TensorMapRequest& r, const std::string&) const {
  auto [it, made] = maps_.try_emplace(r.key(), nextMap_);
  if (made) nextMap_ += 128;
  return reinterpret_cast<const void*>(it->second);
}

void NullDevice::copy(void*, const void*, size_t) {
  noteNonLaunch("copy");
  ++copies_;
}

void NullDevice::download(void* host, const void*, size_t bytes) {
  noteNonLaunch("download");
  if (bytes) std::memset(host, 0, bytes);
}

std::unique_ptr<Executable> NullDevice::loadExecutable(const std::string&) const {
  return std::make_unique<NullExecutable>();
}

std::unique_ptr<Device> makeNullDevice(uint64_t capacity) {
  return std::make_unique<NullDevice>(NullDeviceShape{capacity});
}

}  // namespace strata::runtime
