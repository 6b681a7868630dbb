#include "runtime/executor.h"

#include <chrono>
#include <set>
#include <utility>

#include "ops/kernel_table.h"
#include "ops/quant.h"

namespace strata::runtime {

Executor::Executor(ops::GraphDef graph, abi::KernelLookup kernels) : graph_(std::move(graph)) {
  if (kernels) kernels_ = std::make_unique<RegionKernels>(std::move(kernels));
  // Generated kernels read weight matrices in their stored type (16-bit
  // ones widened in registers); the reference ops, and the kernels' 1-D
  // weights (norm scales, biases: a few KiB), take f32.
  // Quantized ones stay in their blocks for the kernels, which take them by
  // name (RegionKernels::addQuantWeight; an undefined tensor stands in the
  // inputs); the reference ops get them dequantized.
  for (const auto& w : graph_.weights) {
    if (kernels_ && !w.quant.empty()) {
      if (w.shape.size() != 2) fail("weight '{}': a quantized weight must be 2-D, got {}", w.name, ops::shapeStr(w.shape));
      kernels_->addQuantWeight(w.name, {ops::quantFormat(w.quant), w.shape[0], w.shape[1], weightStore_.quantRows(w)});
      params_[w.name] = ops::Tensor();
      continue;
    }
    params_[w.name] = kernels_ && w.shape.size() == 2 ? weightStore_.stored(w) : weightStore_.load(w);
  }
  for (const auto& c : graph_.constants) params_[c.name] = c.value;
  std::set<std::string> params;
  for (const auto& [k, v] : params_) params.insert(k);
  freeAfter_ = planLifetimes(graph_, params, [&](const ops::NodeDef& n) {
    if (kernels_) {
      if (!RegionKernels::planned(n)) fail("has no generated kernel");
      kernels_->prepare(n);
    } else if (!ops::findKernel(n.op)) {
      fail("op '{}' is not supported", n.op);
    }
  });
}

std::map<std::string, GraphRunner::ProfileRow> Executor::takeProfile() const { return std::exchange(profile_, {}); }

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
    auto runNode = [&] { return kernels_ ? kernels_->run(n, args) : (*ops::findKernel(n.op))(n, args); };
    std::vector<ops::Tensor> outs = runNamedNode(graph_, n, [&] {
      if (!profiling_) return runNode();
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<ops::Tensor> o = runNode();
      ProfileRow& row = profile_[profileLabel(n, args.size() > 3 ? &args[3] : nullptr)];
      row.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++row.calls;
      return o;
    });
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) env[n.outputs[k]] = std::move(outs[k]);
    for (const auto& dead : freeAfter_[i]) env.erase(dead);
  }
  TensorMap result;
  for (const auto& o : graph_.outputs) result[o.name] = lookup(o.name);
  return result;
}

}  // namespace strata::runtime
