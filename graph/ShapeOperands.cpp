#include "graph/ShapeOperands.h"

#include <algorithm>

#include "graph/GraphDialect.h"
#include "graph/SymbolicDims.h"

namespace strata::graph {

using namespace mlir;

std::optional<std::vector<int64_t>> constantInts(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c) return std::nullopt;
  auto dense = dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!dense || dense.getElementType().isInteger(1)) return std::nullopt;
  std::vector<int64_t> r;
  for (const APInt& x : dense.getValues<APInt>()) r.push_back(x.getSExtValue());
  return r;
}

std::optional<std::vector<ops::Dim>> shapeOperandDims(Value v) {
  if (auto ints = constantInts(v)) {
    std::vector<ops::Dim> d;
    for (int64_t x : *ints) d.push_back({x, ""});
    return d;
  }
  Operation* op = v.getDefiningOp();
  if (!op || op->getName().getStringRef() != "graph.MakeShape") return std::nullopt;
  auto entries = op->getAttrOfType<ArrayAttr>("dims");
  if (!entries) return std::nullopt;
  std::vector<ops::Dim> out;
  for (Attribute e : entries) {
    if (auto i = dyn_cast<IntegerAttr>(e)) { out.push_back({i.getInt(), ""}); continue; }
    ops::Dim d{-1, "?"};
    auto dict = dyn_cast<DictionaryAttr>(e);
    auto c = dict ? dict.getAs<IntegerAttr>("c") : IntegerAttr();
    auto terms = dict ? dict.getAs<ArrayAttr>("terms") : ArrayAttr();
    // The entry is c + sum(coefficient * operand dim): exactly one input
    // dim (symbol included), or a number where every dim it reads is static.
    std::vector<ops::Dim> read;
    std::vector<int64_t> coeffs;
    for (Attribute ta : terms ? terms : ArrayAttr()) {
      auto t = dyn_cast<DenseI64ArrayAttr>(ta);
      if (!t || t.size() != 3 || t[0] < 0 || t[0] >= (int64_t)op->getNumOperands()) break;
      auto src = getDims(op->getOperand(t[0]).getType());
      if (!src || t[1] < 0 || t[1] >= (int64_t)src->size()) break;
      read.push_back((*src)[t[1]]);
      coeffs.push_back(t[2]);
    }
    const int64_t c0 = c ? c.getInt() : 0;
    if (terms && read.size() == terms.size()) {
      if (read.size() == 1 && coeffs[0] == 1 && c0 == 0) {
        d = read[0];
      } else if (std::all_of(read.begin(), read.end(), [](const ops::Dim& x) { return x.isStatic(); })) {
        int64_t v = c0;
        for (size_t k = 0; k < read.size(); ++k) v += coeffs[k] * read[k].value;
        d = {v, ""};
      }
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace strata::graph
