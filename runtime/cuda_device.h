// The cuda device (runtime/device.h) over the driver API (runtime/cuda_driver.h):
// device memory, copies, module loading (PTX, which the driver compiles for
// the GPU, or cubin), kernel launches and event timing. Every driver call is
// checked; a failure throws strata::Error naming the call and CUDA's error.
// A machine without a usable GPU gets "no CUDA device: <why>" from open(),
// and tests skip with unavailable()'s reason.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/cuda_graph.h"
#include "runtime/device.h"

namespace strata::runtime {

class CudaDevice final : public Device {
 public:
  static std::unique_ptr<CudaDevice> open(int ordinal = 0);
  // "" when open() would succeed, else why it would not.
  static std::string unavailable();
  ~CudaDevice() override;

  const char* name() const override { return "cuda"; }
  bool hostAddressable() const override { return false; }
  uint64_t capacity() const override { return totalMemory_; }
  uint64_t available() const override;
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  // Waits for the default stream, then copies (pageable host memory).
  void upload(void* dst, const void* host, size_t bytes);
  void download(void* host, const void* src, size_t bytes);
  // Page-locked host memory (cuMemHostAlloc), freed with its last owner:
  // the source uploadAsync needs.
  std::shared_ptr<uint8_t> pinnedHost(size_t bytes) const;
  // Enqueues a copy from page-locked `host` (pinnedHost) to `dst` on the
  // default stream and returns at once (cuMemcpyHtoDAsync), where upload()
  // waits for the stream first: `host` must keep its bytes until the
  // stream reaches the copy (waitForUploads).
  void uploadAsync(void* dst, const void* host, size_t bytes) const;
  // Returns once every uploadAsync before it has run (at once when a
  // download has waited for the stream since).
  void waitForUploads() const;

  std::string deviceName() const { return deviceName_; }
  int computeCapability() const { return cc_; }  // 90 for sm_90
  int multiprocessors() const { return sms_; }
  int64_t sharedMemoryPerMultiprocessor() const { return sharedPerSm_; }  // bytes

  // A loaded module; functions live as long as it does.
  class Module {
   public:
    ~Module();
    // The function, with the context's local memory grown now to what each
    // of its threads needs (reserveLocalMemory).
    cuda::CUfunction function(const std::string& name) const;

   private:
    friend class CudaDevice;
    Module(const CudaDevice& device, cuda::CUmodule m) : device_(device), module_(m) {}
    const CudaDevice& device_;
    cuda::CUmodule module_;
  };
  // PTX text or a cubin image; a PTX the driver rejects throws with its JIT log.
  std::unique_ptr<Module> loadModule(const std::string& image) const;
  // Asynchronous on the default stream; `args` point at each kernel
  // argument. A function marked with allowProgrammaticLaunch() is launched
  // with programmatic stream serialization when the driver has it (CUDA
  // 12+, sm_90) and STRATA_CUDA_PDL is not "off": it may be scheduled
  // while the previous kernel still runs, hiding its launch behind that
  // kernel. Only functions that wait for the previous grid before touching
  // memory (griddepcontrol.wait at entry: codegen/CudaBackend.cpp) may be
  // marked.
  void allowProgrammaticLaunch(cuda::CUfunction f) const;
  bool programmaticLaunch() const { return pdl_; }
  // How many programs of `f` (blocks of `threads` with `sharedBytes` of
  // dynamic shared memory) one SM holds at once, by the driver's occupancy
  // calculator (registers, shared memory, threads); at least 1.
  int residentPrograms(cuda::CUfunction f, unsigned threads, unsigned sharedBytes) const;
  // Grows the context's per-thread local memory (CU_LIMIT_STACK_SIZE) to
  // `bytes` when it holds less. The driver otherwise grows it at the first
  // launch that needs more, reserving it for every thread the GPU can hold
  // (H100: 3.7 KB a thread, about 1 GB, 0.47 ms, in the middle of a
  // prompt); kernels with spills need it. Never shrinks it.
  void reserveLocalMemory(size_t bytes) const;
  void launch(cuda::CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, unsigned sharedBytes,
              void** args) const;
  // The stream launch() enqueues on now (a side stream inside a branch of
  // concurrently(), else the default stream): where work a launch needs
  // first, such as a tensor map's copy, goes.
  cuda::CUstream launchStream() const { return current_; }
  // Milliseconds the device spent on what `work` enqueues (events around it).
  float timeMs(const std::function<void()>& work) const;
  // Enqueues independent work side by side: branch i's launches go to
  // stream i (branch 0: the default stream), each starting after
  // everything enqueued before, and the default stream waits for all of
  // them before anything enqueued after. Branches may only launch kernels
  // (copies stay on the default stream). Used where one launch cannot
  // fill the GPU (the k and v projections of a decode step).
  void concurrently(const std::vector<std::function<void()>>& branches) const;

  // Runs `work` with its launches recorded instead of enqueued (launch()
  // and concurrently() enqueue nothing; device copies and downloads throw;
  // an upload runs at once, so only into memory no recorded launch
  // touches): what it would have launched, arguments by value. With
  // `enqueue` the launches are also enqueued as without a record (copies
  // and downloads then run too, and mark the record as more than its
  // launches: LaunchRecord::launchesOnly).
  LaunchRecord record(const std::function<void()>& work, bool enqueue = false) const;
  // A graph of a record's launches (branches of a concurrently() side by
  // side; programmatic functions behind programmatic edges, CudaGraph).
  CudaGraph graph(const LaunchRecord& r) const { return CudaGraph(d_, r); }

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
  mutable cuda::CUstream current_ = nullptr;  // where launch() enqueues
  // record(): where launches go, and the launches the next one depends on.
  mutable LaunchRecord* recording_ = nullptr;
  mutable bool enqueueing_ = false;  // record(work, true)
  // concurrently() without a record: branch i on stream i.
  void runBranches(const std::vector<std::function<void()>>& branches) const;
  // Programmatic dependent launch: available and on, and the functions
  // that may use it.
  bool pdl_ = false;
  mutable std::set<cuda::CUfunction> programmatic_;
  mutable std::vector<size_t> frontier_;
  mutable cuda::CUevent uploaded_ = nullptr;  // after the last uploadAsync
  mutable size_t localBytes_ = 0;  // per-thread local memory reserved (reserveLocalMemory)
  // Each function's argument (offset, size) pairs (cuFuncGetParamInfo).
  mutable std::vector<std::pair<cuda::CUfunction, std::vector<std::pair<size_t, size_t>>>> argLayouts_;
  const std::vector<std::pair<size_t, size_t>>& argLayout(cuda::CUfunction f) const;
};

}  // namespace strata::runtime
