#include "runtime/devices/cpu/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "ops/error.h"
#include "runtime/devices/cpu/kernel_library.h"

namespace strata::runtime {

namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

// A loaded library's kernels; the lookup keeps the library loaded.
class CpuExecutable final : public Executable {
 public:
  explicit CpuExecutable(abi::KernelLookup lookup) : lookup_(std::move(lookup)) {}
  KernelHandle kernel(const std::string& name) const override {
    return {reinterpret_cast<const void*>(lookup_(name))};
  }

 private:
  abi::KernelLookup lookup_;
};

}  // namespace

std::string CpuDevice::cannotRun(const std::string& target) const {
  std::string why;
  return hostRuns(target, why) ? std::string() : why;
}

int CpuDevice::computeUnits() const { return abi::launchThreads(); }

uint64_t CpuDevice::capacity() const { return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE); }

uint64_t CpuDevice::available() const {
  return (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

void* CpuDevice::allocate(size_t bytes) {
  void* p = bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
  if (bytes && !p)
    fail("cpu device: cannot allocate {} ({} allocated, {} physical memory)", mib(bytes), mib(allocated_),
         mib(capacity()));
  if (p) std::memset(p, 0, bytes);
  allocated_ += bytes;
  return p;
}

void CpuDevice::release(void* p, size_t bytes) {
  std::free(p);
  allocated_ -= bytes;
}

void CpuDevice::copy(void* dst, const void* src, size_t bytes) {
  noteNonLaunch("copy");
  std::memcpy(dst, src, bytes);
  ++copies_;
}

std::unique_ptr<Executable> CpuDevice::loadLibrary(const std::string& path) const {
  return std::make_unique<CpuExecutable>(loadKernelLibrary(path));
}

std::unique_ptr<Executable> CpuDevice::loadExecutable(const std::string& image) const {
  // dlopen reads files: the bytes go to an anonymous one, opened by its
  // /proc path, which stays valid while the descriptor is open (dlopen
  // maps what it needs before we close it).
  const int fd = memfd_create("strata-kernels", MFD_CLOEXEC);
  if (fd < 0) fail("cpu device: memfd_create: {}", std::strerror(errno));
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n <= 0) {
      close(fd);
      fail("cpu device: writing a {}-byte kernel library: {}", image.size(), std::strerror(errno));
    }
    done += size_t(n);
  }
  try {
    auto e = loadLibrary(fmt::format("/proc/self/fd/{}", fd));
    close(fd);
    return e;
  } catch (...) {
    close(fd);
    throw;
  }
}

void CpuDevice::enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool) const {
  abi::launch(reinterpret_cast<abi::PackedKernel>(const_cast<void*>(k.native)), args, shape.grid[0], shape.grid[1],
              shape.grid[2]);
}

Device& cpuDevice() {
  static CpuDevice device;
  return device;
}

}  // namespace strata::runtime
