// `strata run`: one prompt (streamed) or a batch file (continuous batching)
// through the scheduler, on generated CPU kernels, the reference ops or a
// compiled artifact.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::tools {

struct RunOpts {
  std::string model, backend = "cpu", prompt, promptIds, batchFile, system;
  int64_t maxNewTokens = 32, blockSize = 16, cacheBlocks = 0, maxStepTokens = 512, maxSeqs = 64, samples = 1;
  double cacheMiB = 0;  // KV cache memory budget (0: sized from the prompts or --cache-blocks)
  bool greedy = false, json = false, ignoreEos = false, blockSizeGiven = false, timings = false, chat = false;
  std::optional<float> temperature, topP;
  float repetitionPenalty = 1.0f;
  std::optional<int64_t> topK;
  uint64_t seed = 0;
  std::vector<std::string> stop;
};

int runCommand(const RunOpts& o);

}  // namespace strata::tools
