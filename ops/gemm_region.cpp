#include "ops/gemm_region.h"

#include <algorithm>

#include "ops/error.h"

namespace strata::ops {

GemmRegionOperands GemmRegionOperands::of(const NodeDef& n, size_t operands) {
  GemmRegionOperands g;
  const nlohmann::json& a = n.attrs;
  g.weights = a.at("weights").get<int64_t>();
  g.bias = a.value("bias", 0) != 0, g.residual = a.value("residual", 0) != 0, g.rows = a.value("rows", 0) != 0;
  g.norm = a.value("norm", 0) != 0;
  if (g.norm) {
    if (!a.contains("norm_eps") || !a["norm_eps"].is_number()) fail("region.gemm: a norm prologue without norm_eps");
    g.normEps = a["norm_eps"].get<float>();
  }
  const std::string layout = a.value("layout", "kn"), epi = a.value("epilogue", "none");
  if ((layout != "kn" && layout != "nk") || (epi != "none" && epi != "swiglu" && epi != "gelu" && epi != "geglu"))
    fail("region.gemm: layout '{}' / epilogue '{}' unknown", layout, epi);
  g.weightsNK = layout == "nk", g.swiglu = epi == "swiglu" || epi == "geglu", g.gelu = epi == "gelu" || epi == "geglu";
  if (g.weights < 1 || (g.swiglu && g.weights != 2) || (epi == "gelu" && g.weights != 1) || (g.residual && g.outputs() != 1) || operands != g.count())
    fail("region.gemm: {} operands for {} weights (bias {}, residual {}, rows {}, norm {}, epilogue {})", operands,
         g.weights, g.bias, g.residual, g.rows, g.norm, epi);
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

