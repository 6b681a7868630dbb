#include "ops/gemm_region.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ops/error.h"

namespace strata::ops {

GemmRegionOperands GemmRegionOperands::of(const NodeDef& n, size_t operands) {
  GemmRegionOperands g;
  const nlohmann::json& a = n.attrs;
  g.weights = a.at("weights").get<int64_t>();
  g.bias = a.value("bias", 0) != 0, g.residual = a.value("residual", 0) != 0, g.rows = a.value("rows", 0) != 0;
  const std::string layout = a.value("layout", "kn"), epi = a.value("epilogue", "none");
  if ((layout != "kn" && layout != "nk") || (epi != "none" && epi != "swiglu" && epi != "gelu" && epi != "geglu"))
    fail("region.gemm: layout '{}' / epilogue '{}' unknown", layout, epi);
  g.weightsNK = layout == "nk", g.swiglu = epi == "swiglu" || epi == "geglu", g.gelu = epi == "gelu" || epi == "geglu";
  if (g.weights < 1 || (g.swiglu && g.weights != 2) || (epi == "gelu" && g.weights != 1) || (g.residual && g.outputs() != 1) || operands != g.count())
    fail("region.gemm: {} operands for {} weights (bias {}, residual {}, rows {}, epilogue {})", operands, g.weights,
         g.bias, g.residual, g.rows, epi);
  return g;
}

int64_t GemmRegionOperands::width(const Shape& w, int64_t K, int64_t i) const {
  if (w.size() != 2 || w[weightsNK ? 1 : 0] != K)
    fail("weight #{} is {}, expected {} with K = {}", i, shapeStr(w), weightsNK ? "[N, K]" : "[K, N]", K);
  return w[weightsNK ? 0 : 1];
}

Shape GemmRegionOperands::gatheredShape(const Shape& x, int64_t count) {
  Shape s(std::max<int64_t>((int64_t)x.size() - 2, 0), 1);
  s.push_back(count);
  s.push_back(x.back());
  return s;
}

}  // namespace strata::ops

namespace strata::ops {

std::map<std::string, abi::Int8BlockForm> gpuQuantWeightForms(const GraphDef& g) {
  std::map<std::string, const WeightRef*> quantized;
  for (const WeightRef& w : g.weights)
    if (!w.quant.empty()) quantized[w.name] = &w;
  std::map<std::string, abi::Int8BlockForm> forms;
  auto own = [&](const std::string& name) -> std::optional<abi::Int8BlockForm> {
    auto it = quantized.find(name);
    if (it == quantized.end()) return std::nullopt;
    std::optional<abi::Int8BlockForm> f = abi::int8BlockForm(it->second->quant);
    if (!f) fail("weight '{}': unknown block format {}", name, it->second->quant);
    return abi::gpuInt8Form(*f);
  };
  auto assign = [&](const NodeDef& n, const std::string& name, const abi::Int8BlockForm& f) {
    auto [it, fresh] = forms.try_emplace(name, f);
    if (!fresh && !(it->second == f))
      fail("node '{}': weight '{}' would be read in two GPU forms ({} and {})", n.name, name,
           abi::int8FormName(it->second), abi::int8FormName(f));
  };
  for (const NodeDef& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = GemmRegionOperands::of(n, n.inputs.size());
    std::vector<abi::Int8BlockForm> launch;
    for (int64_t wi = 0; wi < op.weights; ++wi) {
      const std::string& name = n.inputs[op.weight(wi)];
      std::optional<abi::Int8BlockForm> f = own(name);
      if (!f) continue;
      if (!op.weightsNK) fail("node '{}': quantized weight '{}' must be read [N, K] (layout nk)", n.name, name);
      if (!op.swiglu) assign(n, name, *f);
      launch.push_back(*f);
    }
    if (!op.swiglu || launch.empty()) continue;
    if (launch.size() != 2)
      fail("node '{}': a SwiGLU GEMM's gate and up weights must both be quantized or neither", n.name);
    const abi::Int8BlockForm both = abi::gpuInt8Form(abi::commonInt8Form(launch));
    for (int64_t wi = 0; wi < 2; ++wi) assign(n, n.inputs[op.weight(wi)], both);
  }
  return forms;
}

}  // namespace strata::ops
