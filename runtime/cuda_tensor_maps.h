// TMA tensor maps (CUtensorMap) for the kernels that copy through them
// (codegen tile.tma_copy: the warpgroup-dot GEMMs' operand staging). A map
// describes a global array, so the runtime makes one per distinct (array,
// box) on the host with cuTensorMapEncodeTiled and keeps it in device
// memory for the kernels to read. Runtime only (no LLVM).
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "runtime/cuda_driver.h"

namespace strata::runtime {

// A row-major [rows, cols] array of 16-bit elements (bf16 / f16) at `base`
// (16-byte aligned, cols a multiple of 8: TMA's 16-byte row pitch), read in
// boxes of boxRows x 64 elements (128 bytes along cols) with the 128-byte
// swizzle; elements outside the array arrive as zeros. With `planes` > 0
// the map is 3-D: `planes` such arrays back to back ([planes, rows, cols]),
// a box one plane deep, so rows past a plane's last read zeros too.
// With `boxPanels` > 0 the map is a panel map (tile.tma_store's): the
// array viewed as 64-column panels, 3-D (64, cols / 64, rows), a box of
// boxPanels panels of boxRows rows, which is a dense [boxRows, 64
// boxPanels] block in shared memory (128-byte swizzled rows in order);
// columns past the last whole panel are outside it. Not with planes.
struct TensorMapRequest {
  const void* base = nullptr;
  bool bf16 = true;  // else f16
  int64_t rows = 0, cols = 0, boxRows = 0;
  int64_t planes = 0;     // 0: a 2-D map
  int64_t boxPanels = 0;  // 0: not a panel map
  auto key() const { return std::tie(base, bf16, rows, cols, boxRows, planes, boxPanels); }
};

class CudaTensorMaps {
 public:
  // Device memory of the CUDA context current where get() runs (the
  // device's, which outlives this object).
  CudaTensorMaps() = default;
  ~CudaTensorMaps();
  CudaTensorMaps(const CudaTensorMaps&) = delete;
  CudaTensorMaps& operator=(const CudaTensorMaps&) = delete;

  // The device address of the map for `r`, made on first request and
  // copied into a slot no launch has seen by a copy enqueued on `stream`:
  // the stream the kernel that reads it is launched on, so the host does
  // not wait (a synchronous copy waited for every kernel queued before it,
  // and a prompt of a new length, with new maps over its activations in
  // every layer, drained the queue at each). A request from another
  // stream while that copy may be pending makes its stream wait for the
  // copy (an event). Maps are kept for the object's life, 128 bytes each,
  // on the device and, as the copies' sources, on the host: requests
  // repeat, as the executor's buffers and the weights do. Throws naming
  // `what` when the array breaks TMA's rules or the driver lacks tensor
  // maps (CUDA < 12).
  const void* get(const TensorMapRequest& r, const char* what, cuda::CUstream stream = nullptr);
  size_t size() const { return maps_.size(); }

 private:
  std::mutex mutex_;
  struct Slot {
    const void* map;
    cuda::CUstream stream;  // where its copy was enqueued
    cuda::CUevent copied;   // recorded after the copy; null once seen done
  };
  std::map<std::tuple<const void*, bool, int64_t, int64_t, int64_t, int64_t, int64_t>, Slot> maps_;
  std::vector<cuda::CUevent> events_;  // every event made; those of copies seen done are reused
  std::vector<cuda::CUevent> free_;
  std::vector<cuda::CUdeviceptr> chunks_;  // device slots, kChunkMaps maps each
  std::deque<cuda::TensorMap> host_;       // every map, where its copy reads it (stable addresses)
  size_t used_ = 0;            // slots taken in the last chunk
};

}  // namespace strata::runtime
