// Emits the tile IR of activation quantization, the first half of the
// quantized GEMV's integer form (GemmKernelSpec::int8Activations): rows of
// A in blocks of `block` values become i8 values q = round(x / d), d =
// max |x| / 127 of the block, with the scales d and the sums d sum(q) of
// the blocks (what weights with offsets multiply: sum (s q_w + o) d q =
// s d sum q_w q + o d sum q). ggml's q8_1 is the same form in blocks of 32;
// ops::quantizeActivations is the reference. No MLIR here.
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

struct QuantizeRowsKernelSpec {
  std::string name = "quantize_rows";
  std::string dtype = "bf16";  // A's storage: f32, bf16 or f16
  int64_t block = 32;          // values a block: 16 or 32
  int64_t numWarps = 4;        // a program quantizes 32 blocks a warp
  // The RMSNorm prologue (region.gemm norm = 1): the rows are normalized
  // by a weight before they are quantized.
  bool norm = false;
  int64_t blocksPerProgram() const { return 32 * numWarps; }
};

// Signature: (x: dtype [M, K], q: i8 [M, K], scales: f32 [M, K / block],
// sums: f32 [M, K / block], M, K: index); grid ceil(K / block /
// blocksPerProgram()) x M. K must be whole blocks (the launcher checks),
// and q's rows 16-byte aligned (K a multiple of 16). Each lane holds a
// block in registers: its maximum and sum need no shuffles.
// With `norm`: (x, w: dtype [K], q, scales, sums, M, K, eps: f32) quantizes
// x[m] * w * rsqrt(mean(x[m]^2) + eps) (ops::rmsNorm's row in f32, not
// rounded to dtype first). Each program sums its row's squares itself, the
// whole row read in blocks of blocksPerProgram(): at K <= 32 blocks a warp
// one program a row, so the row is read once for both.
std::string emitQuantizeRowsKernel(const QuantizeRowsKernelSpec& spec);

}  // namespace strata::tile
