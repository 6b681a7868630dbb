#include "graph/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace strata::graph {

using namespace mlir;

std::optional<std::vector<ops::Dim>> getDims(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt) return std::nullopt;
  auto arr = dyn_cast_or_null<ArrayAttr>(rt.getEncoding());
  std::vector<ops::Dim> dims;
  for (int64_t i = 0; i < rt.getRank(); ++i) {
    if (!rt.isDynamicDim(i)) { dims.push_back({rt.getDimSize(i), ""}); continue; }
    std::string sym;
    if (arr && i < (int64_t)arr.size())
      if (auto s = dyn_cast<StringAttr>(arr[i])) sym = s.str();
    dims.push_back({-1, sym});
  }
  return dims;
}

RankedTensorType makeTensorType(MLIRContext* ctx, const std::vector<ops::Dim>& dims, Type elt) {
  SmallVector<int64_t> shape;
  SmallVector<Attribute> syms;
  bool named = false;
  for (const auto& d : dims) {
    shape.push_back(d.isStatic() ? d.value : ShapedType::kDynamic);
    syms.push_back(StringAttr::get(ctx, d.isStatic() ? "" : d.symbol));
    named |= !d.isStatic() && !d.symbol.empty();
  }
  return RankedTensorType::get(shape, elt, named ? ArrayAttr::get(ctx, syms) : Attribute());
}

Type elementTypeFor(MLIRContext* ctx, ops::DType t) {
  Builder b(ctx);
  switch (t) {
    case ops::DType::F32: return b.getF32Type();
    case ops::DType::F16: return b.getF16Type();
    case ops::DType::BF16: return b.getBF16Type();
    case ops::DType::I64: return b.getI64Type();
    case ops::DType::I32: return b.getI32Type();
    case ops::DType::Bool: return b.getI1Type();
  }
  return b.getF32Type();
}

ops::DType dtypeFor(Type elt) {
  if (elt.isF32()) return ops::DType::F32;
  if (elt.isF16()) return ops::DType::F16;
  if (elt.isBF16()) return ops::DType::BF16;
  if (elt.isInteger(64)) return ops::DType::I64;
  if (elt.isInteger(32)) return ops::DType::I32;
  if (elt.isInteger(1)) return ops::DType::Bool;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << elt;
  fail("element type {} has no strata dtype", s);
}

}  // namespace strata::graph
