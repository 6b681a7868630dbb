#include "runtime/paged_generate.h"

#include "runtime/scheduler.h"

#include <algorithm>
#include <bit>

namespace strata::runtime {

using ops::Tensor;

KvCacheShape kvCacheShapeFor(const GraphRunner& runner, int64_t blockSize, int64_t numBlocks) {
  const ops::GraphDef& g = runner.graph();
  if (!g.meta.contains("paged"))
    fail("{}: the graph is not in paged form (run region formation first)", g.source);
  const auto& p = g.meta["paged"];
  KvCacheShape s;
  s.layers = p.at("layers").get<int64_t>();
  s.kvHeads = p.at("kv_heads").get<int64_t>();
  s.headDim = p.at("head_dim").get<int64_t>();
  s.blockSize = blockSize;
  s.numBlocks = numBlocks;
  s.dtype = runner.cacheDType();
  if (blockSize <= 0) fail("--block-size must be >= 1, got {}", blockSize);
  return s;
}

PagedModel::PagedModel(const GraphRunner& exec, PagedKvCache& cache) : exec_(exec), cache_(cache) {
  const auto& g = exec.graph();
  for (const char* in : {"input_ids", "position_ids", "seq_starts", "context_lens", "block_tables", "slot_mapping",
                         "logits_indices"})
    if (!g.findInput(in)) fail("{}: the region graph has no '{}' input", g.source, in);
  for (int64_t l = 0; l < cache.shape().layers; ++l)
    if (!g.findInput("kv_cache." + std::to_string(l))) fail("{}: the region graph has no 'kv_cache.{}' input", g.source, l);
  if (&cache.device() != &exec.cacheDevice() || cache.shape().dtype != exec.cacheDType())
    fail("the KV cache is {} on the {} device; this backend computes on {} in {} memory",
         ops::dtypeName(cache.shape().dtype), cache.device().name(), ops::dtypeName(exec.cacheDType()),
         exec.cacheDevice().name());
  for (int64_t l = 0; l < cache.shape().layers; ++l) in_["kv_cache." + std::to_string(l)] = cache.layer(l);
}

const TensorMap& PagedModel::inputs(const std::vector<SeqStep>& steps, std::vector<int64_t>& ctx) {
  if (steps.empty()) fail("a step needs at least one sequence");
  std::vector<int64_t> ids, pos, starts{0}, slots, last;
  ctx.clear();
  size_t maxBlocks = 0;
  for (const auto& s : steps) {
    if (s.tokens.empty()) fail("sequence {}: a step needs at least one new token", s.seq);
    int64_t past = cache_.length(s.seq), n = (int64_t)s.tokens.size();
    if (!cache_.has(s.seq) || (int64_t)cache_.blockTable(s.seq).size() * cache_.blockSize() < past + n)
      fail("sequence {}: no cache room reserved for {} tokens", s.seq, past + n);
    for (int64_t i = 0; i < n; ++i) {
      ids.push_back(s.tokens[i]);
      pos.push_back(past + i);
      slots.push_back(cache_.slot(s.seq, past + i));
    }
    starts.push_back((int64_t)ids.size());
    last.push_back((int64_t)ids.size() - 1);
    ctx.push_back(past + n);
    maxBlocks = std::max(maxBlocks, cache_.blockTable(s.seq).size());
  }
  // The table's width rounded up to a power of two (entries past a
  // sequence's blocks are -1): consecutive decode steps keep one input
  // shape while their contexts cross blocks, so a backend that replays a
  // repeated step (CUDA graphs) keeps replaying it.
  maxBlocks = std::bit_ceil(std::max<size_t>(maxBlocks, 1));
  int64_t N = (int64_t)steps.size(), T = (int64_t)ids.size();
  std::vector<int64_t> tables(N * maxBlocks, -1);
  for (int64_t n = 0; n < N; ++n) {
    const auto& t = cache_.blockTable(steps[n].seq);
    std::copy(t.begin(), t.end(), tables.begin() + n * maxBlocks);
  }
  // The same map each step: its nodes and keys (the cache layers' set once)
  // are reused, not rebuilt.
  TensorMap& in = in_;
  in["input_ids"] = Tensor::fromI64(ids, {1, T});
  in["position_ids"] = Tensor::fromI64(pos, {1, T});
  in["seq_starts"] = Tensor::fromI64(starts);
  in["context_lens"] = Tensor::fromI64(ctx);
  in["block_tables"] = Tensor::fromI64(tables, {N, (int64_t)maxBlocks});
  in["slot_mapping"] = Tensor::fromI64(slots);
  in["logits_indices"] = Tensor::fromI64(last);
  return in;
}

Tensor PagedModel::step(const std::vector<SeqStep>& steps) {
  std::vector<int64_t> ctx;
  TensorMap out = exec_.run(inputs(steps, ctx));
  for (size_t n = 0; n < steps.size(); ++n) cache_.setLength(steps[n].seq, ctx[n]);
  const int64_t N = (int64_t)steps.size();
  const Tensor& logits = out.at("logits");
  if (logits.dtype() != ops::DType::F32) fail("logits must be f32, got {}", ops::dtypeName(logits.dtype()));
  int64_t v = logits.dim(logits.rank() - 1);
  if (logits.numel() != N * v) fail("logits {} are not one row per sequence ({})", ops::shapeStr(logits.shape()), N);
  return logits.reshaped({N, v});
}

std::vector<int64_t> PagedModel::stepGreedy(const std::vector<SeqStep>& steps) {
  std::vector<int64_t> ctx;
  std::vector<int64_t> next = exec_.runGreedy(inputs(steps, ctx), "logits");
  for (size_t n = 0; n < steps.size(); ++n) cache_.setLength(steps[n].seq, ctx[n]);
  if (next.size() != steps.size()) fail("{} greedy tokens for {} sequences", next.size(), steps.size());
  return next;
}

std::vector<int64_t> PagedModel::stepSampled(const std::vector<SeqStep>& steps,
                                            std::span<const GraphRunner::RowDraw> draws) {
  std::vector<int64_t> ctx;
  std::vector<int64_t> next = exec_.runSampled(inputs(steps, ctx), "logits", draws);
  for (size_t n = 0; n < steps.size(); ++n) cache_.setLength(steps[n].seq, ctx[n]);
  if (next.size() != draws.size()) fail("{} tokens for {} draws", next.size(), draws.size());
  return next;
}

std::vector<int64_t> generatePaged(const GraphRunner& exec, const GenerateRequest& req, const PagedOptions& opts,
                                   const std::function<void(int64_t)>& onToken) {
  if (req.promptIds.empty()) fail("the prompt is empty: give at least one token id");
  if (req.maxNewTokens < 0) fail("--max-new-tokens must be >= 0, got {}", req.maxNewTokens);
  if (opts.blockSize <= 0) fail("--block-size must be >= 1, got {}", opts.blockSize);
  if (opts.numBlocks < 0) fail("--cache-blocks must be >= 0, got {}", opts.numBlocks);
  int64_t total = (int64_t)req.promptIds.size() + req.maxNewTokens;
  SchedulerOptions so;
  so.blockSize = opts.blockSize;
  so.numBlocks = opts.numBlocks > 0 ? opts.numBlocks : std::max<int64_t>(1, (total + opts.blockSize - 1) / opts.blockSize);
  so.maxStepTokens = std::max<int64_t>(1, (int64_t)req.promptIds.size());  // the prompt in one step
  so.maxSeqs = 1;
  std::vector<int64_t> out;
  Scheduler::Events ev;
  if (onToken) ev.onToken = [&](int64_t, int64_t t, const TokenLogprobs*) { onToken(t); };
  ev.onFinish = [&](int64_t, const std::vector<int64_t>& ids, FinishReason) { out = ids; };
  Scheduler sched(exec, so, ev);
  sched.add(req);
  sched.runToCompletion();
  return out;
}

}  // namespace strata::runtime
