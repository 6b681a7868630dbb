#include "runtime/devices/cuda/tensor_maps.h"

#include "ops/error.h"

namespace strata::runtime {

namespace {
constexpr size_t kMapBytes = sizeof(cuda::TensorMap), kChunkMaps = 512;
constexpr int64_t kBoxCols = 64;  // 128 bytes of 16-bit elements: the swizzled row
}  // namespace

CudaTensorMaps::~CudaTensorMaps() {
  if (const cuda::Driver* d = cuda::driver()) {
    for (cuda::CUevent e : events_) d->cuEventDestroy(e);
    for (cuda::CUdeviceptr c : chunks_) d->cuMemFree(c);
  }
}

const void* CudaTensorMaps::get(const TensorMapRequest& r, const char* what, cuda::CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const cuda::Driver* d = cuda::driver();
  if (auto it = maps_.find(r.key()); it != maps_.end()) {
    Slot& s = it->second;
    if (s.copied) {
      const cuda::CUresult done = d->cuEventQuery(s.copied);
      if (done == 0) {
        free_.push_back(s.copied);
        s.copied = nullptr;
      } else if (done != cuda::kNotReady) {
        cuda::check(done, "cuEventQuery (tensor map copy)");
      } else if (s.stream != stream) {
        cuda::check(d->cuStreamWaitEvent(stream, s.copied, 0), "cuStreamWaitEvent (tensor map copy)");
      }
    }
    return s.map;
  }
  if (!d || !d->cuTensorMapEncodeTiled)
    fail("{}: this CUDA driver has no tensor maps (cuTensorMapEncodeTiled, CUDA 12+), which the kernel's TMA copies "
         "need",
         what);
  if (!r.base || reinterpret_cast<uintptr_t>(r.base) % 16 || r.rows <= 0 || r.cols <= 0 || r.cols % 8 ||
      r.boxRows <= 0 || r.boxRows > 256 || r.planes < 0 || r.boxPanels < 0 || r.boxPanels > 256 ||
      (r.boxPanels && (r.planes || r.cols < kBoxCols)))
    fail("{}: a TMA tensor map needs a 16-byte aligned array with a row pitch of whole 16 bytes (columns a multiple "
         "of 8), boxes of 1 to 256 rows, and planes or up to 256 panels of 64 columns (not both; a panel map at least "
         "one panel wide); got [{}, {}] ({} planes) at {} with boxes of {} rows ({} panels)",
         what, r.rows, r.cols, r.planes, r.base, r.boxRows, r.boxPanels);
  using u64 = unsigned long long;
  cuda::TensorMap map{};
  const unsigned rank = r.planes > 0 || r.boxPanels > 0 ? 3 : 2;
  const u64 rowPitch = u64(r.cols) * 2;
  u64 dims[3], pitch[2];
  unsigned box[3];
  if (r.boxPanels) {  // (64 columns, panels, rows): boxes of boxPanels panels x boxRows rows
    dims[0] = kBoxCols, dims[1] = u64(r.cols / kBoxCols), dims[2] = u64(r.rows);
    pitch[0] = u64(kBoxCols) * 2, pitch[1] = rowPitch;
    box[0] = unsigned(kBoxCols), box[1] = unsigned(r.boxPanels), box[2] = unsigned(r.boxRows);
  } else {  // (cols, rows[, planes]): boxes of 64 columns x boxRows rows, one plane deep
    dims[0] = u64(r.cols), dims[1] = u64(r.rows), dims[2] = u64(r.planes);
    pitch[0] = rowPitch, pitch[1] = rowPitch * r.rows;
    box[0] = unsigned(kBoxCols), box[1] = unsigned(r.boxRows), box[2] = 1;
  }
  const unsigned unit[3] = {1, 1, 1};
  cuda::check(d->cuTensorMapEncodeTiled(&map, r.bf16 ? cuda::kTensorMapBfloat16 : cuda::kTensorMapFloat16, rank,
                                        const_cast<void*>(r.base), dims, pitch, box, unit,
                                        cuda::kTensorMapInterleaveNone, cuda::kTensorMapSwizzle128B,
                                        cuda::kTensorMapL2Promotion256B, cuda::kTensorMapOobFillZeros),
              "cuTensorMapEncodeTiled");
  if (chunks_.empty() || used_ == kChunkMaps) {
    cuda::CUdeviceptr c = 0;
    cuda::check(d->cuMemAlloc(&c, kChunkMaps * kMapBytes), "cuMemAlloc (tensor maps)");
    chunks_.push_back(c);
    used_ = 0;
  }
  cuda::CUdeviceptr slot = chunks_.back() + used_++ * kMapBytes;
  const cuda::TensorMap& source = host_.emplace_back(map);
  cuda::check(d->cuMemcpyHtoDAsync(slot, &source, kMapBytes, stream), "cuMemcpyHtoDAsync (tensor map)");
  if (free_.empty()) {
    cuda::CUevent e = nullptr;
    cuda::check(d->cuEventCreate(&e, 2), "cuEventCreate (tensor map copy)");  // CU_EVENT_DISABLE_TIMING
    events_.push_back(e);
    free_.push_back(e);
  }
  cuda::CUevent copied = free_.back();
  free_.pop_back();
  cuda::check(d->cuEventRecord(copied, stream), "cuEventRecord (tensor map copy)");
  const void* p = reinterpret_cast<const void*>(slot);
  maps_.emplace(r.key(), Slot{p, stream, copied});
  return p;
}

}  // namespace strata::runtime
