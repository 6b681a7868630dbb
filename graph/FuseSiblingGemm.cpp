// Plain region.gemm ops that read the same x with the same layout (q, k and v
// projections) -> one region.gemm with one result per weight: x is read once
// and one kernel launch does all of them. The weights stay separate operands
// (no concatenated copy of the checkpoint).
#include "graph/GemmParts.h"
#include "graph/Match.h"
#include "graph/Patterns.h"

namespace strata::graph {

using namespace mlir;

namespace {

bool compatible(const GemmParts& a, const GemmParts& b) {
  return a.plain() && b.plain() && a.x == b.x && a.layout == b.layout && a.biases.empty() == b.biases.empty();
}

struct FuseSiblingGemm : RewritePattern {
  explicit FuseSiblingGemm(MLIRContext* ctx) : RewritePattern("graph.region.gemm", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    auto first = readGemm(op);
    if (!first || !first->plain()) return failure();
    // Siblings in graph order; only the first one fires, so the result is deterministic.
    SmallVector<Operation*> group;
    for (Operation* user : first->x.getUsers()) {
      auto g = readGemm(user);
      if (g && g->x == first->x && compatible(*first, *g) && user->getBlock() == op->getBlock()) group.push_back(user);
    }
    if (group.size() < 2) return rw.notifyMatchFailure(op, "no sibling");
    llvm::sort(group, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    if (group.front() != op) return rw.notifyMatchFailure(op, "not the first sibling");
    GemmParts fused = *first;
    fused.weights.clear();
    fused.biases.clear();
    SmallVector<Type> types;
    for (Operation* s : group) {
      auto g = readGemm(s);
      fused.weights.append(g->weights.begin(), g->weights.end());
      fused.biases.append(g->biases.begin(), g->biases.end());
      types.append(s->getResultTypes().begin(), s->getResultTypes().end());
    }
    rw.setInsertionPoint(op);
    Operation* n = buildGemm(rw, op->getLoc(), fused, types);
    unsigned r = 0;
    for (Operation* s : group) {
      SmallVector<Value> repl;
      for (unsigned i = 0; i < s->getNumResults(); ++i) repl.push_back(n->getResult(r++));
      rw.replaceOp(s, repl);
    }
    return success();
  }
};

}  // namespace

void populateFuseSiblingGemmPatterns(RewritePatternSet& patterns) { patterns.add<FuseSiblingGemm>(patterns.getContext()); }

}  // namespace strata::graph
