#include "graph/RopeAngles.h"

#include <cmath>

#include "graph/Evaluate.h"
#include "graph/SymbolicDims.h"
#include "graph/Match.h"

namespace strata::graph {

using namespace mlir;

namespace {
bool closeTo(double got, double want) { return std::abs(got - want) <= 1e-5 * std::abs(want) + 1e-5; }
}  // namespace

namespace {
// A constant, or a constant only broadcast, reshaped or cast (TorchScript
// expands inv_freq to the batch: Expand(inv_freq, [B, -1, 1])).
bool constantData(Value v) {
  for (int steps = 0; steps < 8 && v; ++steps) {
    Operation* op = v.getDefiningOp();
    if (isa_and_nonnull<ConstantOp>(op)) return true;
    if (!op || !(isOp(op, "Expand") || isOp(op, "Cast") || isOp(op, "Reshape") || isOp(op, "Unsqueeze"))) return false;
    v = op->getOperand(0);
  }
  return false;
}
}  // namespace

Value positionsOf(Value e) {
  Value v = e;
  for (int steps = 0; steps < 16 && v; ++steps) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && isa<IntegerType>(t.getElementType()) && t.getRank() <= 2) return v;
    Operation* op = v.getDefiningOp();
    if (!op) return nullptr;
    if (isOp(op, "Concat") && op->getNumOperands() == 2 && op->getOperand(0) == op->getOperand(1)) v = op->getOperand(0);
    else if (isOp(op, "Cast") || isOp(op, "Transpose") || isOp(op, "Unsqueeze") || isOp(op, "Reshape") || isOp(op, "Expand"))
      v = op->getOperand(0);
    else if (isOp(op, "Mul") || isOp(op, "MatMul")) {
      bool c0 = constantData(op->getOperand(0)), c1 = constantData(op->getOperand(1));
      if (c0 == c1) return nullptr;
      v = op->getOperand(c0 ? 1 : 0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

std::optional<double> thetaOf(Value e, Value p, int64_t D) {
  auto pt = dyn_cast<RankedTensorType>(p.getType());
  if (!pt) return std::nullopt;
  ops::Shape shape;
  for (int64_t i = 0; i < pt.getRank(); ++i) shape.push_back(pt.isDynamicDim(i) ? (i == 0 && pt.getRank() == 2 ? 2 : 5) : pt.getDimSize(i));
  ops::Tensor probe(dtypeFor(pt.getElementType()) == ops::DType::I32 ? ops::DType::I32 : ops::DType::I64, shape);
  const int64_t values[] = {1, 0, 7, 300, 2, 41, 5, 123, 3, 64};
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < probe.numel(); ++i) pos.push_back(values[i % 10]);
  for (int64_t i = 0; i < probe.numel(); ++i) {
    if (probe.dtype() == ops::DType::I32) probe.mut<int32_t>()[i] = (int32_t)pos[i];
    else probe.mut<int64_t>()[i] = pos[i];
  }
  Evaluator ev;
  ev.setValue(p, probe);
  auto et = ev.eval(e);
  int64_t half = D / 2;
  if (!et || et->dtype() != ops::DType::F32 || pos.empty() || half == 0) return std::nullopt;
  int64_t width = et->numel() / probe.numel();  // D or D/2 angles per position
  if ((width != D && width != half) || et->numel() != probe.numel() * width) return std::nullopt;
  const float* a = et->data<float>();
  double theta = std::pow((double)a[1], -(double)half);  // position 1 first: a[1] = theta^(-2/D)
  if (!(theta > 1.0) || !std::isfinite(theta)) return std::nullopt;
  // Exports store f32 inv_freq; bases are integers (1e4, 5e5, 1e6) in practice.
  if (std::abs(theta - std::round(theta)) <= 1e-4 * theta) theta = std::round(theta);
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t i = 0; i < width; ++i)
      if (!closeTo(a[t * width + i], (double)pos[t] * std::pow(theta, -2.0 * (double)(i % half) / (double)D)))
        return std::nullopt;
  return theta;
}

std::optional<double> thetaOfPositionTable(GraphOp g, Value e, int64_t D) {
  Evaluator ev;
  setProbeInputs(ev, g, ProbeDims{1, 6, 0}, -1);
  auto et = ev.eval(e);
  int64_t half = D / 2;
  if (!et || et->dtype() != ops::DType::F32 || et->rank() != 2 || et->dim(1) != half || et->dim(0) < 2 || half < 2) return std::nullopt;
  const float* a = et->data<float>();
  double theta = std::pow((double)a[half + 1], -(double)half);  // row 1, i = 1: theta^(-2/D)
  if (!(theta > 1.0) || !std::isfinite(theta)) return std::nullopt;
  if (std::abs(theta - std::round(theta)) <= 1e-4 * theta) theta = std::round(theta);
  for (int64_t r = 0; r < et->dim(0); ++r)
    for (int64_t i = 0; i < half; ++i)
      if (!closeTo(a[r * half + i], (double)r * std::pow(theta, -2.0 * (double)i / (double)D))) return std::nullopt;
  return theta;
}


}  // namespace strata::graph
