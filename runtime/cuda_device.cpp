#include "runtime/cuda_device.h"

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
  pdl_ = d_.cuLaunchKernelEx && cc_ >= 90 && !(pdl && std::string(pdl) == "off");
}

void CudaDevice::allowProgrammaticLaunch(CUfunction f) const {
  if (pdl_) programmatic_.insert(f);
}

CudaDevice::~CudaDevice() {
  if (uploaded_) d_.cuEventDestroy(uploaded_);
  for (CUevent e : events_) d_.cuEventDestroy(e);
  for (CUstream s : side_) d_.cuStreamDestroy(s);
  d_.cuDevicePrimaryCtxRelease(dev_);
}

void CudaDevice::concurrently(const std::vector<std::function<void()>>& branches) const {
  if (!recording_) return runBranches(branches);
  // Each branch starts after what came before; what follows waits for
  // every branch's last launch.
  const std::vector<size_t> fork = frontier_;
  std::vector<size_t> tails;
  LaunchRecord::Fork marks{recording_->launches.size(), {}};
  std::vector<std::function<void()>> noted;
  for (size_t i = 0; i < branches.size(); ++i)
    noted.push_back([&, i] {
      frontier_ = fork;
      branches[i]();
      for (size_t t : frontier_)
        if (std::find(tails.begin(), tails.end(), t) == tails.end()) tails.push_back(t);
      marks.ends.push_back(recording_->launches.size());
    });
  if (enqueueing_) {
    runBranches(noted);
  } else {
    for (const auto& b : noted) b();
  }
  frontier_ = tails;
  recording_->forks.push_back(std::move(marks));
}

void CudaDevice::runBranches(const std::vector<std::function<void()>>& branches) const {
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
  if (recording_ && !enqueueing_) fail("CudaDevice::copy while recording launches (a copy would run before them)");
  if (recording_) recording_->launchesOnly = false;
  check(d_.cuMemcpyDtoD(dptr(dst), dptr(src), bytes), "cuMemcpyDtoD");
  ++copies_;
}

void CudaDevice::synchronize() { check(d_.cuCtxSynchronize(), "cuCtxSynchronize"); }

void CudaDevice::upload(void* dst, const void* host, size_t bytes) {
  check(d_.cuMemcpyHtoD(dptr(dst), host, bytes), "cuMemcpyHtoD");
}

std::shared_ptr<uint8_t> CudaDevice::pinnedHost(size_t bytes) const {
  void* p = nullptr;
  check(d_.cuMemHostAlloc(&p, std::max<size_t>(bytes, 1), 0), "cuMemHostAlloc");
  const cuda::Driver* d = &d_;
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [d](uint8_t* q) { d->cuMemFreeHost(q); });
}

void CudaDevice::uploadAsync(void* dst, const void* host, size_t bytes) const {
  if (recording_) fail("CudaDevice::uploadAsync while recording launches");
  if (!uploaded_) check(d_.cuEventCreate(&uploaded_, 2), "cuEventCreate");  // CU_EVENT_DISABLE_TIMING
  check(d_.cuMemcpyHtoDAsync(dptr(dst), host, bytes, nullptr), "cuMemcpyHtoDAsync");
  check(d_.cuEventRecord(uploaded_, nullptr), "cuEventRecord");
}

void CudaDevice::waitForUploads() const {
  if (uploaded_) check(d_.cuEventSynchronize(uploaded_), "cuEventSynchronize");
}

void CudaDevice::download(void* host, const void* src, size_t bytes) {
  if (recording_ && !enqueueing_) fail("CudaDevice::download while recording launches (they have not run)");
  if (recording_) recording_->launchesOnly = false;
  check(d_.cuMemcpyDtoH(host, dptr(src), bytes), "cuMemcpyDtoH");
}

std::unique_ptr<CudaDevice::Module> CudaDevice::loadModule(const std::string& image) const {
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
  return std::unique_ptr<Module>(new Module(*this, m));
}

CudaDevice::Module::~Module() { device_.d_.cuModuleUnload(module_); }

CUfunction CudaDevice::Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  check(device_.d_.cuModuleGetFunction(&f, module_, name.c_str()), fmt::format("cuModuleGetFunction({})", name).c_str());
  int local = 0;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
  check(device_.d_.cuFuncGetAttribute(&local, 3, f), fmt::format("cuFuncGetAttribute({}, local size)", name).c_str());
  device_.reserveLocalMemory(size_t(local));
  return f;
}

void CudaDevice::reserveLocalMemory(size_t bytes) const {
  if (bytes <= localBytes_) return;
  size_t now = 0;  // CU_LIMIT_STACK_SIZE = 0
  check(d_.cuCtxGetLimit(&now, 0), "cuCtxGetLimit(stack size)");
  if (bytes > now) check(d_.cuCtxSetLimit(0, bytes), fmt::format("cuCtxSetLimit(stack size, {} bytes)", bytes).c_str());
  localBytes_ = std::max(bytes, now);
}

const std::vector<std::pair<size_t, size_t>>& CudaDevice::argLayout(CUfunction f) const {
  for (const auto& [fn, layout] : argLayouts_)
    if (fn == f) return layout;
  std::vector<std::pair<size_t, size_t>> layout;
  size_t off = 0, size = 0;
  // CUDA_ERROR_INVALID_VALUE past the last argument.
  while (d_.cuFuncGetParamInfo(f, layout.size(), &off, &size) == 0) layout.push_back({off, size});
  argLayouts_.push_back({f, std::move(layout)});
  return argLayouts_.back().second;
}

LaunchRecord CudaDevice::record(const std::function<void()>& work, bool enqueue) const {
  if (recording_) fail("CudaDevice::record: already recording");
  LaunchRecord r;
  recording_ = &r;
  enqueueing_ = enqueue;
  frontier_.clear();
  try {
    work();
  } catch (...) {
    recording_ = nullptr;
    enqueueing_ = false;
    throw;
  }
  recording_ = nullptr;
  enqueueing_ = false;
  return r;
}

// Dynamic shared memory over 48 KiB must be allowed per function before a
// launch uses it (and before the occupancy calculator counts it).
static void allowSharedBytes(const Driver& d, CUfunction f, unsigned sharedBytes) {
  if (sharedBytes > 48 * 1024)  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    check(d.cuFuncSetAttribute(f, 8, (int)sharedBytes), "cuFuncSetAttribute(max dynamic shared memory)");
}

int CudaDevice::residentPrograms(CUfunction f, unsigned threads, unsigned sharedBytes) const {
  allowSharedBytes(d_, f, sharedBytes);
  int blocks = 0;
  check(d_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, (int)threads, sharedBytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return std::max(blocks, 1);
}

void CudaDevice::launch(CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                        unsigned sharedBytes, void** args) const {
  allowSharedBytes(d_, f, sharedBytes);
  if (recording_) {
    LaunchRecord::Launch l{f, grid, block, sharedBytes, {}, {}, frontier_, programmatic_.count(f) > 0};
    for (auto [off, size] : argLayout(f)) {
      if (l.args.size() < off + size) l.args.resize(off + size);
      std::memcpy(l.args.data() + off, args[l.argOffsets.size()], size);
      l.argOffsets.push_back(off);
    }
    frontier_ = {recording_->launches.size()};
    recording_->launches.push_back(std::move(l));
    if (!enqueueing_) return;
  }
  if (!programmatic_.empty() && programmatic_.count(f)) {
    // Each kernel starts with griddepcontrol.wait (codegen/CudaBackend.cpp),
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
