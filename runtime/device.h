// The device interface every target implements (DESIGN.md "Devices", as
// IREE's HAL): memory, executables loaded from a kernel set's binaries,
// launches, recorded launch sequences that replay as one unit, and timing.
// Implementations live in runtime/devices/<target>/device.{h,cpp}, one
// folder per target with the same file names:
//   cpu   host memory; executables are shared libraries of generated
//         kernels (dlopen), a launch runs the programs on the thread pool
//   null  accounts for allocations, copies and launches and holds no data:
//         cache sizing and the GPU executor's launch plans at sizes no
//         machine here has
//   cuda  the driver API through dlopen: device memory, cubin / PTX
//         modules, launches (programmatic where the kernels allow it), CUDA
//         graphs of recorded launches, TMA tensor maps
// What only one target has stays behind a hook with a default that says
// so (tensorMap: "the cpu device has no tensor maps").
//
// Contract: allocate() throws strata::Error naming the device, the request
// and the memory left when it cannot satisfy it; copies are between
// allocations of this device; work is enqueued in issue order and
// synchronize() returns when everything issued before it is done (the cpu
// device runs everything at once).
#pragma once
#include <array>
#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "ops/abi.h"

namespace strata::runtime {

// A kernel of a loaded executable: the device's own handle (a CUDA
// function, a host function pointer, a null device's name), valid while its
// executable lives.
struct KernelHandle {
  const void* native = nullptr;
  explicit operator bool() const { return native != nullptr; }
  auto operator<=>(const KernelHandle&) const = default;
};

// A loaded kernel binary (a cubin or PTX module, a shared library of host
// kernels): its kernels by name.
class Executable {
 public:
  virtual ~Executable() = default;
  // Throws strata::Error naming the kernel when the executable has none.
  virtual KernelHandle kernel(const std::string& name) const = 0;
};

using Dim3 = std::array<unsigned, 3>;

// Where a launch runs: programs (blocks, workgroups) of `block` threads
// each with `sharedBytes` of dynamic workgroup-local memory. The cpu
// device runs each program on one thread (`block` means nothing there).
struct LaunchShape {
  Dim3 grid{1, 1, 1}, block{1, 1, 1};
  unsigned sharedBytes = 0;
  bool operator==(const LaunchShape&) const = default;
};

// The launches some work issued, in order, with their argument bytes and
// dependencies (indices of earlier launches: the previous launch on the
// same branch, and every branch's last launch after a concurrently()).
// Equal records launch the same kernels on the same arguments, so a replay
// made from one replays the other.
struct LaunchRecord {
  struct Launch {
    KernelHandle kernel;
    LaunchShape shape;
    std::vector<uint8_t> args;       // every argument's bytes, at its offset
    std::vector<size_t> argOffsets;  // where each argument starts in `args`
    std::vector<size_t> deps;
    // The kernel waits for its predecessor before touching memory
    // (Device::allowEarlyLaunch), so it may be scheduled while that one runs.
    bool early = false;
    bool operator==(const Launch&) const = default;
    // Pointers to each argument's bytes (a CUDA kernel's kernelParams, a
    // host kernel's packed slots).
    std::vector<void*> argPointers() const;
  };
  std::vector<Launch> launches;
  // A concurrently() call: its branches' launches, branch i being
  // [i ? ends[i - 1] : begin, ends[i]).
  struct Fork {
    size_t begin = 0;
    std::vector<size_t> ends;
    bool operator==(const Fork&) const = default;
  };
  std::vector<Fork> forks;
  // False when the recorded work also copied or downloaded (record with
  // enqueue): its launches alone are not that work.
  bool launchesOnly = true;
  bool operator==(const LaunchRecord&) const = default;
};

// A record made into one unit the device replays (a CUDA graph; on the cpu
// and null devices the launches again, in order).
class Replay {
 public:
  virtual ~Replay() = default;
  // Enqueues every launch of the record.
  virtual void launch() const = 0;
  // How many of its dependencies let a launch start while its predecessor
  // finishes (CUDA's programmatic edges; 0 elsewhere).
  virtual size_t earlyEdges() const { return 0; }
};

// A 2-D block-copy descriptor over a row-major [rows, cols] array of 16-bit
// elements (bf16 / f16) at `base`, read in boxes of boxRows x 64 elements
// with the 128-byte swizzle; elements outside the array arrive as zeros.
// With `planes` > 0 it is 3-D: `planes` such arrays back to back, a box one
// plane deep. With `boxPanels` > 0 it is a panel map (stores): the array as
// 64-column panels, a box of boxPanels panels of boxRows rows. On the cuda
// device a TMA tensor map (runtime/devices/cuda/tensor_maps.h).
// A request's identity (values, so a map may keep it as its key).
using TensorMapKey = std::tuple<const void*, bool, int64_t, int64_t, int64_t, int64_t, int64_t>;
struct TensorMapRequest {
  const void* base = nullptr;
  bool bf16 = true;  // else f16
  int64_t rows = 0, cols = 0, boxRows = 0;
  int64_t planes = 0;     // 0: a 2-D map
  int64_t boxPanels = 0;  // 0: not a panel map
  TensorMapKey key() const { return {base, bf16, rows, cols, boxRows, planes, boxPanels}; }
};

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // --- What it is.
  virtual const char* name() const = 0;  // "cpu", "null", "cuda"
  // The hardware, for messages ("NVIDIA H200"); default name().
  virtual std::string description() const { return name(); }
  // Whether host code (the CPU backend's kernels) may read and write this
  // device's memory through the pointers allocate() returns.
  virtual bool hostAddressable() const = 0;
  // "" when kernels compiled for `target` (a kernel set's manifest: "sm_90")
  // run here, else why not.
  virtual std::string cannotRun(const std::string& target) const;
  // Programs that run at once across the device (SMs, Xe cores; the cpu
  // device: its threads) and the workgroup-local memory each unit has.
  virtual int computeUnits() const { return 1; }
  virtual int64_t localMemoryPerUnit() const { return 0; }
  // Makes the device usable from the calling thread, which must call this
  // before anything else here when it is not the thread that opened the
  // device (a server's engine thread). CUDA: its context becomes the
  // thread's current one. Default: nothing to do.
  virtual void useOnThisThread() const {}

