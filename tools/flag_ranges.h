// The ranges of the numeric flags `strata run`, `strata serve` and their
// strata-gpu twins take, in one place: each flag is checked against its
// range before anything is loaded, and the error names the flag (a value
// past these is a typo or an attack, and deep inside the compiler or the
// allocator it would end as an abort or a misleading error).
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/error.h"

namespace strata::tools {

constexpr int64_t kMaxBlockSizeFlag = 1024;            // --block-size: tokens per KV block
constexpr int64_t kMaxCacheBlocksFlag = int64_t(1) << 24;  // --cache-blocks
constexpr double kMaxCacheMiBFlag = 1e8;               // --cache-mb (100 TB)
constexpr int64_t kMaxTokensFlag = int64_t(1) << 24;   // token counts (new, per step, prompt): any context fits
constexpr int64_t kMaxSeqsFlag = int64_t(1) << 16;     // --max-seqs, --samples, --max-n

template <typename T>
void flagInRange(const char* flag, T v, T lo, T hi) {
  if (!(v >= lo && v <= hi)) fail("{} must be in {}..{}, got {}", flag, lo, hi, v);
}

// --cache-mb when given: a number of MiB, at least 1.
inline void checkCacheMiB(double v) {
  if (!std::isfinite(v) || v < 1 || v > kMaxCacheMiBFlag)
    fail("--cache-mb must be a number of MiB in 1..{:g}, got {}", kMaxCacheMiBFlag, v);
}

}  // namespace strata::tools
