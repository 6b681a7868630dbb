#include "graph/GemmParts.h"

#include "graph/Match.h"

namespace strata::graph {

using namespace mlir;

std::optional<GemmParts> readGemm(Operation* op) {
  if (!isOp(op, "region.gemm")) return std::nullopt;
  GemmParts g;
  int64_t n = intAttrOf(op, "weights").value_or(0);
  bool bias = intAttrOf(op, "bias").value_or(0), res = intAttrOf(op, "residual").value_or(0),
       rows = intAttrOf(op, "rows").value_or(0), norm = intAttrOf(op, "norm").value_or(0);
  if (n < 1 || op->getNumOperands() != 1 + n * (bias ? 2 : 1) + res + rows + norm) return std::nullopt;
  unsigned i = 0;
  g.x = op->getOperand(i++);
  for (int64_t k = 0; k < n; ++k) g.weights.push_back(op->getOperand(i++));
  if (bias)
    for (int64_t k = 0; k < n; ++k) g.biases.push_back(op->getOperand(i++));
  if (res) g.residual = op->getOperand(i++);
  if (rows) g.rows = op->getOperand(i++);
  if (norm) {
    g.norm = op->getOperand(i++);
    auto eps = op->getAttrOfType<FloatAttr>("norm_eps");
    if (!eps) return std::nullopt;
    g.normEps = eps.getValueAsDouble();
  }
  if (auto a = op->getAttrOfType<StringAttr>("layout")) g.layout = a.str();
  if (auto a = op->getAttrOfType<StringAttr>("epilogue")) g.epilogue = a.str();
  return g;
}

Operation* buildGemm(OpBuilder& b, Location loc, const GemmParts& g, TypeRange results) {
  SmallVector<Value> operands{g.x};
  operands.append(g.weights.begin(), g.weights.end());
  operands.append(g.biases.begin(), g.biases.end());
  if (g.residual) operands.push_back(g.residual);
  if (g.rows) operands.push_back(g.rows);
  if (g.norm) operands.push_back(g.norm);
  SmallVector<NamedAttribute> attrs{
      {b.getStringAttr("weights"), b.getI64IntegerAttr((int64_t)g.weights.size())},
      {b.getStringAttr("bias"), b.getI64IntegerAttr(!g.biases.empty())},
      {b.getStringAttr("residual"), b.getI64IntegerAttr(g.residual != nullptr)},
      {b.getStringAttr("rows"), b.getI64IntegerAttr(g.rows != nullptr)},
      {b.getStringAttr("layout"), b.getStringAttr(g.layout)},
      {b.getStringAttr("epilogue"), b.getStringAttr(g.epilogue)}};
  if (g.norm) {  // only then: the regions without it print as before
    attrs.push_back({b.getStringAttr("norm"), b.getI64IntegerAttr(1)});
    attrs.push_back({b.getStringAttr("norm_eps"), b.getF64FloatAttr(g.normEps)});
  }
  return createNode(b, loc, "region.gemm", results, operands, attrs);
}

}  // namespace strata::graph
