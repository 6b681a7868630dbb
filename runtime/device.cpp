#include "runtime/device.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "ops/error.h"

namespace strata::runtime {

namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

class CpuDevice final : public Device {
 public:
  const char* name() const override { return "cpu"; }
  bool hostAddressable() const override { return true; }
  uint64_t capacity() const override {
    return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  }
  uint64_t available() const override {
    return (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  }
  void* allocate(size_t bytes) override {
    void* p = bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
    if (bytes && !p)
      fail("cpu device: cannot allocate {} ({} allocated, {} physical memory)", mib(bytes), mib(allocated_), mib(capacity()));
    if (p) std::memset(p, 0, bytes);
    allocated_ += bytes;
    return p;
  }
  void release(void* p, size_t bytes) override {
    std::free(p);
    allocated_ -= bytes;
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    ++copies_;
  }
};

// Hands out distinct, never-dereferenced addresses so that allocations and
// copies can be checked for their ranges.
class NullDevice final : public Device {
 public:
  explicit NullDevice(uint64_t capacity) : capacity_(capacity) {}
  const char* name() const override { return "null"; }
  bool hostAddressable() const override { return false; }
  uint64_t capacity() const override { return capacity_; }
  void* allocate(size_t bytes) override {
    if (bytes > capacity_ - allocated_)
      fail("null device: cannot allocate {} ({} of {} allocated)", mib(bytes), mib(allocated_), mib(capacity_));
    allocated_ += bytes;
    next_ += (bytes + 63) / 64 * 64 + 64;
    return reinterpret_cast<void*>(next_ - (bytes + 63) / 64 * 64);
  }
  void release(void*, size_t bytes) override { allocated_ -= bytes; }
  void copy(void*, const void*, size_t) override { ++copies_; }

 private:
  uint64_t capacity_;
  uintptr_t next_ = 1 << 20;
};

}  // namespace

Device& cpuDevice() {
  static CpuDevice device;
  return device;
}

std::unique_ptr<Device> makeNullDevice(uint64_t capacity) { return std::make_unique<NullDevice>(capacity); }

}  // namespace strata::runtime
