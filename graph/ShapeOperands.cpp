#include "graph/ShapeOperands.h"

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
    if (terms && terms.size() == 1 && (!c || c.getInt() == 0)) {
      auto t = dyn_cast<DenseI64ArrayAttr>(terms[0]);
      if (t && t.size() == 3 && t[2] == 1 && t[0] >= 0 && t[0] < (int64_t)op->getNumOperands())
        if (auto src = getDims(op->getOperand(t[0]).getType()); src && t[1] >= 0 && t[1] < (int64_t)src->size())
          d = (*src)[t[1]];
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace strata::graph
