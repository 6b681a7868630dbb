// The top-k kernel's output for one row, computed on the host
// (codegen/TopKKernel.h): per split of blockN columns, its `candidates`
// largest values in sampling order (larger first, lower column first among
// equal ones) with their columns, -inf past the split's finite values, and
// its mass sum exp((x - max) / temperature). The GPU test checks the kernel
// against it; the sampler tests feed it to headFromSplits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace strata::tests {

struct TopKSplits {
  std::vector<float> value, index, mass;
  int64_t splits = 0;
};

inline TopKSplits topKSplitsReference(const float* row, int64_t n, int64_t blockN, int64_t candidates,
                                      float temperature) {
  TopKSplits out;
  out.splits = (n + blockN - 1) / blockN;
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t s = 0; s < out.splits; ++s) {
    const int64_t lo = s * blockN, hi = std::min(n, lo + blockN);
    std::vector<int64_t> cols(hi - lo);
    std::iota(cols.begin(), cols.end(), lo);
    std::stable_sort(cols.begin(), cols.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < candidates; ++j) {
      const bool real = j < (int64_t)cols.size() && row[cols[j]] > ninf;
      out.value.push_back(real ? row[cols[j]] : ninf);
      out.index.push_back(real ? float(cols[j]) : -1.f);
    }
    const double m = row[cols[0]];
    double z = 0;
    for (int64_t c = lo; c < hi; ++c) z += std::exp((double(row[c]) - m) / temperature);
    out.mass.push_back(float(z));
  }
  return out;
}

}  // namespace strata::tests
