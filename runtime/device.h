// Where the runtime's memory lives, behind one small interface (DESIGN.md
// step 8): `cpu` (host memory; what --backend cpu computes on) and `null`
// (accounts for allocations and copies, holds no data: tests of cache sizing
// and copy-on-write at sizes no machine has). The cuda and level_zero
// devices implement the same interface when their backends land.
//
// Contract: allocate() throws strata::Error naming the device, the request
// and the memory left when it cannot satisfy it; copies are between
// allocations of this device; synchronize() returns when every copy issued
// before it is done (the cpu device's copies are synchronous).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata::runtime {

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;
  // Whether host code (the CPU backend's kernels) may read and write this
  // device's memory through the pointers allocate() returns.
  virtual bool hostAddressable() const = 0;
  // Bytes this device can hold in all (the cpu device: physical memory).
  virtual uint64_t capacity() const = 0;
  // Bytes a new allocation can still take now (the cpu device: the memory
  // the system has free; a GPU: what its driver reports free). Default:
  // capacity less what this device allocated.
  virtual uint64_t available() const { return capacity() > allocated_ ? capacity() - allocated_ : 0; }
  uint64_t allocated() const { return allocated_; }

  // `bytes` of device memory, zero-filled, 64-byte aligned.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() {}
  // Copies issued since construction (tests check copy-on-write with it).
  uint64_t copies() const { return copies_; }

 protected:
  std::atomic<uint64_t> allocated_{0}, copies_{0};
};

// The process's host device.
Device& cpuDevice();
// A fresh null device of `capacity` bytes.
std::unique_ptr<Device> makeNullDevice(uint64_t capacity);

}  // namespace strata::runtime
