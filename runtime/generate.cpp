#include "runtime/generate.h"

#include <algorithm>

namespace strata::runtime {

using ops::Tensor;

namespace {
const std::string kPastPrefix = "past_key_values.";
// "past_key_values.3.key" -> "present.3.key"
std::string presentName(const std::string& past) { return "present." + past.substr(kPastPrefix.size()); }
}  // namespace

Generator::Generator(const Executor& exec) : exec_(exec) {
  const auto& g = exec.graph();
  if (!g.findInput("input_ids")) fail("{}: the graph has no 'input_ids' input; cannot generate text with it", g.source);
  bool logits = false;
  for (const auto& o : g.outputs) logits |= o.name == "logits";
  if (!logits) fail("{}: the graph has no 'logits' output; cannot generate text with it", g.source);
  for (const auto& in : g.inputs) {
    if (in.name.rfind(kPastPrefix, 0) != 0) continue;
    bool paired = false;
    for (const auto& o : g.outputs) paired |= o.name == presentName(in.name);
    if (!paired) fail("{}: input '{}' has no matching '{}' output", g.source, in.name, presentName(in.name));
    pastInputs_.push_back(in.name);
  }
  hasPast_ = !pastInputs_.empty();
}

TensorMap Generator::stepInputs(const std::vector<int64_t>& ids, int64_t past, const TensorMap& cache) const {
  const auto& g = exec_.graph();
  int64_t n = (int64_t)ids.size();
  TensorMap in;
  in["input_ids"] = Tensor::fromI64(ids, {1, n});
  if (g.findInput("attention_mask")) in["attention_mask"] = Tensor::fromI64(std::vector<int64_t>(past + n, 1), {1, past + n});
  if (g.findInput("position_ids")) {
    std::vector<int64_t> pos(n);
    for (int64_t i = 0; i < n; ++i) pos[i] = past + i;
    in["position_ids"] = Tensor::fromI64(pos, {1, n});
  }
  for (const auto& name : pastInputs_) {
    auto it = cache.find(name);
    if (it != cache.end()) { in[name] = it->second; continue; }
    // First step: an empty past. Dim 0 is the batch, other symbolic dims are
    // the (empty) past length, static dims are kept.
    const ops::ValueInfo* v = g.findInput(name);
    ops::Shape s;
    for (size_t d = 0; d < v->shape.size(); ++d) s.push_back(v->shape[d].isStatic() ? v->shape[d].value : (d == 0 ? 1 : 0));
    in[name] = Tensor(v->dtype == ops::DType::F32 ? ops::DType::F32 : v->dtype, s);
  }
  return in;
}

Tensor Generator::forward(const std::vector<int64_t>& ids) {
  TensorMap out = exec_.run(stepInputs(ids, 0, {}));
  const Tensor& l = out.at("logits");
  return l.reshaped({l.numel() / l.dim(l.rank() - 1), l.dim(l.rank() - 1)});
}

std::vector<int64_t> Generator::generate(const GenerateRequest& req, const std::function<void(int64_t)>& onToken) {
  if (req.promptIds.empty()) fail("the prompt is empty: give at least one token id");
  if (req.maxNewTokens < 0) fail("--max-new-tokens must be >= 0, got {}", req.maxNewTokens);
  Sampler sampler(req.sampling);
  std::vector<int64_t> ids = req.promptIds;
  const size_t generatedFrom = ids.size();
  TensorMap cache;
  std::vector<int64_t> pending = ids;  // tokens not yet seen by the model (with past)
  for (int64_t step = 0; step < req.maxNewTokens; ++step) {
    int64_t past = hasPast_ ? (int64_t)ids.size() - (int64_t)pending.size() : 0;
    TensorMap out = exec_.run(stepInputs(hasPast_ ? pending : ids, past, cache));
    const Tensor& logits = out.at("logits");
    int64_t v = logits.dim(logits.rank() - 1), rows = logits.numel() / v;
    if (logits.dtype() != ops::DType::F32) fail("logits must be f32, got {}", ops::dtypeName(logits.dtype()));
    int64_t next = sampler.sample({logits.data<float>() + (rows - 1) * v, (size_t)v}, ids, generatedFrom);
    ids.push_back(next);
    if (onToken) onToken(next);
    if (hasPast_) {
      for (const auto& name : pastInputs_) cache[name] = out.at(presentName(name));
      pending = {next};
    }
    if (std::find(req.eosIds.begin(), req.eosIds.end(), next) != req.eosIds.end()) break;
  }
  return ids;
}

}  // namespace strata::runtime
