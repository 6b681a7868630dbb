// The cpu device (runtime/device.h): host memory, which the CPU backend's
// kernels address directly; executables are shared libraries of generated
// kernels (an artifact's kernels.so, the kernel cache: abi::packedSymbol
// names), and a launch runs its programs on the host thread pool
// (abi::launch), at once: the cpu device has no queue, so synchronize()
// has nothing to wait for and a replay is the launches again.
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"

namespace strata::runtime {

class CpuDevice final : public Device {
 public:
  const char* name() const override { return "cpu"; }
  bool hostAddressable() const override { return true; }
  // "" for the CPU targets this CPU runs ("cpu-avx2", "cpu-avx512").
  std::string cannotRun(const std::string& target) const override;
  int computeUnits() const override;
  uint64_t capacity() const override;
  uint64_t available() const override;
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  // A shared library's bytes (loaded from an anonymous file).
  std::unique_ptr<Executable> loadExecutable(const std::string& image) const override;
  // The shared library at `path` (dlopen), which keeps its name in errors.
  std::unique_ptr<Executable> loadLibrary(const std::string& path) const;

 protected:
  void enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool early) const override;
};

}  // namespace strata::runtime