  // --- Memory.
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
  // Device to device, in issue order.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() const {}
  // Host to device after everything issued before it (pageable `host`),
  // and device to host once the copy is done. Default: memcpy on a
  // host-addressable device.
  virtual void upload(void* dst, const void* host, size_t bytes);
  virtual void download(void* host, const void* src, size_t bytes);
  // Host memory uploadAsync may read from (page-locked on a GPU), freed
  // with its last owner.
  virtual std::shared_ptr<uint8_t> stagingHost(size_t bytes) const;
  // Enqueues an upload from `host` (stagingHost) and returns at once:
  // `host` must keep its bytes until waitForUploads() returns. Default:
  // upload().
  virtual void uploadAsync(void* dst, const void* host, size_t bytes);
  // Returns once every uploadAsync before it has run.
  virtual void waitForUploads() const {}
  // Copies issued since construction (tests check copy-on-write with it).
  uint64_t copies() const { return copies_; }

  // --- Executables and launches.
  // An executable from a kernel binary's bytes (a cubin or PTX; a shared
  // library); throws naming the device and what it refused (a JIT log).
  // Default: "the <name> device loads no kernels".
  virtual std::unique_ptr<Executable> loadExecutable(const std::string& image) const;
  // Enqueues one launch of `k` with `args` (their slots and sizes: ops/abi.h),
  // or only records it inside record().
  void launch(KernelHandle k, const LaunchShape& shape, const abi::KernelArgs& args) const;
  // Marks `k` as waiting for the previous launch before touching memory
  // (compiled with griddepcontrol.wait at entry), so that the device may
  // start it while that one still runs, where it can (cuda: programmatic
  // dependent launch, STRATA_CUDA_PDL not "off"). No-op elsewhere.
  void allowEarlyLaunch(KernelHandle k) const;
  bool launchesEarly() const { return earlyLaunches_; }
  // How many programs of `k` (of `threads` threads and `sharedBytes` of
  // local memory) one compute unit holds at once; at least 1. Default 1.
  virtual int residentPrograms(KernelHandle k, unsigned threads, unsigned sharedBytes) const;
  // The device address of the block-copy descriptor for `r`, made on first
  // request and kept for the device's life (`what` names the operand in
  // errors). Default: throws that this device has none.
  virtual const void* tensorMap(const TensorMapRequest& r, const std::string& what) const;
  // Descriptors made so far.
  virtual size_t tensorMapCount() const { return 0; }
  // Enqueues independent work side by side: branch i's launches may run
  // beside the others', each starting after everything enqueued before,
  // and what is enqueued after waits for all of them. Branches may only
  // launch kernels. Default: the branches in order.
  void concurrently(const std::vector<std::function<void()>>& branches) const;

  // --- Recording and replay.
  // Runs `work` with its launches recorded instead of enqueued (launch()
  // and concurrently() enqueue nothing; copies and downloads throw; an
  // upload runs at once, so only into memory no recorded launch touches).
  // With `enqueue` the launches are also enqueued as without a record
  // (copies and downloads then run too, and mark the record as more than
  // its launches: LaunchRecord::launchesOnly).
  LaunchRecord record(const std::function<void()>& work, bool enqueue = false) const;
  // The record as one unit to replay. Default: its launches again, in
  // order (what a replay is where launches cost no more one by one).
  virtual std::unique_ptr<Replay> replayable(const LaunchRecord& r) const;

  // --- Timing.
  // Milliseconds the device spent on what `work` enqueues. Default: the
  // host clock between two synchronize()s.
  virtual float timeMs(const std::function<void()>& work) const;

 protected:
  // Enqueues one launch now (record() handled it already). `early`: the
  // kernel may start before its predecessor ends. Default: throws.
  virtual void enqueue(KernelHandle k, const LaunchShape& shape, std::span<void* const> args, bool early) const;
  // concurrently() outside a record: default, the branches in order.
  virtual void enqueueBranches(const std::vector<std::function<void()>>& branches) const;
  // A device calls this in copies and downloads: they throw inside a
  // record() without enqueue (they would run before the recorded work) and
  // mark a record with enqueue as more than launches. `what` names the call.
  void noteNonLaunch(const char* what) const;
  // Throws inside any record() (`what` names the call).
  void refuseWhileRecording(const char* what) const;
  // Whether this device can start early launches (set by a device at open).
  bool earlyLaunches_ = false;
  std::atomic<uint64_t> allocated_{0}, copies_{0};

 private:
  mutable LaunchRecord* recording_ = nullptr;
  mutable bool enqueueing_ = false;  // record(work, true)
  mutable std::vector<size_t> frontier_;  // the launches the next one depends on
  mutable std::set<KernelHandle> early_;  // allowEarlyLaunch's kernels
};

// The process's host device (runtime/devices/cpu/device.h).
Device& cpuDevice();
// A fresh null device of `capacity` bytes (runtime/devices/null/device.h).
std::unique_ptr<Device> makeNullDevice(uint64_t capacity);

}  // namespace strata::runtime
