// Emits the workgroup-level tile IR of greedy sampling's device half: the
// largest logit of each row and its index, per split of the row (no MLIR
// here; the kernel is tile IR text). The host picks among a row's splits
// (runtime/gpu_executor.cpp), so only splits x 2 floats a row come down.
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

// For row r of x [rows, N] and split s (columns [s * chunk, min((s + 1) *
// chunk, N))): max[r, s] = the split's largest value, index[r, s] = its
// column (the lowest among equal ones; the split's first column when every
// value is -inf), as f32 (exact below 2^24). Signature (x: dtype; max,
// index: f32 [rows, splits]; rows, N, chunk, splits: index), grid splits x
// rows; `chunk` a multiple of `blockN`, which one warp streams per step.
// `dtype` is x's storage type (f32, bf16 or f16).
struct ArgmaxKernelSpec {
  std::string name = "argmax";
  int64_t blockN = 1024;
  std::string dtype = "f32";
};
std::string emitArgmaxKernel(const ArgmaxKernelSpec& spec);

}  // namespace strata::tile
