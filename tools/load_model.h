// The model `strata run` and `strata serve` run: a model folder or ONNX
// file compiled for the backend (CPU kernels JIT-compiled or from the
// kernel cache; cuda through the kernel cache), the reference ops, or an
// artifact from strata compile; with its tokenizer when it has one.
#pragma once
#include <optional>
#include <string>

#include "models/tokenizer.h"
#include "runtime/executor.h"
#include "runtime/gpu_executor.h"
#include "tools/run_loop.h"

namespace strata::tools {

// The model ready to run: its executor (generated CPU kernels, reference
// ops, or an artifact's CPU or GPU kernels), tokenizer and KV block size.
struct LoadedModel {
  runtime::GpuModel gpu;  // an artifact for the GPU: device, kernels, executor
  std::optional<runtime::Executor> cpu;
  const runtime::GraphRunner* exec = nullptr;
  std::optional<models::Tokenizer> tok;
  std::string tokenizerPath;  // tokenizer.json or the .gguf file (what the chat template goes with)
  int64_t blockSize = 0;
};

// Loads o.model for o.backend (o.blockSize, o.weightsDir; progress on
// stderr unless o.json).
LoadedModel loadForRun(const RunOpts& o);

}  // namespace strata::tools
