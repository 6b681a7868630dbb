#include "graph/Match.h"

#include "graph/ShapeOperands.h"
#include "graph/SymbolicDims.h"
#include "mlir/IR/OperationSupport.h"

namespace strata::graph {

using namespace mlir;

bool isOp(Operation* op, StringRef name) {
  return op && op->getDialect() && op->getDialect()->getNamespace() == "graph" && op->getName().stripDialect() == name;
}

Operation* defOf(Value v, StringRef name) {
  Operation* op = v ? v.getDefiningOp() : nullptr;
  return isOp(op, name) ? op : nullptr;
}

std::optional<double> scalarConstant(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c) return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || dense.getNumElements() != 1) return std::nullopt;
  Type elt = dense.getElementType();
  if (isa<FloatType>(elt)) return (*dense.getValues<APFloat>().begin()).convertToDouble();
  if (elt.isInteger(1)) return *dense.getValues<bool>().begin() ? 1.0 : 0.0;
  if (isa<IntegerType>(elt)) return (double)(*dense.getValues<APInt>().begin()).getSExtValue();
  return std::nullopt;
}

std::optional<int64_t> intAttrOf(Operation* op, StringRef name) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name)) return a.getInt();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> intsAttrOrOperand(Operation* op, StringRef name, unsigned operand) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name)) return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  if (op->getNumOperands() > operand && !isa<NoneType>(op->getOperand(operand).getType()))
    return constantInts(op->getOperand(operand));
  return std::nullopt;
}

std::optional<int64_t> rankOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType())) return t.getRank();
  return std::nullopt;
}

std::optional<int64_t> staticDim(Value v, int64_t i) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t) return std::nullopt;
  if (i < 0) i += t.getRank();
  if (i < 0 || i >= t.getRank() || t.isDynamicDim(i)) return std::nullopt;
  return t.getDimSize(i);
}

bool sameShape(Value a, Value b) {
  auto ta = dyn_cast<RankedTensorType>(a.getType()), tb = dyn_cast<RankedTensorType>(b.getType());
  return ta && tb && ta.getShape() == tb.getShape() && ta.getElementType() == tb.getElementType();
}

bool hasOperand(Operation* op, unsigned i) {
  return i < op->getNumOperands() && !isa<NoneType>(op->getOperand(i).getType());
}

bool sameExtent(Value a, int64_t da, Value b, int64_t db) {
  auto x = getDims(a.getType()), y = getDims(b.getType());
  if (!x || !y || da >= (int64_t)x->size() || db >= (int64_t)y->size()) return false;
  const ops::Dim &p = (*x)[da], &q = (*y)[db];
  return p.isStatic() ? q.isStatic() && p.value == q.value : !p.symbol.empty() && p.symbol == q.symbol;
}

bool isWeight(Value v, int64_t rank) {
  auto w = v.getDefiningOp<WeightOp>();
  return w && cast<RankedTensorType>(w.getType()).getRank() == rank;
}

std::string inputName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg) return "";
  auto g = dyn_cast<GraphOp>(arg.getOwner()->getParentOp());
  if (!g || arg.getArgNumber() >= g.getInputNames().size()) return "";
  return cast<StringAttr>(g.getInputNames()[arg.getArgNumber()]).str();
}

Value otherOperand(Operation* op, Value x) {
  if (op->getNumOperands() != 2) return nullptr;
  if (op->getOperand(0) == x) return op->getOperand(1);
  if (op->getOperand(1) == x) return op->getOperand(0);
  return nullptr;
}

Operation* createNode(OpBuilder& b, Location loc, StringRef opType, TypeRange results, ValueRange operands,
                      ArrayRef<NamedAttribute> attrs) {
  OperationState st(loc, ("graph." + opType).str());
  st.addOperands(operands);
  st.addTypes(results);
  st.addAttributes(attrs);
  return b.create(st);
}

Value createI64Constant(OpBuilder& b, Location loc, ArrayRef<int64_t> values, bool scalar) {
  SmallVector<int64_t> shape;
  if (!scalar) shape.push_back((int64_t)values.size());
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return ConstantOp::create(b, loc, type, "raised_const", DenseElementsAttr::get(type, values)).getResult();
}

}  // namespace strata::graph
