// FNV-1a, the hash of strata's on-disk caches' keys (the kernel cache,
// tools/kernel_cache.h; the Xe test device's program binaries): stable
// across builds and machines, not for security.
#pragma once
#include <cstdint>
#include <string_view>

namespace strata::ops {

// FNV-1a over `s`, continuing from `h`.
inline uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace strata::ops
