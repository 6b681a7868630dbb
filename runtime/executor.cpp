#include "runtime/executor.h"

#include <set>

#include "ops/kernel_table.h"

namespace strata::runtime {

Executor::Executor(ops::GraphDef graph, abi::KernelLookup kernels) : graph_(std::move(graph)) {
  if (kernels) kernels_ = std::make_unique<RegionKernels>(std::move(kernels));
  for (const auto& w : graph_.weights) params_[w.name] = weightStore_.load(w);
  for (const auto& c : graph_.constants) params_[c.name] = c.value;
  std::set<std::string> defined;
  for (const auto& v : graph_.inputs) defined.insert(v.name);
  for (const auto& [k, v] : params_) defined.insert(k);
  std::map<std::string, size_t> lastUse;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const auto& n = graph_.nodes[i];
    if (kernels_) {
      if (!RegionKernels::planned(n))
        fail("{}: node '{}' ({}) has no generated kernel", graph_.source, n.name, n.op);
      try {
        kernels_->prepare(n);
      } catch (const Error& e) {
        fail("{}: node '{}' ({}): {}", graph_.source, n.name, n.op, e.what());
      }
    } else if (!ops::findKernel(n.op)) {
      fail("{}: node '{}': op '{}' is not supported", graph_.source, n.name, n.op);
    }
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      if (!defined.count(in))
        fail("{}: node '{}' ({}) reads '{}' before anything produces it", graph_.source, n.name, n.op, in);
      lastUse[in] = i;
    }
    for (const auto& out : n.outputs) defined.insert(out);
  }
  for (const auto& o : graph_.outputs) {
    if (!defined.count(o.name)) fail("{}: graph output '{}' is never produced", graph_.source, o.name);
    lastUse.erase(o.name);
  }
  freeAfter_.resize(graph_.nodes.size());
  for (const auto& [name, i] : lastUse)
    if (!params_.count(name)) freeAfter_[i].push_back(name);
}

ops::DType GraphRunner::cacheDType() const {
  const ops::ValueInfo* c = graph().findInput("kv_cache.0");
  return c ? c->dtype : ops::DType::F32;
}

TensorMap Executor::run(const TensorMap& inputs) const {
  TensorMap env;
  for (const auto& v : graph_.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end()) fail("{}: graph input '{}' was not given", graph_.source, v.name);
    env[v.name] = it->second;
  }
  auto lookup = [&](const std::string& name) -> const ops::Tensor& {
    auto it = env.find(name);
    if (it != env.end()) return it->second;
    return params_.at(name);
  };
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const auto& n = graph_.nodes[i];
    std::vector<ops::Tensor> args;
    for (const auto& in : n.inputs) args.push_back(in.empty() ? ops::Tensor() : lookup(in));
    std::vector<ops::Tensor> outs;
    try {
      outs = kernels_ ? kernels_->run(n, args) : (*ops::findKernel(n.op))(n, args);
    } catch (const Error& e) {
      fail("{}: node '{}' ({}): {}", graph_.source, n.name, n.op, e.what());
    } catch (const std::exception& e) {
      fail("{}: node '{}' ({}): bad attributes: {}", graph_.source, n.name, n.op, e.what());
    }
    if (outs.size() < n.outputs.size())
      fail("{}: node '{}' ({}) produced {} outputs, graph expects {}", graph_.source, n.name, n.op, outs.size(), n.outputs.size());
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) env[n.outputs[k]] = std::move(outs[k]);
    for (const auto& dead : freeAfter_[i]) env.erase(dead);
  }
  TensorMap result;
  for (const auto& o : graph_.outputs) result[o.name] = lookup(o.name);
  return result;
}

}  // namespace strata::runtime
