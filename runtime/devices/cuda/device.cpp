#include "runtime/devices/cuda/device.h"

#include "runtime/devices/cuda/replay.h"
#include "runtime/devices/cuda/tensor_maps.h"

#include <cstdlib>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/error.h"

namespace strata::runtime {

using namespace cuda;

namespace {
CUdeviceptr dptr(const void* p) { return (CUdeviceptr) reinterpret_cast<uintptr_t>(p); }
}  // namespace

std::string CudaDevice::unavailable() {
  std::string why;
  return driver(&why) ? std::string() : why;
}

std::unique_ptr<CudaDevice> CudaDevice::open(int ordinal) {
  std::string why;
  const Driver* d = driver(&why);
  if (!d) fail("no CUDA device: {}", why);
  int count = 0;
  check(d->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) fail("no CUDA device {}: the driver reports {}", ordinal, count);
  return std::unique_ptr<CudaDevice>(new CudaDevice(*d, ordinal));
}

CudaDevice::CudaDevice(const Driver& d, int ordinal) : d_(d) {
  check(d_.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
  check(d_.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  char name[256] = {};
  check(d_.cuDeviceGetName(name, sizeof name, dev_), "cuDeviceGetName");
  deviceName_ = name;
  size_t total = 0;
  check(d_.cuDeviceTotalMem(&total, dev_), "cuDeviceTotalMem");
  totalMemory_ = total;
  int major = 0, minor = 0;
  check(d_.cuDeviceGetAttribute(&major, kComputeCapabilityMajor, dev_), "cuDeviceGetAttribute(major)");
  check(d_.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, dev_), "cuDeviceGetAttribute(minor)");
  check(d_.cuDeviceGetAttribute(&sms_, kMultiprocessorCount, dev_), "cuDeviceGetAttribute(multiprocessors)");
  check(d_.cuDeviceGetAttribute(&sharedPerSm_, kMaxSharedMemoryPerMultiprocessor, dev_),
        "cuDeviceGetAttribute(shared memory per multiprocessor)");
  cc_ = major * 10 + minor;
  const char* pdl = std::getenv("STRATA_CUDA_PDL");
  earlyLaunches_ = d_.cuLaunchKernelEx && cc_ >= 90 && !(pdl && std::string(pdl) == "off");
  tensorMaps_ = std::make_unique<CudaTensorMaps>();
}

std::string CudaDevice::cannotRun(const std::string& target) const {
  if (target == "sm_" + std::to_string(cc_)) return "";
  return fmt::format("kernels built for {} cannot run on {} (sm_{})", target, deviceName_, cc_);
}

void CudaDevice::useOnThisThread() const { check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

CudaDevice::~CudaDevice() {
  tensorMaps_.reset();
  if (uploaded_) d_.cuEventDestroy(uploaded_);
  for (CUevent e : events_) d_.cuEventDestroy(e);
  for (CUstream s : side_) d_.cuStreamDestroy(s);
  d_.cuDevicePrimaryCtxRelease(dev_);
}

void CudaDevice::enqueueBranches(const std::vector<std::function<void()>>& branches) const {
  if (branches.size() <= 1) {
    for (const auto& b : branches) b();
    return;
  }
  // CU_STREAM_NON_BLOCKING: the side streams do not wait for the legacy
  // default stream implicitly; the events order them explicitly.
  while (side_.size() + 1 < branches.size()) {
    CUstream s = nullptr;
    check(d_.cuStreamCreate(&s, 1), "cuStreamCreate");
    side_.push_back(s);
  }
  while (events_.size() < branches.size()) {  // CU_EVENT_DISABLE_TIMING
    CUevent e = nullptr;
    check(d_.cuEventCreate(&e, 2), "cuEventCreate");
    events_.push_back(e);
  }
  check(d_.cuEventRecord(events_[0], nullptr), "cuEventRecord");
  for (size_t i = 1; i < branches.size(); ++i)
    check(d_.cuStreamWaitEvent(side_[i - 1], events_[0], 0), "cuStreamWaitEvent");
  branches[0]();
  for (size_t i = 1; i < branches.size(); ++i) {
    current_ = side_[i - 1];
    try {
      branches[i]();
    } catch (...) {
      current_ = nullptr;
      throw;
    }
    current_ = nullptr;
    check(d_.cuEventRecord(events_[i], side_[i - 1]), "cuEventRecord");
    check(d_.cuStreamWaitEvent(nullptr, events_[i], 0), "cuStreamWaitEvent");
  }
}

uint64_t CudaDevice::available() const {
  size_t freeBytes = 0, total = 0;
  check(d_.cuMemGetInfo(&freeBytes, &total), "cuMemGetInfo");
  return freeBytes;
}

void* CudaDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  CUdeviceptr p = 0;
  CUresult r = d_.cuMemAlloc(&p, bytes);
  if (r != 0) {
    size_t freeBytes = 0, total = 0;
    d_.cuMemGetInfo(&freeBytes, &total);
    check(r, fmt::format("cuda device: allocating {:.1f} MiB ({:.1f} MiB free of {:.1f})", bytes / 1048576.0,
                         freeBytes / 1048576.0, total / 1048576.0)
                 .c_str());
  }
  check(d_.cuMemsetD8(p, 0, bytes), "cuMemsetD8");
  allocated_ += bytes;
  return reinterpret_cast<void*>((uintptr_t)p);
}

void CudaDevice::release(void* p, size_t bytes) {
  if (!p) return;
  check(d_.cuMemFree(dptr(p)), "cuMemFree");
  allocated_ -= bytes;
}

void CudaDevice::copy(void* dst, const void* src, size_t bytes) {
  noteNonLaunch("copy");
  check(d_.cuMemcpyDtoD(dptr(dst), dptr(src), bytes), "cuMemcpyDtoD");
  ++copies_;
}

void CudaDevice::synchronize() const { check(d_.cuCtxSynchronize(), "cuCtxSynchronize"); }

void CudaDevice::upload(void* dst, const void* host, size_t bytes) {
  check(d_.cuMemcpyHtoD(dptr(dst), host, bytes), "cuMemcpyHtoD");
}

std::shared_ptr<uint8_t> CudaDevice::stagingHost(size_t bytes) const {
  void* p = nullptr;
  check(d_.cuMemHostAlloc(&p, std::max<size_t>(bytes, 1), 0), "cuMemHostAlloc");
  const cuda::Driver* d = &d_;
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [d](uint8_t* q) { d->cuMemFreeHost(q); });
}

void CudaDevice::uploadAsync(void* dst, const void* host, size_t bytes) {
  refuseWhileRecording("uploadAsync");
  if (!uploaded_) check(d_.cuEventCreate(&uploaded_, 2), "cuEventCreate");  // CU_EVENT_DISABLE_TIMING
  check(d_.cuMemcpyHtoDAsync(dptr(dst), host, bytes, nullptr), "cuMemcpyHtoDAsync");
  check(d_.cuEventRecord(uploaded_, nullptr), "cuEventRecord");
}

void CudaDevice::waitForUploads() const {
  if (uploaded_) check(d_.cuEventSynchronize(uploaded_), "cuEventSynchronize");
}

void CudaDevice::download(void* host, const void* src, size_t bytes) {
  noteNonLaunch("download");
  check(d_.cuMemcpyDtoH(host, dptr(src), bytes), "cuMemcpyDtoH");
}

namespace {

// A loaded module; its functions live as long as it does.
class CudaModule final : public Executable {
 public:
  CudaModule(const CudaDevice& device, const Driver& d, CUmodule m) : device_(device), d_(d), module_(m) {}
  ~CudaModule() override { d_.cuModuleUnload(module_); }
  KernelHandle kernel(const std::string& name) const override {
    CUfunction f = nullptr;
    check(d_.cuModuleGetFunction(&f, module_, name.c_str()), fmt::format("cuModuleGetFunction({})", name).c_str());
    int local = 0;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    check(d_.cuFuncGetAttribute(&local, 3, f), fmt::format("cuFuncGetAttribute({}, local size)", name).c_str());
    device_.reserveLocalMemory(size_t(local));
    return {f};
  }

