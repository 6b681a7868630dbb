// TMA tensor maps (CUtensorMap) for the kernels that copy through them
// (codegen tile.tma_copy: the warpgroup-dot GEMMs' operand staging), what
// the cuda device's tensorMap() returns for a TensorMapRequest
// (runtime/device.h: the request's geometry). A map
// describes a global array, so the runtime makes one per distinct (array,
// box) on the host with cuTensorMapEncodeTiled and keeps it in device
// memory for the kernels to read. Runtime only (no LLVM).
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/device.h"
#include "runtime/devices/cuda/driver.h"

namespace strata::runtime {

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
  std::map<TensorMapKey, Slot> maps_;
  std::vector<cuda::CUevent> events_;  // every event made; those of copies seen done are reused
  std::vector<cuda::CUevent> free_;
  std::vector<cuda::CUdeviceptr> chunks_;  // device slots, kChunkMaps maps each
  std::deque<cuda::TensorMap> host_;       // every map, where its copy reads it (stable addresses)
  size_t used_ = 0;            // slots taken in the last chunk
};

}  // namespace strata::runtime
