// Emits the workgroup-level tile IR of sampling's device half (temperature,
// top-k, top-p): each split of a row of logits gives its largest values in
// order, with their columns, and its softmax mass, so only a few candidates
// a row come down instead of the row (no MLIR here; the kernel is tile IR
// text). The host merges the splits and draws (runtime/sampler.h: RowHead).
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

// For row r of x [rows, N] and split s (columns [s * blockN, min((s + 1) *
// blockN, N)), held in one warp's registers):
// - value[r, s * C + j], index[r, s * C + j] for j < C = `candidates`: the
//   split's j-th largest value and its column (f32, exact below 2^24),
//   larger first, the lower column first among equal values; -inf once the
//   split has no values left (the index is then meaningless);
// - mass[r, s] = sum over the split of 2^((x - value[r, s * C]) * scale[r]),
//   with scale = log2(e) / temperature: the split's softmax denominator
//   relative to its own max (NaN when every value is -inf).
// Signature (x: dtype; value, index: f32 [rows, splits * C]; mass: f32
// [rows, splits]; scale: f32 [rows]; rows, N, splits: index), grid splits x
// rows. `dtype` is x's storage type (f32, bf16 or f16).
struct TopKKernelSpec {
  std::string name = "topk";
  int64_t blockN = 1024;
  int64_t candidates = 64;
  std::string dtype = "f32";
};
std::string emitTopKKernel(const TopKKernelSpec& spec);

}  // namespace strata::tile
