// graph-form-paged-attention: see Passes.td. Every Attention must convert, or
// the pass fails naming the layer and the reason: a graph that is half paged
// cannot run on the paged runtime, and nothing may be silently left behind.
#include <nlohmann/json.hpp>

#include "graph/Evaluate.h"
#include "graph/Match.h"
#include "graph/Passes.h"
#include "graph/SymbolicDims.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHFORMPAGEDATTENTION
#include "graph/Passes.h.inc"

using namespace mlir;

namespace {

// y [B, S, H * D] -> Reshape [B, S, H, D] -> Transpose [B, H, S, D] (-> Rope).
struct HeadSplit {
  Value y, positions;
  double theta = 0;
  int64_t heads = 0, headDim = 0, rotaryDim = 0;  // rotaryDim 0: all of headDim
};

std::optional<HeadSplit> matchHeadSplit(Value v) {
  HeadSplit h;
  if (Operation* rope = defOf(v, "Rope")) {
    h.positions = rope->getOperand(1);
    h.theta = rope->getAttrOfType<FloatAttr>("theta").getValueAsDouble();
    h.rotaryDim = intAttrOf(rope, "rotary_dim").value_or(0);
    v = rope->getOperand(0);
  }
  Operation* tr = defOf(v, "Transpose");
  auto perm = tr ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  if (!perm || perm.asArrayRef() != ArrayRef<int64_t>{0, 2, 1, 3}) return std::nullopt;
  Operation* rs = defOf(tr->getOperand(0), "Reshape");
  if (!rs) return std::nullopt;
  h.y = rs->getOperand(0);
  auto H = staticDim(rs->getResult(0), 2), D = staticDim(rs->getResult(0), 3), F = staticDim(h.y, -1);
  if (rankOf(h.y) != 3 || rankOf(rs->getResult(0)) != 4 || !H || !D || !F || *F != *H * *D) return std::nullopt;
  h.heads = *H, h.headDim = *D;
  return h;
}

// The one user of `v` that reads its values; users that read only its
// dims (MakeShape, Shape: TorchScript sizes the merge from the transposed
// output itself) do not count. nullptr unless there is exactly one.
Operation* onlyValueUser(Value v) {
  Operation* found = nullptr;
  for (Operation* u : v.getUsers()) {
    if (isOp(u, "MakeShape") || isOp(u, "Shape")) continue;
    if (found && found != u) return nullptr;
    found = u;
  }
  return found;
}

// Attention output [B, H, S, D] -> Transpose [B, S, H, D] -> Reshape [B, S, H * D].
Value matchHeadMerge(Operation* att) {
  Operation* tr = onlyValueUser(att->getResult(0));
  auto perm = isOp(tr, "Transpose") ? tr->getAttrOfType<DenseI64ArrayAttr>("perm") : DenseI64ArrayAttr();
  if (!perm || perm.asArrayRef() != ArrayRef<int64_t>{0, 2, 1, 3}) return nullptr;
  Operation* rs = onlyValueUser(tr->getResult(0));
  if (!isOp(rs, "Reshape") || rankOf(rs->getResult(0)) != 3) return nullptr;
  return rs->getResult(0);
}

// True when `pos` evaluates to 0..S-1 on every row (positions a graph
// without position_ids derives from its input length).
bool isArangeOfSequence(GraphOp g, Value pos) {
  for (int64_t s : {5, 1}) {
    Evaluator ev;
    setProbeInputs(ev, g, ProbeDims{1, s, 0}, -1);
    auto t = ev.eval(pos);
    if (!t || t->numel() % s || t->numel() == 0) return false;
    auto v = t->toI64Vector();
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != (int64_t)(i % s)) return false;
  }
  return true;
}

struct Plan {
  Operation* att;
  HeadSplit q, k, v;
  Value out, pastK, pastV, kFull, vFull;
};

