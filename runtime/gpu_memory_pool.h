// The GPU executor's memory for intermediate values (runtime/gpu_executor.h):
// device blocks by size class, reused across nodes and steps in stream order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "ops/tensor.h"
#include "runtime/device.h"

namespace strata::runtime {

// Device blocks by size class, handed out again once their tensor dies,
// lowest address first: the same requests get the same blocks whatever
// order the last step's tensors died in, so repeated decode steps launch
// on the same buffers (CUDA graph replay compares the launches' arguments).
// Blocks are never cleared: every kernel writes its whole output.
//
// Blocks of kSlabMinBlock and more are carved from slabs of at least
// kSlabBytes (the first made with the pool), never given back until the
// pool dies: a device allocation (cuMemAlloc) costs 5-200 us a call (H100, 2026-11-25), and a
// first prompt of a new length asked for its blocks in its first layer
// while the GPU had little queued (docs/cuda.md of bd79745 "First prompts"). A block
// goes to the first slab with room at its end, so the same requests still
// get the same addresses. Smaller blocks (decode steps' activations) come
// from cuMemAlloc each: carved from slabs too, decode at batch 1 / 8 ran
// 0.8 / 1.3 % slower (not understood).
//
// A 16-bit tensor of more than kUnpaddedRows rows (rows: all but the last
// dimension) gets a block that holds its rows rounded up to `rowBlock`,
// the largest row block of the kernel set's TMA GEMMs, so that a GEMM
// reading it as A maps whole row blocks (GemmBuffers::aRows) and TMA does
// not zero-fill the last one's rows past M. Fewer rows are decode steps'
// small activations: their GEMMs copy A with cp.async (the decode class
// and the GEMV form), and 128 rows would grow them up to 128-fold.
class DevicePool {
 public:
  static constexpr int64_t kUnpaddedRows = 16;
  static constexpr size_t kSlabBytes = size_t(64) << 20, kSlabMinBlock = size_t(1) << 20;
  DevicePool(Device& d, int64_t rowBlock) : dev_(d), rowBlock_(rowBlock) {
    slabs_.push_back({dev_.allocate(kSlabBytes), kSlabBytes, 0});
  }
  ~DevicePool() {
    for (const Slab& s : slabs_) dev_.release(s.start, s.bytes);
    for (auto [p, bytes] : blocks_)
      if (bytes < kSlabMinBlock) dev_.release(const_cast<char*>(p), bytes);  // its own allocation
  }
  ops::Tensor tensor(ops::DType t, ops::Shape s) {
    size_t need = ops::numel(s) * ops::dtypeSize(t);
    if (rowBlock_ > 0 && ops::dtypeSize(t) == 2 && !s.empty() && s.back() > 0) {
      const int64_t rows = ops::numel(s) / s.back();
      if (rows > kUnpaddedRows) need = size_t((rows + rowBlock_ - 1) / rowBlock_ * rowBlock_ * s.back() * 2);
    }
    const size_t bytes = sizeClass(std::max<size_t>(need, 1));
    std::set<void*>& list = free_[bytes];
    void* p;
    if (!list.empty()) {
      p = *list.begin();
      list.erase(list.begin());
    } else {
      p = bytes >= kSlabMinBlock ? carve(bytes) : dev_.allocate(bytes);
      blocks_[static_cast<const char*>(p)] = bytes;
    }
    if (capturing_) captured_[p] = bytes;
    std::shared_ptr<const void> owner(p, [this, bytes](const void* q) { free_[bytes].insert(const_cast<void*>(q)); });
    return ops::Tensor(t, std::move(s), std::move(owner), p);
  }
  // Step graphs (the GPU executor's step graphs): while capturing, the
  // blocks handed out are noted; pinCaptured() then takes them all out of
  // circulation until the handle it returns dies, so that a graph
  // replaying the step's launches owns the memory they touch. A noted
  // block that is free now leaves its free list; one still held must lie
  // under one of `holders` (the graph keeps those tensors). Null, with
  // nothing taken, when another holder keeps one or the blocks come to
  // more than `mostBytes`.
  void capture(bool on) {
    capturing_ = on;
    if (on) captured_.clear();
  }
  std::shared_ptr<const void> pinCaptured(const std::vector<ops::Tensor>& holders, size_t mostBytes) {
    std::vector<std::pair<void*, size_t>> taken;
    size_t total = 0;
    for (auto [p, bytes] : captured_) total += bytes;
    if (total > mostBytes) return nullptr;
    for (auto [p, bytes] : captured_) {
      if (free_[bytes].erase(p)) {
        taken.push_back({p, bytes});
        continue;
      }
      const char* b = static_cast<const char*>(p);
      if (std::none_of(holders.begin(), holders.end(), [&](const ops::Tensor& t) {
            const char* q = static_cast<const char*>(t.raw());
            return q >= b && q < b + bytes;
          })) {
        for (auto [q, n] : taken) free_[n].insert(q);
        return nullptr;
      }
    }
    captured_.clear();
    return std::shared_ptr<const void>(new char, [this, taken](const void* h) {
      for (auto [q, n] : taken) free_[n].insert(q);
      delete static_cast<const char*>(h);
    });
  }
  // The bytes from `p` to the end of the pool block holding it; 0 when no
  // block holds it.
  size_t bytesFrom(const void* p) const {
    const char* q = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(q);
    if (it == blocks_.begin()) return 0;
    --it;
    return q < it->first + it->second ? size_t(it->first + it->second - q) : 0;
  }

 private:
  // Four classes per power of two from 256 bytes up: at most 25 % slack,
  // and the sizes of a model's activations repeat from layer to layer.
  static size_t sizeClass(size_t n) {
    if (n <= 256) return 256;
    const int e = 63 - __builtin_clzll(n - 1);  // 2^e < n <= 2^(e + 1)
    const size_t step = size_t(1) << (e - 2);
    return (n + step - 1) / step * step;
  }
  // `bytes` at the end of the first slab with room, rounded up to 256 so
  // that every block starts 256-byte aligned like a cuMemAlloc (TMA needs
  // 16, coalescing 128).
  void* carve(size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    for (Slab& s : slabs_)
      if (s.bytes - s.used >= bytes) {
        void* p = static_cast<char*>(s.start) + s.used;
        s.used += bytes;
        return p;
      }
    const size_t n = std::max(bytes, kSlabBytes);
    slabs_.push_back({dev_.allocate(n), n, bytes});
    return slabs_.back().start;
  }
  struct Slab {
    void* start;
    size_t bytes, used;
  };
  Device& dev_;
  const int64_t rowBlock_;
  std::vector<Slab> slabs_;
  std::map<size_t, std::set<void*>> free_;
  std::map<const char*, size_t> blocks_;  // every block: start -> bytes (carved from a slab from kSlabMinBlock up)
  bool capturing_ = false;
  std::map<void*, size_t> captured_;  // each block once, however often the step took it
};

}  // namespace strata::runtime
