// What runs a region graph for the paged model (runtime/paged_generate.h)
// and the scheduler: the CPU executor (runtime/executor.h: reference ops or
// generated CPU kernels) or the GPU one (runtime/gpu_executor.h).
//
// Contract of run(): the inputs are the graph's inputs by name, the integer
// step inputs (ids, positions, tables, ...) as host tensors and the
// kv_cache.* inputs as tensors in cacheDevice()'s memory of cacheDType();
// the outputs (logits) come back as host f32 tensors. Errors name the node.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ops/error.h"
#include "ops/graph_def.h"
#include "runtime/device.h"
#include "runtime/sampler.h"

namespace strata::runtime {

using TensorMap = std::map<std::string, ops::Tensor>;

class GraphRunner {
 public:
  virtual ~GraphRunner() = default;
  virtual const ops::GraphDef& graph() const = 0;
  virtual TensorMap run(const TensorMap& inputs) const = 0;
  // run(), then the greedy token (runtime/sampler.h's greedyToken) of every
  // row of output `name` ([rows, vocab] logits); the outputs themselves are
  // not returned. Default: the rows on the host. The GPU runner picks on the
  // device, so only a few floats a row come down instead of the logits.
  virtual std::vector<int64_t> runGreedy(const TensorMap& inputs, const std::string& name) const;
  // One token to draw from row `row` of a step's logits with `sampler`
  // (each draw its own sampler; `history` is the sequence so far, for the
  // penalties, generated from `generatedFrom` on). With `logprobs`, the runner also fills in the
  // drawn token's log-probabilities and the row's `topLogprobs` most
  // likely tokens' (runtime/sampler.h: tokenLogprobs on the raw row).
  struct RowDraw {
    int64_t row = 0;
    Sampler* sampler = nullptr;
    std::span<const int64_t> history;
    TokenLogprobs* logprobs = nullptr;
    int64_t topLogprobs = 0;
    size_t generatedFrom = 0;
  };
  // run(), then each draw's token (Sampler::sample on its row of output
  // `name`). Default: the rows on the host. The GPU runner brings down
  // only the argmax (greedy) or top-k candidates (sampling) of a row, and
  // the row itself only for a penalty it cannot apply on the device, a draw the candidates
  // do not settle (runtime/sampler.h) or log-probabilities: the same
  // tokens either way.
  virtual std::vector<int64_t> runSampled(const TensorMap& inputs, const std::string& name,
                                          std::span<const RowDraw> draws) const;
  // Throws unless every draw names one of `rows` rows and has a sampler
  // (what each runSampled checks first).
  static void checkDraws(std::span<const RowDraw> draws, int64_t rows);
  // Profiling (benchmarks): while on, run() times every node alone (on a
  // GPU with events around it and a wait, so steps get slower) and adds the
  // time to its region's row (profileLabel). Default: a runner that cannot
  // profile says so.
  struct ProfileRow {
    int64_t calls = 0;
    double ms = 0;
  };
  virtual void setProfiling(bool on) const;
  // The rows since the last call (then cleared).
  virtual std::map<std::string, ProfileRow> takeProfile() const;

  // Where the KV cache must live, and its element type.
  virtual Device& cacheDevice() const { return cpuDevice(); }
  virtual ops::DType cacheDType() const;  // default: the graph's kv_cache.0 input type (f32 without one)
};

// What every runner checks once: each node's inputs are produced before
// use (graph inputs, `params`, earlier outputs) and every graph output is
// produced; `prepare` runs per node first (its errors get the node's name).
// Returns, per node, the values dead after it (neither params nor graph
// outputs), which a runner frees there.
std::vector<std::vector<std::string>> planLifetimes(const ops::GraphDef& g, const std::set<std::string>& params,
                                                    const std::function<void(const ops::NodeDef&)>& prepare);

// A profile row's label: the op and, for GEMMs, the epilogue (qkv,
// residual, swiglu, lm_head) or, for paged attention, decode or prefill
// (from the step's host `seqStarts`, when given).
std::string profileLabel(const ops::NodeDef& n, const ops::Tensor* seqStarts);

// Runs node n through `fn` (which returns its outputs), naming the node in
// any error, and checks it produced as many outputs as the graph expects.
template <typename Fn>
auto runNamedNode(const ops::GraphDef& g, const ops::NodeDef& n, Fn&& fn) -> decltype(fn()) {
  decltype(fn()) outs;
  try {
    outs = fn();
  } catch (const Error& e) {
    fail("{}: node '{}' ({}): {}", g.source, n.name, n.op, e.what());
  } catch (const std::exception& e) {
    fail("{}: node '{}' ({}): bad attributes: {}", g.source, n.name, n.op, e.what());
  }
  if (outs.size() < n.outputs.size())
    fail("{}: node '{}' ({}) produced {} outputs, graph expects {}", g.source, n.name, n.op, outs.size(), n.outputs.size());
  return outs;
}

}  // namespace strata::runtime
