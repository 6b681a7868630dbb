// llama.cpp's block-quantized weight formats (ggml types Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q4_K, Q5_K, Q6_K): each row of a weight is a run of blocks,
// a block holding blockElems values in blockBytes bytes (scales in f16,
// quants packed). Reference dequantization, the oracle of strata's
// quantized kernels and what the reference backend widens quantized GGUF
// weights with: each value is exactly what ggml's dequantize_row gives
// (the same f16 scales, products and differences in f32).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ops/tensor.h"

namespace strata::ops {

struct QuantFormat {
  const char* name;  // ggml's name, "Q4_K"
  int64_t blockElems, blockBytes;
  // Every format is sub-blocks of subBlock small integers, each sub-block
  // with an f32 scale and (`offsets`: Q4_1, Q5_1, Q4_K, Q5_K) an f32
  // offset: value i = scale[i / subBlock] * float(q[i]) (+ offset[i /
  // subBlock]). intBlock reads one block as its blockElems integers (i8:
  // every format's fit) and blockElems / subBlock scales (and offsets,
  // untouched without them); those are the dequantized values exactly, as
  // ggml computes them (the same f32 products and sums). The CPU kernels'
  // i8 panels hold them (abi::packInt8BlockPanels).
  int64_t subBlock;
  bool offsets;
  // The integers' width and least value (Q4_0: 4 bits from -8; Q4_1 and
  // Q4_K: 4 bits from 0): a 4-bit format's integers minus qMin fit a
  // nibble (abi::Int8BlockForm::nibbles).
  int64_t bits, qMin;
  void (*intBlock)(const uint8_t* block, int8_t* q, float* scale, float* offset);
  // One block's blockElems values: intBlock's integers times their scales
  // (plus their offsets).
  void (*dequantizeBlock)(const uint8_t* block, float* out);
  // intBlock's scales and offsets as the file holds them: f16 values for
  // the whole block (sup[0]: the scale, sup[1]: the offset or 0), times,
  // in the K formats (subBlock < blockElems), an integer per sub-block
  // (sub, subOffset): scale[j] = sup[0] * float(sub[j]) and offset[j] =
  // sup[1] * float(subOffset[j]) exactly (ggml's own f32 products); else
  // scale = sup[0], offset = sup[1].
  void (*scaleParts)(const uint8_t* block, float* sup, int8_t* sub, int8_t* subOffset);
  bool subScales() const { return subBlock < blockElems; }
};

// The most values a block of any format holds (Q4_K / Q5_K / Q6_K's 256).
inline constexpr int64_t kMaxBlockElems = 256;

// The format named `name` (ggml's type name), or null.
const QuantFormat* quantFormat(std::string_view name);

// The bytes of a tensor of `shape` in format `f`: its rows (the last
// dimension) must be whole blocks; nullopt when they are not (or the shape
// has no dimension).
std::optional<int64_t> quantizedBytes(const QuantFormat& f, const Shape& shape);

// A [rows, cols] f32 tensor of the quantized rows at `data` (rows * cols /
// blockElems blocks); throws strata::Error unless cols is a whole number of
// blocks.
Tensor dequantize(const QuantFormat& f, const uint8_t* data, const Shape& shape);

// Activations rounded to 8 bits the way the GPU's integer-form quantized
// GEMV takes them (codegen/QuantizeKernel.h; ggml's q8_1 in blocks of
// `block`): each block of `block` values along a row of x (f32 [rows, K],
// K whole blocks) becomes q d with d = max |x| / 127 and q = round(x /
// max(max |x|, 1e-30) * 127) (ties to even), all in f32 as the kernel
// computes it. Returns q d; `q`, `scales` and `sums` (when given) get the
// integers, the d's and d sum(q) of each block.
Tensor quantizeActivations(const Tensor& x, int64_t block, std::vector<int8_t>* q = nullptr,
                           std::vector<float>* scales = nullptr, std::vector<float>* sums = nullptr);

// `count` random blocks of `f`: random integers (every byte random), with
// the f16 fields (scales, mins) uniform in +-`scale`, so the values stay
// finite and small. Block i depends only on (seed, i). What benchmarks
// with random quantized weights and the quantized kernels' tests run on.
std::vector<uint8_t> randomBlocks(const QuantFormat& f, int64_t count, uint64_t seed, float scale);

}  // namespace strata::ops
