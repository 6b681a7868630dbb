// Random llama.cpp blocks for the quantized-kernel tests (CPU and GPU):
// random integers, with the f16 fields (scales, mins) small enough that
// the dequantized weights stay near 1.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops/abi.h"
#include "ops/quant.h"
#include "ops/tensor.h"

namespace strata::testing {

// `count` random blocks of `f` (ops::randomBlocks) whose f16 fields
// (scales, mins) are small: +-0.002, Q8_0's +-0.02 (its integers are 8-bit
// where the others' are 4- to 6-bit times a 6-bit sub-block scale).
inline std::vector<uint8_t> randomBlocks(const ops::QuantFormat& f, int64_t count, std::mt19937& rng) {
  return ops::randomBlocks(f, count, rng(), std::string(f.name) == "Q8_0" ? 0.02f : 0.002f);
}

// The values a weight's GPU form `p` (abi::packGpuInt8Rows, in `form`)
// holds, [N, K] f32: integer times its block's f16 scale plus its f16
// offset, each product and sum rounded once in f32 as the kernels round
// them. The GPU kernels' exact result is that of these weights.
inline ops::Tensor gpuFormValues(const abi::Int8BlockPanels& p, const abi::Int8BlockForm& form, int64_t K, int64_t N) {
  ops::Tensor out(ops::DType::F32, {N, K});
  const int64_t rowBytes = form.nibbles ? K / 2 : K, half = form.block / 2;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      int integer;
      if (form.nibbles) {
        const int64_t b = k / form.block, i = k % form.block;
        const auto byte = uint8_t(p.values[size_t(n * rowBytes + b * half + i % half)]);
        integer = i < half ? byte & 0xF : byte >> 4;
      } else {
        integer = p.values[size_t(n * rowBytes + k)];
      }
      const size_t at = size_t(n * (K / form.block) + k / form.block);
      float v = ops::halfToFloat(p.halfScales.at(at)) * float(integer);
      if (form.offsets) v += ops::halfToFloat(p.halfOffsets.at(at));
      out.mut<float>()[n * K + k] = v;
    }
  return out;
}

}  // namespace strata::testing
