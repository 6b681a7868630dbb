// The generation loop behind `strata run` and `strata-gpu run`: prompts
// (token ids) through the scheduler on any graph runner (CPU or GPU), the
// completions streamed or as JSON, with timings. Runtime only (no compiler,
// no tokenizer library): the text side comes in as RunText.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

#include "runtime/artifact.h"
#include "runtime/graph_runner.h"
#include "runtime/sampler.h"

namespace strata::tools {

struct RunOpts {
  std::string model, backend = "cpu", prompt, promptIds, batchFile, system, weightsDir, chatTemplate;
  int64_t maxNewTokens = 32, blockSize = 16, cacheBlocks = 0, maxStepTokens = 512, maxSeqs = 64, samples = 1;
  double cacheMiB = 0;  // KV cache memory budget (0: sized from the prompts or --cache-blocks)
  bool greedy = false, json = false, ignoreEos = false, blockSizeGiven = false, backendGiven = false, cacheMiBGiven = false, timings = false,
       chat = false;
  std::optional<float> temperature, topP;
  float repetitionPenalty = 1.0f;
  float presencePenalty = 0.0f;
  float frequencyPenalty = 0.0f;
  float minP = 0.0f;
  std::optional<int64_t> topK;
  std::optional<int64_t> logprobs;  // --logprobs N: each token's log-probability and N alternatives (JSON)
  int64_t seed = 0;  // 0..2^63-1 (a negative one is an error, not a wrap)
  std::vector<std::string> stop;
};

struct RunPrompt {
  std::string label;  // what the user gave (text or ids), for messages and output
  std::vector<int64_t> ids;
};

// The tokenizer's part, when the model has one.
struct RunText {
  std::function<std::string(const std::vector<int64_t>&)> decode;  // null: completions print as ids
  std::optional<int64_t> endOfTurn;  // --chat: the token that ends the assistant's turn
};

// Registers `run`'s options on `cmd`, bound to `o`; `text` adds the ones
// that need a tokenizer (--prompt, --batch-file, --stop, --chat, --system).
void addRunOptions(CLI::App* cmd, RunOpts& o, bool text);
// "0,53,308" -> ids; throws naming --prompt-ids on anything else.
std::vector<int64_t> parsePromptIds(const std::string& s);
// Checks the options that do not depend on the model; returns the sampling
// parameters they give.
runtime::SamplingParams checkRunOpts(const RunOpts& o);
// Checks `run`'s options against an artifact: --backend (when given) and
// --block-size (when given) must be what it was compiled for.
void checkArtifactRun(const RunOpts& o, const runtime::Artifact& a);
// Runs the prompts to completion on `exec` with a KV cache of `blockSize`
// token blocks; prints as `strata run --help` says. Returns the exit code.
int runPrompts(const runtime::GraphRunner& exec, int64_t blockSize, const RunOpts& o,
               const std::vector<RunPrompt>& prompts, const RunText& text);

}  // namespace strata::tools
