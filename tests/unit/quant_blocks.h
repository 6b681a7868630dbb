// Random llama.cpp blocks for the quantized-kernel tests (CPU and GPU):
// random integers, with the f16 fields (scales, mins) small enough that
// the dequantized weights stay near 1.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops/quant.h"

namespace strata::testing {

// `count` random blocks of `f` (ops::randomBlocks) whose f16 fields
// (scales, mins) are small: +-0.002, Q8_0's +-0.02 (its integers are 8-bit
// where the others' are 4- to 6-bit times a 6-bit sub-block scale).
inline std::vector<uint8_t> randomBlocks(const ops::QuantFormat& f, int64_t count, std::mt19937& rng) {
  return ops::randomBlocks(f, count, rng(), std::string(f.name) == "Q8_0" ? 0.02f : 0.002f);
}

}  // namespace strata::testing
