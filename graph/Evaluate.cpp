#include "graph/Evaluate.h"

#include "graph/Match.h"
#include "graph/SymbolicDims.h"
#include "graph/Translate.h"
#include "ops/error.h"
#include "ops/kernel_table.h"

namespace strata::graph {

using namespace mlir;

std::optional<ops::Tensor> Evaluator::eval(Value v) {
  if (auto it = memo_.find(v); it != memo_.end()) return it->second;
  std::optional<ops::Tensor> r;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto it = inputs_.find(inputName(arg));
    if (it != inputs_.end()) r = it->second;
  } else if (Operation* op = v.getDefiningOp()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
        try { r = tensorFor(dense); } catch (const Error&) {}
      }
    } else if (!isa<WeightOp, NoneOp>(op) && op->getDialect() && op->getDialect()->getNamespace() == "graph") {
      ops::NodeDef n;
      n.op = op->getName().stripDialect().str();
      for (NamedAttribute a : op->getAttrs()) n.attrs[a.getName().str()] = jsonFor(a.getValue());
      const ops::KernelFn* k = ops::findKernel(n.op);
      std::vector<ops::Tensor> args;
      bool ok = k != nullptr;
      for (Value in : op->getOperands()) {
        if (!ok) break;
        if (isa<NoneType>(in.getType())) { args.emplace_back(); continue; }
        auto t = eval(in);
        ok = t.has_value();
        if (ok) args.push_back(*t);
      }
      if (ok) {
        try {
          auto outs = (*k)(n, args);
          for (auto [res, t] : llvm::zip(op->getResults(), outs)) memo_[res] = t;
          if (auto it = memo_.find(v); it != memo_.end()) r = it->second;
        } catch (const Error&) {
        }
      }
    }
  }
  if (r) memo_[v] = *r;
  return r;
}

int64_t setProbeInputs(Evaluator& e, GraphOp g, const ProbeDims& d, int64_t padRow, ops::Tensor* maskOut) {
  Block& body = g.getBody().front();
  int64_t B = d.batch;
  // A static batch dim anywhere in the LLM inputs fixes B (model_dynamo: [1, sequence]).
  for (BlockArgument a : body.getArguments())
    if (inputName(a) == "input_ids")
      if (auto b = staticDim(a, 0)) B = *b;
  for (BlockArgument a : body.getArguments()) {
    std::string name = inputName(a);
    auto dims = getDims(a.getType());
    if (!dims) continue;
    auto shapeWith = [&](std::vector<int64_t> want) {
      ops::Shape s;
      for (size_t i = 0; i < dims->size(); ++i) s.push_back((*dims)[i].isStatic() ? (*dims)[i].value : want.at(i));
      return s;
    };
    if (name == "input_ids") {
      e.setInput(name, ops::Tensor(ops::DType::I64, shapeWith({B, d.seq})));
    } else if (name == "position_ids") {
      ops::Tensor t(ops::DType::I64, shapeWith({B, d.seq}));
      for (int64_t i = 0; i < t.numel(); ++i) t.mut<int64_t>()[i] = d.past + i % d.seq;
      e.setInput(name, t);
    } else if (name == "attention_mask") {
      ops::Tensor t(ops::DType::I64, shapeWith({B, d.past + d.seq}));
      for (int64_t i = 0; i < t.numel(); ++i) t.mut<int64_t>()[i] = 1;
      if (padRow >= 0 && padRow < B) t.mut<int64_t>()[padRow * t.dim(1)] = 0;
      if (maskOut) *maskOut = t;
      e.setInput(name, t);
    } else if (name.rfind("past_key_values.", 0) == 0 && dims->size() == 4) {
      e.setInput(name, ops::Tensor(dtypeFor(cast<ShapedType>(a.getType()).getElementType()), shapeWith({B, 0, d.past, 0})));
    }
  }
  return B;
}

}  // namespace strata::graph