 private:
  const CudaDevice& device_;
  const Driver& d_;
  CUmodule module_;
};

CUfunction function(KernelHandle k) { return static_cast<CUfunction>(const_cast<void*>(k.native)); }

}  // namespace

std::unique_ptr<Executable> CudaDevice::loadExecutable(const std::string& image) const {
  // The JIT's error log says what is wrong with a PTX (CU_JIT_ERROR_LOG_BUFFER
  // = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 in cuda.h).
  std::vector<char> log(8192, '\0');
  int options[] = {5, 6};
  void* values[] = {log.data(), reinterpret_cast<void*>((uintptr_t)log.size())};
  std::string text = image;  // PTX must be NUL-terminated
  CUmodule m = nullptr;
  CUresult r = d_.cuModuleLoadDataEx(&m, text.c_str(), 2, options, values);
  if (r != 0) {
    std::string what = fmt::format("cuModuleLoadDataEx{}{}", log[0] ? ": " : "", log.data());
    check(r, what.c_str());
  }
  return std::make_unique<CudaModule>(*this, d_, m);
}

void CudaDevice::reserveLocalMemory(size_t bytes) const {
  if (bytes <= localBytes_) return;
  size_t now = 0;  // CU_LIMIT_STACK_SIZE = 0
  check(d_.cuCtxGetLimit(&now, 0), "cuCtxGetLimit(stack size)");
  if (bytes > now) check(d_.cuCtxSetLimit(0, bytes), fmt::format("cuCtxSetLimit(stack size, {} bytes)", bytes).c_str());
  localBytes_ = std::max(bytes, now);
}

int CudaDevice::residentPrograms(KernelHandle k, unsigned threads, unsigned sharedBytes) const {
  CUfunction f = function(k);
  allowSharedBytes(d_, f, sharedBytes);
  int blocks = 0;
  check(d_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, (int)threads, sharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return std::max(blocks, 1);
}

void CudaDevice::enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> argSpan, bool early) const {
  CUfunction f = function(k);
  const Dim3 &grid = shape.grid, &block = shape.block;
  const unsigned sharedBytes = shape.sharedBytes;
  void** args = const_cast<void**>(argSpan.data());
  allowSharedBytes(d_, f, sharedBytes);
  if (early) {
    // Each kernel starts with griddepcontrol.wait (codegen/targets/cuda/Backend.cpp),
    // so it may be scheduled while the previous one runs: its launch is
    // hidden behind that kernel instead of following it.
    cuda::LaunchAttribute attr{};
    attr.id = cuda::kLaunchAttributeProgrammaticStreamSerialization;
    attr.value = 1;
    cuda::LaunchConfig c{grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedBytes, current_, &attr, 1};
    check(d_.cuLaunchKernelEx(&c, f, args, nullptr), "cuLaunchKernelEx");
    return;
  }
  check(d_.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedBytes, current_, args,
                          nullptr),
        "cuLaunchKernel");
}

const void* CudaDevice::tensorMap(const TensorMapRequest& r, const std::string& what) const {
  return tensorMaps_->get(r, what.c_str(), current_);
}

size_t CudaDevice::tensorMapCount() const { return tensorMaps_->size(); }

std::unique_ptr<Replay> CudaDevice::replayable(const LaunchRecord& r) const {
  return std::make_unique<CudaGraph>(d_, r);
}

float CudaDevice::timeMs(const std::function<void()>& work) const {
  CUevent start = nullptr, stop = nullptr;
  check(d_.cuEventCreate(&start, 0), "cuEventCreate");
  check(d_.cuEventCreate(&stop, 0), "cuEventCreate");
  float ms = 0;
  try {
    check(d_.cuEventRecord(start, nullptr), "cuEventRecord");
    work();
    check(d_.cuEventRecord(stop, nullptr), "cuEventRecord");
    check(d_.cuEventSynchronize(stop), "cuEventSynchronize");
    check(d_.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  } catch (...) {
    d_.cuEventDestroy(start);
    d_.cuEventDestroy(stop);
    throw;
  }
  d_.cuEventDestroy(start);
  d_.cuEventDestroy(stop);
  return ms;
}

}  // namespace strata::runtime
