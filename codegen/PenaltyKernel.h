// Emits the workgroup-level tile IR of the repetition penalty's device half
// (no MLIR here; the kernel is tile IR text): the logits of the ids a
// sequence has seen, penalized in place in an f32 copy of its row, so the
// argmax and top-k kernels then pick from the penalized row on the device
// (runtime/gpu_executor.cpp) instead of the row coming down.
#pragma once

#include <string>

namespace strata::tile {

// For entry e of `entries` ([2, E] i64: rows, then columns), x[row_e,
// col_e] of x [R, N] (f32) becomes x / p when x > 0, else x * p, with p =
// penalty[row_e] (f32 [R]) — runtime/sampler.h's penalty, in f32 as the
// host applies it. Signature (x: f32; entries: i64; penalty: f32; R, N, E:
// index), grid E: one program (one warp) per entry. Entries must be
// distinct and inside x (the caller checks: the kernel does no bounds
// tests, and an entry given twice would be penalized twice).
struct RepetitionPenaltyKernelSpec {
  std::string name = "repetition_penalty";
};
std::string emitRepetitionPenaltyKernel(const RepetitionPenaltyKernelSpec& spec);

}  // namespace strata::tile
