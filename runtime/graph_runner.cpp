#include "runtime/graph_runner.h"

#include "ops/gemm_region.h"
#include "runtime/parallel.h"
#include "runtime/sampler.h"

namespace strata::runtime {

ops::DType GraphRunner::cacheDType() const {
  const ops::ValueInfo* c = graph().findInput("kv_cache.0");
  return c ? c->dtype : ops::DType::F32;
}

void GraphRunner::setProfiling(bool) const { fail("{}: this runner does not profile", graph().source); }

std::map<std::string, GraphRunner::ProfileRow> GraphRunner::takeProfile() const { return {}; }

std::string profileLabel(const ops::NodeDef& n, const ops::Tensor* seqStarts) {
  std::string op = n.op.substr(n.op.rfind('.') + 1);
  if (n.op == "region.gemm") {
    const auto g = ops::GemmRegionOperands::of(n, n.inputs.size());
    return op + (g.rows ? " lm_head" : g.swiglu ? " swiglu" : g.residual ? " residual" : g.weights > 1 ? " qkv" : "");
  }
  if (n.op == "region.paged_attention" && seqStarts && seqStarts->defined() && seqStarts->dtype() == ops::DType::I64) {
    const int64_t* st = seqStarts->data<int64_t>();
    bool decode = true;
    for (int64_t i = 0; i + 1 < seqStarts->numel(); ++i) decode &= st[i + 1] - st[i] == 1;
    return op + (decode ? " decode" : " prefill");
  }
  return op;
}

namespace {

// Output `name` of a step as host f32 rows of logits [rows, vocab].
ops::Tensor logitRows(const GraphRunner& r, const TensorMap& out, const std::string& name) {
  auto it = out.find(name);
  if (it == out.end()) fail("{}: the graph has no output '{}'", r.graph().source, name);
  const ops::Tensor logits = it->second.toF32();
  if (logits.rank() < 1 || logits.dim(logits.rank() - 1) < 1)
    fail("output '{}' {} has no rows of logits", name, ops::shapeStr(logits.shape()));
  const int64_t vocab = logits.dim(logits.rank() - 1);
  return logits.reshaped({logits.numel() / vocab, vocab});
}

}  // namespace

std::vector<int64_t> GraphRunner::runGreedy(const TensorMap& inputs, const std::string& name) const {
  const ops::Tensor logits = logitRows(*this, run(inputs), name);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  std::vector<int64_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r) ids[r] = greedyToken({logits.data<float>() + r * vocab, (size_t)vocab});
  return ids;
}

void GraphRunner::checkDraws(std::span<const RowDraw> draws, int64_t rows) {
  for (const RowDraw& d : draws)
    if (d.row < 0 || d.row >= rows || !d.sampler) fail("a draw from row {} of {} rows of logits", d.row, rows);
}

std::vector<int64_t> GraphRunner::runSampled(const TensorMap& inputs, const std::string& name,
                                             std::span<const RowDraw> draws) const {
  const ops::Tensor logits = logitRows(*this, run(inputs), name);
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  checkDraws(draws, rows);
  // Each draw has its own sampler, so rows go in parallel when there is
  // enough of them (32 x a 128k vocabulary is milliseconds on one core).
  std::vector<int64_t> next(draws.size());
  parallelRanges(
      (int64_t)draws.size(),
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const std::span<const float> row{logits.data<float>() + draws[i].row * vocab, (size_t)vocab};
          next[i] = draws[i].sampler->sample(row, draws[i].history, draws[i].generatedFrom);
          if (draws[i].logprobs) *draws[i].logprobs = tokenLogprobs(row, next[i], draws[i].topLogprobs);
        }
      },
      (int64_t)draws.size() * vocab < (int64_t(1) << 20) ? 1 : 0);
  return next;
}

std::vector<std::vector<std::string>> planLifetimes(const ops::GraphDef& g, const std::set<std::string>& params,
                                                    const std::function<void(const ops::NodeDef&)>& prepare) {
  std::set<std::string> defined(params);
  for (const auto& v : g.inputs) defined.insert(v.name);
  std::map<std::string, size_t> lastUse;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    try {
      prepare(n);
    } catch (const Error& e) {
      fail("{}: node '{}' ({}): {}", g.source, n.name, n.op, e.what());
    }
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      if (!defined.count(in)) fail("{}: node '{}' ({}) reads '{}' before anything produces it", g.source, n.name, n.op, in);
      lastUse[in] = i;
    }
    for (const auto& out : n.outputs) defined.insert(out);
  }
  for (const auto& o : g.outputs) {
    if (!defined.count(o.name)) fail("{}: graph output '{}' is never produced", g.source, o.name);
    lastUse.erase(o.name);
  }
  std::vector<std::vector<std::string>> freeAfter(g.nodes.size());
  for (const auto& [name, i] : lastUse)
    if (!params.count(name)) freeAfter[i].push_back(name);
  return freeAfter;
}

}  // namespace strata::runtime
