#include "runtime/norm_fold.h"

#include <algorithm>
#include <set>

#include "ops/gemm_region.h"

namespace strata::runtime {

NormFold foldNormWeights(ops::GraphDef& g) {
  NormFold fold;
  std::map<std::string, ops::WeightRef> weights;
  for (const auto& w : g.weights) weights[w.name] = w;
  std::set<std::string> outputs;
  for (const auto& o : g.outputs) outputs.insert(o.name);
  // Readers of each value: (node, input position).
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> readers;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t j = 0; j < g.nodes[i].inputs.size(); ++j) readers[g.nodes[i].inputs[j]].push_back({i, j});

  for (const ops::NodeDef& norm : g.nodes) {
    if (norm.op != "region.rmsnorm" || norm.inputs.size() != 2 || norm.outputs.size() != 1 ||
        !norm.attrs.contains("eps"))
      continue;
    const std::string& y = norm.outputs[0];
    auto gamma = weights.find(norm.inputs[1]);
    if (gamma == weights.end() || gamma->second.shape.size() != 1 || outputs.count(y) || !readers.count(y)) continue;
    const int64_t width = gamma->second.shape[0];
    bool fits = true;
    for (auto [i, j] : readers[y]) {
      const ops::NodeDef& n = g.nodes[i];
      if (n.op != "region.gemm" || j != 0) {
        fits = false;
        break;
      }
      const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
      for (int64_t wi = 0; wi < op.weights && fits; ++wi) {
        auto w = weights.find(n.inputs[op.weight(wi)]);
        fits = op.weightsNK && w != weights.end() && w->second.shape.size() == 2 && w->second.shape[1] == width &&
               std::count(n.inputs.begin() + 1, n.inputs.end(), w->first) == 1;
      }
      if (!fits) break;
    }
    if (!fits) continue;
    for (auto [i, j] : readers[y]) {
      ops::NodeDef& n = g.nodes[i];
      const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
      for (int64_t wi = 0; wi < op.weights; ++wi) {
        std::string& in = n.inputs[op.weight(wi)];
        const std::string name = in + "*" + gamma->first;
        if (!fold.weights.count(name)) {
          ops::WeightRef folded = weights.at(in);
          fold.weights[name] = {folded, gamma->first};
          folded.name = name;
          g.weights.push_back(folded);
        }
        in = name;
      }
    }
    fold.normalizedBy[y] = norm.attrs.at("eps").get<float>();
  }
  // Weights nothing reads any more (their folded copies replaced them).
  std::set<std::string> read(outputs);
  for (const auto& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  std::erase_if(g.weights, [&](const ops::WeightRef& w) { return !read.count(w.name); });
  return fold;
}

}  // namespace strata::runtime
