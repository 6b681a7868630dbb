#include "ops/abi.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace strata::abi {

KernelArgs& KernelArgs::buffer(const void* data, int64_t elements) {
  void*& p = ptrs_.emplace_back(const_cast<void*>(data));
  slots_.push_back(&p);  // allocated
  slots_.push_back(&p);  // aligned
  slots_.push_back(&ints_.emplace_back(0));         // offset
  slots_.push_back(&ints_.emplace_back(elements));  // size
  slots_.push_back(&ints_.emplace_back(1));         // stride
  return *this;
}

KernelArgs& KernelArgs::index(int64_t value) {
  slots_.push_back(&ints_.emplace_back(value));
  return *this;
}

KernelArgs& KernelArgs::f32(float value) {
  slots_.push_back(&floats_.emplace_back(value));
  return *this;
}

void launch(PackedKernel kernel, const KernelArgs& args, int64_t gx, int64_t gy, int64_t gz, int threads) {
  int64_t total = gx * gy * gz;
  if (total <= 0) return;
  if (threads <= 0) threads = (int)std::max(1u, std::thread::hardware_concurrency());
  threads = (int)std::min<int64_t>(threads, total);
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<void*> slots = args.slots();
    int64_t pid[3];
    for (int i = 0; i < 3; ++i) slots.push_back(&pid[i]);
    // Programs are handed out one at a time, in grid order (dim 0 fastest).
    for (int64_t p; (p = next.fetch_add(1)) < total;) {
      pid[0] = p % gx;
      pid[1] = (p / gx) % gy;
      pid[2] = p / (gx * gy);
      kernel(slots.data());
    }
  };
  if (threads == 1) return worker();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

}  // namespace strata::abi
