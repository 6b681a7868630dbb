// The cuda device (runtime/device.h) over the driver API
// (runtime/devices/cuda/driver.h): device memory, copies, modules (PTX,
// which the driver compiles for the GPU, or cubin), launches on the
// default stream (side streams inside concurrently()), programmatic
// dependent launch for kernels that wait for their predecessor, CUDA graphs
// of recorded launches (replay.h), TMA tensor maps (tensor_maps.h) and
// event timing. Every driver call is checked; a failure throws
// strata::Error naming the call and CUDA's error. A machine without a
// usable GPU gets "no CUDA device: <why>" from open(), and tests skip with
// unavailable()'s reason.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "runtime/devices/cuda/driver.h"

namespace strata::runtime {

class CudaTensorMaps;

class CudaDevice final : public Device {
 public:
  static std::unique_ptr<CudaDevice> open(int ordinal = 0);
  // "" when open() would succeed, else why it would not.
  static std::string unavailable();
  ~CudaDevice() override;

  const char* name() const override { return "cuda"; }
  std::string description() const override { return deviceName_; }
  bool hostAddressable() const override { return false; }
  // "" for "sm_<this GPU's compute capability>".
  std::string cannotRun(const std::string& target) const override;
  void useOnThisThread() const override;
  int computeUnits() const override { return sms_; }
  int64_t localMemoryPerUnit() const override { return sharedPerSm_; }
  uint64_t capacity() const override { return totalMemory_; }
  uint64_t available() const override;
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() const override;
  // Waits for the default stream, then copies (pageable host memory).
  void upload(void* dst, const void* host, size_t bytes) override;
  void download(void* host, const void* src, size_t bytes) override;
  // Page-locked host memory (cuMemHostAlloc).
  std::shared_ptr<uint8_t> stagingHost(size_t bytes) const override;
  // cuMemcpyHtoDAsync on the default stream.
  void uploadAsync(void* dst, const void* host, size_t bytes) override;
  // Returns at once when a download has waited for the stream since.
  void waitForUploads() const override;
  // A module from PTX text or a cubin image; a PTX the driver rejects
  // throws with its JIT log. Each kernel taken from it grows the context's
  // per-thread local memory to what its threads need (reserveLocalMemory).
  std::unique_ptr<Executable> loadExecutable(const std::string& image) const override;
  // The driver's occupancy calculator (registers, shared memory, threads).
  int residentPrograms(KernelHandle k, unsigned threads, unsigned sharedBytes) const override;
  // A TMA tensor map, its copy to the device enqueued on the stream the
  // next launch goes to (CudaTensorMaps::get).
  const void* tensorMap(const TensorMapRequest& r, const std::string& what) const override;
  size_t tensorMapCount() const override;
  // A CUDA graph of the record's launches (replay.h).
  std::unique_ptr<Replay> replayable(const LaunchRecord& r) const override;
  // Events around `work` on the default stream.
  float timeMs(const std::function<void()>& work) const override;

  int computeCapability() const { return cc_; }  // 90 for sm_90
  // Grows the context's per-thread local memory (CU_LIMIT_STACK_SIZE) to
  // `bytes` when it holds less. The driver otherwise grows it at the first
  // launch that needs more, reserving it for every thread the GPU can hold
  // (H100: 3.7 KB a thread, about 1 GB, 0.47 ms, in the middle of a
  // prompt); kernels with spills need it. Never shrinks it.
  void reserveLocalMemory(size_t bytes) const;

 protected:
  // cuLaunchKernel, or cuLaunchKernelEx with programmatic stream
  // serialization for an early launch; on the stream of the current
  // concurrently() branch.
  void enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool early) const override;
  // Branch i on stream i (branch 0: the default stream), ordered by events.
  void enqueueBranches(const std::vector<std::function<void()>>& branches) const override;

 private:
  CudaDevice(const cuda::Driver& d, int ordinal);
  const cuda::Driver& d_;
  cuda::CUdevice dev_ = 0;
  cuda::CUcontext ctx_ = nullptr;
  uint64_t totalMemory_ = 0;
  std::string deviceName_;
  int cc_ = 0, sms_ = 0, sharedPerSm_ = 0;
  // concurrently(): side streams and their events, made on first use.
  mutable std::vector<cuda::CUstream> side_;
  mutable std::vector<cuda::CUevent> events_;
  mutable cuda::CUstream current_ = nullptr;  // where enqueue() launches
  mutable cuda::CUevent uploaded_ = nullptr;  // after the last uploadAsync
  mutable size_t localBytes_ = 0;  // per-thread local memory reserved (reserveLocalMemory)
  std::unique_ptr<CudaTensorMaps> tensorMaps_;  // freed before the context is released
};

}  // namespace strata::runtime
