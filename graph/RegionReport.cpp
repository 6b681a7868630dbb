#include "graph/RegionReport.h"

#include <fmt/format.h>

#include <map>

namespace strata::graph {

using nlohmann::json;

namespace {

json shapeJson(const ops::GraphDef& g, const std::string& name) {
  const ops::ValueInfo* v = nullptr;
  if (auto it = g.values.find(name); it != g.values.end()) v = &it->second;
  if (!v) v = g.findInput(name);
  json s = json::array();
  if (!v || !v->shapeKnown) return nullptr;
  for (const auto& d : v->shape) s.push_back(d.isStatic() ? json(d.value) : json(d.str()));
  return s;
}

}  // namespace

json describeRegions(const ops::GraphDef& g) {
  std::map<std::string, const ops::WeightRef*> weights;
  for (const auto& w : g.weights) weights[w.name] = &w;
  std::map<std::string, int64_t> depth;  // residual GEMMs upstream of a value
  int64_t layers = 0;
  for (const auto& n : g.nodes) layers += n.op == "region.paged_attention" || n.op == "Attention";
  json regions = json::array(), fallback = json::array();
  std::map<std::string, int64_t> counts;
  for (const auto& n : g.nodes) {
    int64_t d = 0;
    for (const auto& in : n.inputs)
      if (auto it = depth.find(in); it != depth.end()) d = std::max(d, it->second);
    bool residual = n.op == "region.gemm" && n.attrs.value("residual", 0) != 0;
    for (const auto& out : n.outputs) depth[out] = d + (residual ? 1 : 0);
    if (n.op.rfind("region.", 0) != 0) {
      fallback.push_back({{"op", n.op}, {"name", n.name}});
      continue;
    }
    json r;
    r["kind"] = n.op.substr(7);
    r["nodes"] = json::array({n.name});
    int64_t layer = d / 2;
    r["stage"] = n.op == "region.embedding" ? "embed" : layer >= layers && layers > 0 ? "head" : "layer";
    r["layer"] = r["stage"] == "layer" ? json(layer) : json(nullptr);
    r["inputs"] = json::array();
    int64_t weightBytes = 0;
    std::vector<const ops::WeightRef*> ws;
    for (const auto& in : n.inputs) {
      if (auto it = weights.find(in); it != weights.end()) {
        weightBytes += (int64_t)it->second->nbytes;
        ws.push_back(it->second);
        r["inputs"].push_back({{"name", in}, {"shape", it->second->shape}, {"weight", true}});
      } else {
        r["inputs"].push_back({{"name", in}, {"shape", shapeJson(g, in)}});
      }
    }
    r["outputs"] = json::array();
    for (const auto& out : n.outputs) r["outputs"].push_back({{"name", out}, {"shape", shapeJson(g, out)}});
    r["weight_bytes"] = weightBytes;
    auto lastDim = [&](const std::string& v) -> int64_t {
      json s = shapeJson(g, v);
      return s.is_array() && !s.empty() && s.back().is_number() ? s.back().get<int64_t>() : 0;
    };
    std::string detail;
    double flops = 0;
    std::string unit = "per token";
    if (n.op == "region.gemm") {
      bool nk = n.attrs.value("layout", "kn") == "nk";
      int64_t K = 0, sumN = 0;
      for (const auto* w : ws)
        if (w->shape.size() == 2) K = nk ? w->shape[1] : w->shape[0], sumN += nk ? w->shape[0] : w->shape[1];
      int64_t nw = n.attrs.value("weights", (int64_t)1);
      // Bias vectors are weights too; only 2-D ones are products.
      flops = 2.0 * K * sumN;
      std::string epi = n.attrs.value("epilogue", "none");
      if (epi == "swiglu") detail = "gate/up + swiglu", flops += 5.0 * sumN / 2;
      else if (epi == "geglu") detail = "gate/up + geglu", flops += 10.0 * sumN / 2;
      else if (nw == 3) detail = "q/k/v";
      else if (nw > 1) detail = std::to_string(nw) + " projections";
      else detail = "projection";
      if (n.attrs.value("bias", 0)) detail += " + bias", flops += sumN;
      if (epi == "gelu") detail += " + gelu", flops += 9.0 * sumN;
      if (n.attrs.value("residual", 0)) detail += " + residual", flops += sumN;
      if (n.attrs.value("rows", 0)) detail = "lm_head (last token per sequence)", unit = "per sequence";
      if (n.attrs.value("norm", 0)) detail = "rmsnorm + " + detail, flops += 4.0 * K;
    } else if (n.op == "region.rmsnorm") {
      flops = 4.0 * lastDim(n.outputs[0]);
    } else if (n.op == "region.layernorm") {
      flops = 7.0 * lastDim(n.outputs[0]);
    } else if (n.op == "region.rope") {
      flops = 3.0 * lastDim(n.outputs[0]);
      detail = "head_dim " + std::to_string(n.attrs.value("head_dim", (int64_t)0));
    } else if (n.op == "region.paged_attention") {
      int64_t H = n.attrs.value("heads", (int64_t)0), Hk = n.attrs.value("kv_heads", (int64_t)0),
              D = n.attrs.value("head_dim", (int64_t)0);
      flops = 4.0 * H * D;
      unit = "per token per context token";
      detail = fmt::format("{} heads / {} kv heads x {}", H, Hk, D);
      r["kv_bytes_per_context_token"] = 2 * Hk * D * 4;
    } else if (n.op == "region.rope_kv_write") {
      flops = 3.0 * (lastDim(n.inputs[0]) + lastDim(n.inputs[1]));
      detail = fmt::format("q and k rope, head_dim {}, + kv_write layer {}", n.attrs.value("head_dim", (int64_t)0),
                           n.attrs.value("layer", (int64_t)0));
    } else if (n.op == "region.kv_write") {
      detail = "layer " + std::to_string(n.attrs.value("layer", (int64_t)0));
    } else if (n.op == "region.embedding") {
      detail = "gather";
    } else if (n.op == "region.elementwise") {
      for (const auto& step : n.attrs.at("body")) detail += (detail.empty() ? "" : " ") + step.at("op").get<std::string>();
      flops = (double)n.attrs.at("body").size() * lastDim(n.outputs[0]);  // one op per element, last dim per token
    }
    r["detail"] = detail;
    r["flops"] = flops;
    r["flops_unit"] = unit;
    ++counts[r["kind"].get<std::string>()];
    regions.push_back(r);
  }
  return {{"regions", regions}, {"fallback", fallback}, {"layers", layers}, {"counts", counts}};
}

}  // namespace strata::graph
