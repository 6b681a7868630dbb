// A fork-join loop for host work that grows with a step's batch (widening
// logits, sampling each sequence's row): fresh threads per call, so only
// worth it for work well above their ~50 us start-up.
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::runtime {

// Calls fn(lo, hi) on disjoint ranges covering [0, n), on up to `threads`
// threads (0: the cores, at most 16); one range when n < 2.
// An exception from any range is rethrown here once all have finished (the
// first one thrown).
template <typename F>
void parallelRanges(int64_t n, F fn, int threads = 0) {
  if (threads <= 0) threads = (int)std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
  threads = (int)std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::mutex m;
  std::exception_ptr first;
  auto guarded = [&](int64_t lo, int64_t hi) {
    try {
      fn(lo, hi);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!first) first = std::current_exception();
    }
  };
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) ts.emplace_back(guarded, n * t / threads, n * (t + 1) / threads);
  guarded(int64_t(0), n / threads);
  for (auto& t : ts) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace strata::runtime
