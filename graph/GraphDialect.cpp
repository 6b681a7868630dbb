#include "graph/GraphDialect.h"
#include "ops/quant.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "graph/GraphOpsDialect.cpp.inc"

#define GET_OP_CLASSES
#include "graph/GraphOps.cpp.inc"

namespace strata::graph {

using namespace mlir;

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "graph/GraphOps.cpp.inc"
      >();
}

LogicalResult verifyEncoding(Operation* op, Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || !rt.getEncoding()) return success();
  auto arr = dyn_cast<ArrayAttr>(rt.getEncoding());
  if (!arr || (int64_t)arr.size() != rt.getRank())
    return op->emitOpError() << "tensor encoding must list one dim symbol per dim, got " << rt;
  for (auto [i, a] : llvm::enumerate(arr)) {
    auto s = dyn_cast<StringAttr>(a);
    if (!s) return op->emitOpError() << "dim symbol " << i << " of " << rt << " is not a string";
    if (!s.getValue().empty() && !rt.isDynamicDim(i))
      return op->emitOpError() << "static dim " << i << " of " << rt << " cannot carry symbol '" << s.getValue() << "'";
  }
  return success();
}

LogicalResult verifyNodeOp(Operation* op, int minIn, int maxIn, int numOut) {
  int n = (int)op->getNumOperands();
  if (n < minIn || (maxIn >= 0 && n > maxIn)) {
    auto d = op->emitOpError() << "takes ";
    if (maxIn < 0) d << "at least " << minIn;
    else if (minIn == maxIn) d << minIn;
    else d << minIn << " to " << maxIn;
    return d << " inputs, got " << n;
  }
  if (numOut >= 0 && (int)op->getNumResults() != numOut)
    return op->emitOpError() << "produces " << numOut << " results, got " << op->getNumResults();
  if (numOut < 0 && op->getNumResults() == 0) return op->emitOpError() << "produces at least one result";
  for (Type t : op->getOperandTypes())
    if (failed(verifyEncoding(op, t))) return failure();
  for (Type t : op->getResultTypes())
    if (failed(verifyEncoding(op, t))) return failure();
  return success();
}

static int64_t bitsOf(Type t) { return t.isInteger(1) ? 8 : t.getIntOrFloatBitWidth(); }

LogicalResult WeightOp::verify() {
  auto t = cast<RankedTensorType>(getType());
  int64_t want = t.getNumElements() * bitsOf(t.getElementType()) / 8;
  if (auto q = getQuant()) {
    const ops::QuantFormat* f = ops::quantFormat(q->str());
    if (!f) return emitOpError() << "quant '" << *q << "' is not a known block format";
    auto bytes = ops::quantizedBytes(*f, ops::Shape(t.getShape().begin(), t.getShape().end()));
    if (!t.getElementType().isF32() || !bytes)
      return emitOpError() << "quant " << *q << " needs f32 values in rows of whole blocks of " << f->blockElems;
    want = *bytes;
  }
  if (getNbytes() != want)
    return emitOpError() << "records " << getNbytes() << " bytes but " << t << " needs " << want;
  if (getOffset() < 0) return emitOpError() << "has a negative file offset";
  if (auto heads = getInterleavedRopeHeads()) {
    int64_t rows = t.getRank() ? t.getDimSize(0) : 0;
    if (*heads <= 0 || rows % *heads || (rows / *heads) % 2)
      return emitOpError() << "interleaved_rope_heads " << *heads << " does not split " << rows
                           << " rows into heads of an even size";
  }
  return success();
}

LogicalResult ConstantOp::verify() {
  auto vt = cast<ShapedType>(getValue().getType());
  auto rt = cast<RankedTensorType>(getType());
  if (vt.getShape() != rt.getShape() || vt.getElementType() != rt.getElementType())
    return emitOpError() << "value of type " << vt << " does not match result type " << rt;
  return success();
}

LogicalResult GraphOp::verify() {
  Block& b = getBody().front();
  if (getInputNames().size() != b.getNumArguments())
    return emitOpError() << "names " << getInputNames().size() << " inputs but has " << b.getNumArguments();
  for (Type t : b.getArgumentTypes())
    if (failed(verifyEncoding(*this, t))) return failure();
  if (b.empty() || !isa<OutputOp>(b.back())) return emitOpError() << "must end in graph.output";
  return success();
}

LogicalResult OutputOp::verify() {
  if (getNames().size() != getValues().size())
    return emitOpError() << "names " << getNames().size() << " outputs but returns " << getValues().size();
  return success();
}

}  // namespace strata::graph
