// The kernel benchmarks of strata-gpu (tools/strata_gpu.cpp): each times
// the generated kernels of one kind on a GPU device against their bytes or
// FLOPs, prints a table and writes JSON (`jsonPath`, "" for none); the
// peers run beside them in tools/gpu/bench_*.py. Runtime only.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/device.h"

namespace strata::tools {

// The device that runs the kernel set (or artifact) in `dir`, by its
// manifest's target.
std::unique_ptr<runtime::Device> openDeviceFor(const std::string& dir);
// Writes `results` to `path` unless it is empty; throws naming the file.
void writeResults(const std::string& path, const nlohmann::json& results);

// GEMMs on Llama-3-8B projection shapes (and the SwiGLU and residual
// epilogues at `epilogueRows`) with CUDA-event timing.
int benchGemm(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
              const std::vector<int64_t>& rowsList, const std::vector<int64_t>& epilogueRows, int64_t forceSplits,
              bool coldWeights, bool tightA);
// RMSNorm at hidden 4096 for 1..4096 rows.
int benchRmsNorm(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps);
// RoPE on Llama-3-8B's q and k rows for 1..4096 tokens.
int benchRope(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps);
// FlashAttention-2 (contiguous and paged prefill) at 16k tokens a launch.
int benchAttention(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                   bool everyKernel);
// Paged decode steps (split kernel and combine) by batch and context.
int benchPagedDecode(const std::string& dir, const std::string& jsonPath, const std::string& dtype, int reps,
                     double splitScale, const std::vector<int64_t>& batches, const std::vector<int64_t>& contexts);
// The fused elementwise kernels of a compiled graph at 1..4096 rows.
int benchElementwise(const std::string& dir, const std::string& jsonPath, int reps, int64_t minCols);

}  // namespace strata::tools