struct GraphFormPagedAttention : impl::GraphFormPagedAttentionBase<GraphFormPagedAttention> {
  void runOnOperation() override {
    GraphOp g = getOperation();
    Block& body = g.getBody().front();
    MLIRContext* ctx = &getContext();
    SmallVector<Plan> plans;
    Value positions;
    for (Operation& op : body.without_terminator()) {
      if (!isOp(&op, "Attention")) continue;
      auto bad = [&](const std::string& why) {
        op.emitError() << "layer " << plans.size() << ": attention cannot be paged: " << why;
        signalPassFailure();
      };
      Plan p{&op};
      if (intAttrOf(&op, "causal").value_or(0) != 1) return bad("it is not causal");
      p.kFull = op.getOperand(1), p.vFull = op.getOperand(2);
      Value kNew = p.kFull, vNew = p.vFull;
      for (auto [full, past, fresh] : {std::tie(p.kFull, p.pastK, kNew), std::tie(p.vFull, p.pastV, vNew)}) {
        Operation* cat = defOf(full, "Concat");
        if (cat && cat->getNumOperands() == 2 && intAttrOf(cat, "axis").value_or(0) == 2 &&
            inputName(cat->getOperand(0)).rfind("past_key_values.", 0) == 0)
          past = cat->getOperand(0), fresh = cat->getOperand(1);
      }
      auto q = matchHeadSplit(op.getOperand(0)), k = matchHeadSplit(kNew), v = matchHeadSplit(vNew);
      if (!q || !k || !v) return bad("q/k/v are not head splits (Reshape + Transpose) of projections");
      if (v->positions || q->positions != k->positions || q->theta != k->theta || q->rotaryDim != k->rotaryDim)
        return bad("rope is not applied to q and k alike");
      if (q->headDim != k->headDim || k->heads != v->heads || k->headDim != v->headDim || q->heads % k->heads)
        return bad("head shapes of q/k/v disagree");
      p.q = *q, p.k = *k, p.v = *v;
      p.out = matchHeadMerge(&op);
      if (!p.out) return bad("its output is not merged back to [B, S, H * D] (Transpose + Reshape)");
      if (q->positions) {
        if (!positions) positions = q->positions;
        // Patterns that derive positions per layer (GroupQueryAttention's
        // rotary) give equal values, not one value: both must be 0..S-1.
        if (positions != q->positions &&
            (inputName(positions) == "position_ids" || !isArangeOfSequence(g, q->positions)))
          return bad("layers use different positions");
      }
      plans.push_back(p);
    }
    if (plans.empty()) return;

    // New inputs.
    SmallVector<std::string> names;
    for (Attribute a : g.getInputNames()) names.push_back(cast<StringAttr>(a).str());
    auto findInput = [&](StringRef n) -> Value {
      for (BlockArgument a : body.getArguments())
        if (names[a.getArgNumber()] == n) return a;
      return nullptr;
    };
    Type i64 = IntegerType::get(ctx, 64);
    auto addInput = [&](const std::string& n, std::vector<ops::Dim> dims, Type elt) -> Value {
      names.push_back(n);
      return body.addArgument(makeTensorType(ctx, dims, elt), g.getLoc());
    };
    // The paged form runs every step as one [1, T] row of tokens: a batch
    // of 1 in the id inputs lets inference see the same [1, T, ...] shapes
    // where the export baked its example's batch into a reshape (dynamo
    // writes [1, -1, N] after some projections, [B, S, N] after others).
    for (BlockArgument a : body.getArguments()) {
      const std::string& n = names[a.getArgNumber()];
      auto d = getDims(a.getType());
      if ((n == "input_ids" || n == "position_ids") && d && d->size() == 2)
        a.setType(makeTensorType(ctx, {{1, ""}, (*d)[1]}, cast<ShapedType>(a.getType()).getElementType()));
    }
    Value posIds = findInput("position_ids");
    // Learned position embeddings (GPT-2's wpe): rows of a weight table
    // gathered at 0..S-1, which in the paged form are the tokens' positions.
    SmallVector<Operation*> learned;
    for (Operation& op : body.without_terminator())
      if (isOp(&op, "Gather") && intAttrOf(&op, "axis").value_or(0) == 0 && isWeight(op.getOperand(0), 2) &&
          (!posIds || op.getOperand(1) != posIds) && isArangeOfSequence(g, op.getOperand(1)))
        learned.push_back(&op);
    if ((positions && positions != posIds) || (!posIds && !learned.empty())) {
      if (positions && !isArangeOfSequence(g, positions)) {
        plans.front().att->emitError() << "rope positions are neither position_ids nor 0..sequence-1";
        return signalPassFailure();
      }
      Value ids = findInput("input_ids");
      if (!ids) { g.emitError() << "no input_ids input"; return signalPassFailure(); }
      posIds = addInput("position_ids", *getDims(ids.getType()), i64);
    }
    for (Operation* gather : learned) gather->setOperand(1, posIds);
    Value seqStarts = addInput("seq_starts", {{-1, "num_seqs_plus_1"}}, i64);
    Value contextLens = addInput("context_lens", {{-1, "num_seqs"}}, i64);
    Value blockTables = addInput("block_tables", {{-1, "num_seqs"}, {-1, "max_blocks"}}, i64);
    Value slotMapping = addInput("slot_mapping", {{-1, "tokens"}}, i64);
    Value logitsIndices = addInput("logits_indices", {{-1, "num_seqs"}}, i64);

    OpBuilder b(ctx);
    DenseSet<Value> presents;
    for (auto [layer, p] : llvm::enumerate(plans)) {
      Type elt = cast<ShapedType>(p.k.y.getType()).getElementType();
      Value cache = addInput("kv_cache." + std::to_string(layer),
                             {{-1, "num_blocks"}, {2, ""}, {p.k.heads, ""}, {-1, "block_size"}, {p.k.headDim, ""}}, elt);
      b.setInsertionPoint(p.att);
      Location loc = p.att->getLoc();
      auto rope = [&](const HeadSplit& h) -> Value {
        if (!h.positions) return h.y;
        SmallVector<NamedAttribute> a{{b.getStringAttr("head_dim"), b.getI64IntegerAttr(h.headDim)},
                                      {b.getStringAttr("theta"), b.getF64FloatAttr(h.theta)}};
        if (h.rotaryDim && h.rotaryDim != h.headDim)
          a.push_back({b.getStringAttr("rotary_dim"), b.getI64IntegerAttr(h.rotaryDim)});
        return createNode(b, loc, "region.rope", {h.y.getType()}, {h.y, posIds}, a)->getResult(0);
      };
      Value q = rope(p.q), k = rope(p.k);
      SmallVector<NamedAttribute> layerAttr{{b.getStringAttr("layer"), b.getI64IntegerAttr((int64_t)layer)}};
      Value written = createNode(b, loc, "region.kv_write", {cache.getType()}, {cache, k, p.v.y, slotMapping}, layerAttr)
                          ->getResult(0);
      SmallVector<NamedAttribute> a{{b.getStringAttr("heads"), b.getI64IntegerAttr(p.q.heads)},
                                    {b.getStringAttr("kv_heads"), b.getI64IntegerAttr(p.k.heads)},
                                    {b.getStringAttr("head_dim"), b.getI64IntegerAttr(p.q.headDim)},
                                    {b.getStringAttr("scale"), p.att->getAttr("scale")},
                                    {b.getStringAttr("layer"), b.getI64IntegerAttr((int64_t)layer)}};
      Value o = createNode(b, loc, "region.paged_attention", {p.out.getType()},
                           {q, written, blockTables, seqStarts, contextLens}, a)->getResult(0);
      p.out.replaceAllUsesWith(o);
      presents.insert(p.kFull);
      presents.insert(p.vFull);
    }

    // Outputs: present K/V go (the cache owns them); logits only at logits_indices.
    auto out = cast<OutputOp>(body.getTerminator());
    SmallVector<Value> keepValues;
    SmallVector<Attribute> keepNames;
    for (auto [v, n] : llvm::zip(out.getValues(), out.getNames())) {
      if (presents.contains(v)) continue;
      keepValues.push_back(v);
      keepNames.push_back(n);
      if (cast<StringAttr>(n).str() != "logits") continue;
      Operation* head = v.getDefiningOp();
      if (!head || !(isOp(head, "MatMul") || isOp(head, "Linear")) || rankOf(head->getOperand(0)) != 3) {
        out.emitError() << "logits are not a projection of [B, T, H] hidden states";
        return signalPassFailure();
      }
      Value h = head->getOperand(0);
      b.setInsertionPoint(head);
      auto hd = *getDims(h.getType());
      hd[1] = {-1, "num_seqs"};
      Value rows = createNode(b, head->getLoc(), "Gather",
                              {makeTensorType(ctx, hd, cast<ShapedType>(h.getType()).getElementType())},
                              {h, logitsIndices}, {{b.getStringAttr("axis"), b.getI64IntegerAttr(1)}})->getResult(0);
      head->setOperand(0, rows);
      if (auto ld = getDims(head->getResult(0).getType())) {
        (*ld)[1] = {-1, "num_seqs"};
        head->getResult(0).setType(makeTensorType(ctx, *ld, cast<ShapedType>(h.getType()).getElementType()));
      }
    }
    b.setInsertionPoint(out);
    OutputOp::create(b, out.getLoc(), keepValues, b.getArrayAttr(keepNames));
    out.erase();

    // Dead code, then the inputs only the old attention read.
    for (Operation* op = body.getTerminator()->getPrevNode(); op;) {
      Operation* prev = op->getPrevNode();
      if (isOpTriviallyDead(op)) op->erase();
      op = prev;
    }
    for (int i = (int)body.getNumArguments() - 1; i >= 0; --i) {
      const std::string& n = names[i];
      bool replaced = n == "attention_mask" || n.rfind("past_key_values.", 0) == 0;
      if (replaced && body.getArgument(i).use_empty()) {
        body.eraseArgument(i);
        names.erase(names.begin() + i);
      }
    }
    SmallVector<StringRef> refs(names.begin(), names.end());
    g.setInputNamesAttr(b.getStrArrayAttr(refs));
    nlohmann::json meta = nlohmann::json::parse(g.getMeta().str(), nullptr, false);
    if (meta.is_discarded()) meta = nlohmann::json::object();
    meta["paged"] = {{"layers", plans.size()},
                     {"heads", plans[0].q.heads},
                     {"kv_heads", plans[0].k.heads},
                     {"head_dim", plans[0].q.headDim}};
    g.setMetaAttr(b.getStringAttr(meta.dump()));
  }
};

}  // namespace

}  // namespace strata::graph
