// Leftover elementwise / reduction chains -> region.elementwise: each
// connected group of float-valued elementwise ops (and last-axis-or-any
// reductions, softmax) becomes one region whose `body` lists the steps in
// order. Inputs are numbered 0..n-1 (the region's operands), step i's result
// is n + i; `outputs` names the values read outside. Runs after every other
// region kind, so what it groups is what those did not take.
//
// A group is formed only when it is convex: no outside op both reads a
// group value and feeds the group (the region would depend on itself). Such
// groups stay as single ops and are reported as fallback.
#include <algorithm>

#include "graph/Match.h"
#include "graph/Patterns.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<ShapedType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

bool eligible(Operation* op) {
  static const llvm::StringSet<> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Neg", "Abs", "Sqrt",
                                         "Reciprocal", "Exp", "Log", "Sigmoid", "Silu", "Tanh", "Erf", "Relu",
                                         "Where", "Cast", "Softmax", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};
  if (op->getDialect() == nullptr || op->getName().getDialectNamespace() != "graph" || op->getNumResults() != 1) return false;
  return ops.contains(op->getName().stripDialect()) && isFloatTensor(op->getResult(0));
}

struct FormElementwiseRegion : RewritePattern {
  explicit FormElementwiseRegion(MLIRContext* ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* root, PatternRewriter& rw) const override {
    if (!eligible(root)) return failure();
    Block* block = root->getBlock();
    // The connected group through direct def-use edges between eligible ops.
    llvm::SetVector<Operation*> group;
    SmallVector<Operation*> work{root};
    while (!work.empty()) {
      Operation* op = work.pop_back_val();
      if (op->getBlock() != block || !eligible(op) || !group.insert(op)) continue;
      for (Value in : op->getOperands())
        if (Operation* d = in.getDefiningOp()) work.push_back(d);
      for (Operation* u : op->getResult(0).getUsers()) work.push_back(u);
    }
    SmallVector<Operation*> steps(group.begin(), group.end());
    llvm::sort(steps, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    Operation* last = steps.back();
    // Convexity: every outside user of a group value comes after the last step.
    SmallVector<Value> outs;
    for (Operation* op : steps) {
      bool outside = false;
      for (OpOperand& use : op->getResult(0).getUses()) {
        Operation* u = use.getOwner();
        if (group.contains(u)) continue;
        if (u->getBlock() == block && u->isBeforeInBlock(last))
          return rw.notifyMatchFailure(root, "an outside op sits between the group's steps");
        outside = true;
      }
      if (outside) outs.push_back(op->getResult(0));
    }
    // Number the values: operands first, then the steps.
    llvm::DenseMap<Value, int64_t> index;
    SmallVector<Value> inputs;
    for (Operation* op : steps)
      for (Value in : op->getOperands())
        if (!index.count(in) && !(in.getDefiningOp() && group.contains(in.getDefiningOp()))) {
          index[in] = (int64_t)inputs.size();
          inputs.push_back(in);
        }
    SmallVector<Attribute> body;
    for (auto [i, op] : llvm::enumerate(steps)) index[op->getResult(0)] = (int64_t)(inputs.size() + i);
    for (Operation* op : steps) {
      SmallVector<int64_t> in;
      for (Value v : op->getOperands()) in.push_back(index.lookup(v));
      body.push_back(rw.getDictionaryAttr({rw.getNamedAttr("op", rw.getStringAttr(op->getName().stripDialect())),
                                           rw.getNamedAttr("inputs", rw.getDenseI64ArrayAttr(in)),
                                           rw.getNamedAttr("attrs", op->getAttrDictionary())}));
    }
    SmallVector<int64_t> outIdx;
    SmallVector<Type> outTypes;
    for (Value v : outs) outIdx.push_back(index.lookup(v)), outTypes.push_back(v.getType());
    rw.setInsertionPointAfter(last);
    Operation* region = createNode(rw, root->getLoc(), "region.elementwise", outTypes, inputs,
                                   {rw.getNamedAttr("body", rw.getArrayAttr(body)),
                                    rw.getNamedAttr("outputs", rw.getDenseI64ArrayAttr(outIdx))});
    for (auto [v, r] : llvm::zip(outs, region->getResults())) rw.replaceAllUsesWith(v, r);
    for (Operation* op : llvm::reverse(steps)) rw.eraseOp(op);
    return success();
  }
};

}  // namespace

void populateFormElementwisePatterns(RewritePatternSet& patterns) {
  patterns.add<FormElementwiseRegion>(patterns.getContext());
}

}  // namespace strata::graph
