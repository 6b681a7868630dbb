// Generation over a region graph (graph::formRegions output) with the paged
// KV cache. A step runs any number of sequences at once: their new tokens are
// flattened into one [1, T] batch with per-sequence seq_starts, context_lens
// and block tables, and the graph returns one logits row per sequence (its
// last token). Prefill and decode are the same step with 1 or many tokens.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "runtime/graph_runner.h"
#include "runtime/generate.h"
#include "runtime/paged_cache.h"

namespace strata::runtime {

// The cache geometry a region graph needs (from its meta "paged"; the
// element type is the runner's).
KvCacheShape kvCacheShapeFor(const GraphRunner& runner, int64_t blockSize, int64_t numBlocks);

class PagedModel {
 public:
  // The cache must live on the runner's cache device.
  PagedModel(const GraphRunner& exec, PagedKvCache& cache);
  struct SeqStep {
    int64_t seq;
    std::vector<int64_t> tokens;  // new tokens; the cache must have room (reserve) for them
  };
  // Runs one step; returns logits [N, vocab], row n for steps[n]'s last token.
  // The cache lengths advance by each sequence's token count.
  ops::Tensor step(const std::vector<SeqStep>& steps);
  // step(), returning each sequence's greedy next token instead (picked
  // where the logits are: GraphRunner::runGreedy).
  std::vector<int64_t> stepGreedy(const std::vector<SeqStep>& steps);
  // step(), returning each draw's token (its row n is steps[n]'s logits),
  // drawn where the logits are (GraphRunner::runSampled).
  std::vector<int64_t> stepSampled(const std::vector<SeqStep>& steps, std::span<const GraphRunner::RowDraw> draws);
  PagedKvCache& cache() { return cache_; }

 private:
  // The graph inputs of a step; ctx gets each sequence's length after it.
  // The map is the model's own, refilled each step (a decode step's host
  // work is on the GPU's critical path: the GPU waits for it).
  const TensorMap& inputs(const std::vector<SeqStep>& steps, std::vector<int64_t>& ctx);
  const GraphRunner& exec_;
  PagedKvCache& cache_;
  TensorMap in_;
};

struct PagedOptions {
  int64_t blockSize = 16;
  int64_t numBlocks = 0;  // 0: just enough for prompt + max new tokens
};

// One request through the paged model (what `strata run` does).
std::vector<int64_t> generatePaged(const GraphRunner& exec, const GenerateRequest& req, const PagedOptions& opts,
                                   const std::function<void(int64_t)>& onToken = {});

}  // namespace strata::runtime
