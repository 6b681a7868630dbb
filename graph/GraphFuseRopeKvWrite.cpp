// graph-fuse-rope-kv-write: the RoPE of q, the RoPE of k and the paged KV
// write of a layer -> one region.rope_kv_write(q, k, v, positions, cache,
// slot_mapping) -> (q', cache'). Rotated k is only ever written into the
// cache, so it never exists as a value; a target whose kernel does all
// three in one launch asks for it (graph::RegionOptions::ropeKvWrite:
// CUDA), so a decode step saves a launch per layer and k's round trip.
// Run after graph-form-paged-attention and graph-form-regions: q and k
// are the q / k / v region's results by then.
#include "graph/Match.h"
#include "graph/Passes.h"
#include "graph/Patterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHFUSEROPEKVWRITE
#include "graph/Passes.h.inc"

using namespace mlir;

namespace {

// The value `v` is available at `at` (a block argument, or defined by an
// op before it in the same block).
bool availableAt(Value v, Operation* at) {
  Operation* def = v.getDefiningOp();
  return !def || (def->getBlock() == at->getBlock() && def->isBeforeInBlock(at));
}

struct FuseRopeKvWrite : RewritePattern {
  explicit FuseRopeKvWrite(MLIRContext* ctx) : RewritePattern("graph.region.kv_write", 1, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, PatternRewriter& rw) const override {
    if (op->getNumOperands() != 4 || op->getNumResults() != 1) return rw.notifyMatchFailure(op, "not a kv_write");
    Value cache = op->getOperand(0), kRot = op->getOperand(1), v = op->getOperand(2), slots = op->getOperand(3);
    Operation* kRope = kRot.getDefiningOp();
    if (!kRope || kRope->getName().getStringRef() != "graph.region.rope" || !kRot.hasOneUse())
      return rw.notifyMatchFailure(op, "k is not a RoPE region read only here");
    // The attention that reads this cache names the rotated q.
    Operation* qRope = nullptr;
    for (Operation* user : op->getResult(0).getUsers()) {
      if (user->getName().getStringRef() != "graph.region.paged_attention" || user->getNumOperands() < 2 ||
          user->getOperand(1) != op->getResult(0))
        continue;
      Operation* def = user->getOperand(0).getDefiningOp();
      if (def && def->getName().getStringRef() == "graph.region.rope") qRope = def;
    }
    if (!qRope) return rw.notifyMatchFailure(op, "no paged attention reads a rotated q with this cache");
    if (qRope->getOperand(1) != kRope->getOperand(1) || qRope->getAttrDictionary() != kRope->getAttrDictionary())
      return rw.notifyMatchFailure(op, "q and k are rotated at other positions or with other attributes");
    Value q = qRope->getOperand(0), k = kRope->getOperand(0), positions = qRope->getOperand(1);
    for (Value in : {q, k, v, positions, cache, slots})
      if (!availableAt(in, op)) return rw.notifyMatchFailure(op, "an operand is defined after the KV write");
    for (Operation* user : qRope->getResult(0).getUsers())
      if (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user))
        return rw.notifyMatchFailure(op, "rotated q is read before the KV write");
    SmallVector<NamedAttribute> attrs(qRope->getAttrs().begin(), qRope->getAttrs().end());
    if (Attribute layer = op->getAttr("layer")) attrs.push_back({rw.getStringAttr("layer"), layer});
    rw.setInsertionPoint(op);
    Operation* fused = createNode(rw, op->getLoc(), "region.rope_kv_write",
                                  {qRope->getResult(0).getType(), op->getResult(0).getType()},
                                  {q, k, v, positions, cache, slots}, attrs);
    rw.replaceAllUsesWith(qRope->getResult(0), fused->getResult(0));
    rw.replaceOp(op, fused->getResult(1));
    rw.eraseOp(kRope);
    rw.eraseOp(qRope);
    return success();
  }
};

struct GraphFuseRopeKvWrite : impl::GraphFuseRopeKvWriteBase<GraphFuseRopeKvWrite> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseRopeKvWritePatterns(patterns);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);  // keep unused inputs
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config))) return signalPassFailure();
  }
};

}  // namespace

void populateFuseRopeKvWritePatterns(RewritePatternSet& patterns) {
  patterns.add<FuseRopeKvWrite>(patterns.getContext());
}

}  // namespace strata::graph
