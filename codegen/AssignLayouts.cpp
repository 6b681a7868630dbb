//===- AssignLayouts.cpp - workload-aware root layout + propagation ------===//
#include "codegen/Passes.h"
#include "codegen/Workload.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace strata::tile {

#define GEN_PASS_DEF_ASSIGNLAYOUTS
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

Attribute blocked(MLIRContext* ctx, const WarpLayout& l) {
  return BlockedEncodingAttr::get(ctx, l.sizePerWarp, l.warpsPerCTA, l.order);
}

// Ops whose tile operands and results all share one layout.
bool isSameLayoutOp(Operation* op) {
  if (isa<SiluOp, ConvertOp, MaskOp, LoadOp, StoreOp, AdvanceOp>(op)) return true;
  Dialect* d = op->getDialect();
  return d && (isa<arith::ArithDialect, math::MathDialect>(d)) && op->getNumResults() == 1 &&
         isa<RankedTensorType>(op->getResult(0).getType());
}

// Assigns encodings by a worklist: each value's encoding is set once; a
// second, different one is a conflict (reported with both).
class Propagator {
 public:
  explicit Propagator(MLIRContext* ctx) : ctx(ctx) {}

  LogicalResult set(Value v, Attribute e, Operation* why) {
    if (!isTileValue(v) || !e) return success();
    auto [it, fresh] = enc.try_emplace(v, e);
    if (fresh) {
      worklist.push_back(v);
      return success();
    }
    if (it->second == e) return success();
    return why->emitError() << "conflicting layouts for " << tileTypeOf(v) << ": " << it->second << " and " << e;
  }

  // Strong rules first (ops whose operands and results must agree); a
  // broadcast only passes a layout on when nothing else decides its other
  // side, and may join two different but equivalent layouts
  // (acc * broadcast(alpha) in FlashAttention-2: alpha is a slice of the
  // q k^T layout, acc has the P V layout; both put rows on the same warps).
  LogicalResult run(func::FuncOp f) {
    for (;;) {
      if (failed(drain())) return failure();
      // One broadcast side at a time, then the strong rules again.
      BroadcastOp next;
      f.walk([&](BroadcastOp br) {
        if (!next && (get(br.getSrc()) == nullptr) != (get(br.getResult()) == nullptr)) next = br;
      });
      if (!next) return success();
      Attribute s = get(next.getSrc()), r = get(next.getResult());
      if (failed(s ? set(next.getResult(), s, next) : set(next.getSrc(), r, next))) return failure();
    }
  }

  Attribute get(Value v) const { return enc.lookup(v); }

 private:
  LogicalResult drain() {
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (Operation* def = v.getDefiningOp())
        if (failed(visit(def))) return failure();
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (failed(visit(arg.getOwner()->getParentOp()))) return failure();
      for (Operation* user : v.getUsers()) {
        if (failed(visit(user))) return failure();
        if (isa<scf::YieldOp>(user) && failed(visit(user->getParentOp()))) return failure();
      }
    }
    return success();
  }


  LogicalResult visit(Operation* op) {
    if (auto dot = dyn_cast<DotOp>(op)) return visitDot(dot);
    if (auto r = dyn_cast<ReduceOp>(op)) {
      if (Attribute s = get(r.getSrc())) {
        Attribute res = r.getAxis() ? SliceEncodingAttr::get(ctx, *r.getAxis(), s) : s;
        return set(r.getResult(), res, op);
      }
      if (Attribute res = get(r.getResult())) {
        if (!r.getAxis()) return set(r.getSrc(), res, op);
        if (auto s = dyn_cast<SliceEncodingAttr>(res)) return set(r.getSrc(), s.getParent(), op);
      }
      return success();
    }
    if (auto d = dyn_cast<SegmentDotOp>(op)) return visitSegmentDot(d);
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      Value from = get(r.getSrc()) ? r.getSrc() : r.getResult(), to = from == r.getSrc() ? r.getResult() : r.getSrc();
      Attribute e = get(from);
      if (!e) return success();
      Attribute other = runsLike(r, from, e, to);
      return other ? set(to, other, op) : failure();
    }
    if (auto e = dyn_cast<ExpandDimsOp>(op)) {
      if (auto s = dyn_cast_or_null<SliceEncodingAttr>(get(e.getSrc())); s && s.getDim() == e.getAxis())
        return set(e.getResult(), s.getParent(), op);
      if (Attribute r = get(e.getResult())) return set(e.getSrc(), SliceEncodingAttr::get(ctx, e.getAxis(), r), op);
      return success();
    }
    if (auto f = dyn_cast<scf::ForOp>(op)) {
      for (auto [init, arg, res, yielded] : llvm::zip(f.getInitArgs(), f.getRegionIterArgs(), f.getResults(),
                                                      f.getBody()->getTerminator()->getOperands())) {
        std::array<Value, 4> vals{init, arg, res, yielded};
        Attribute e;
        for (Value v : vals) e = e ? e : get(v);
        for (Value v : vals)
          if (failed(set(v, e, op))) return failure();
      }
      return success();
    }
    // A value an scf.if yields has one layout in both branches and after.
    if (auto i = dyn_cast<scf::IfOp>(op)) {
      for (auto [k, res] : llvm::enumerate(i.getResults())) {
        SmallVector<Value, 3> vals{res, i.thenYield().getOperand(k)};
        if (!i.getElseRegion().empty()) vals.push_back(i.elseYield().getOperand(k));
        Attribute e;
        for (Value v : vals) e = e ? e : get(v);
        for (Value v : vals)
          if (failed(set(v, e, op))) return failure();
      }
      return success();
    }
    if (isSameLayoutOp(op)) {
      Attribute e;
      for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
        if (isTileValue(v) && !e) e = get(v);
      for (Value v : op->getOperands())
        if (failed(set(v, e, op))) return failure();
      for (Value v : op->getResults())
        if (failed(set(v, e, op))) return failure();
    }
    return success();
  }

  // The layout of `to` (a reshape's other side) that gives each warp the
  // same run of the row-major order as `enc` gives it of `from`: a 2-D
  // tile's runs are whole rows over warps, or a single row's columns; null
  // (reported) when `enc` splits `from` otherwise or `to` cannot take the
  // runs.
  Attribute runsLike(ReshapeOp r, Value from, Attribute enc, Value to) {
    auto fs = tileTypeOf(from).getShape(), ts = tileTypeOf(to).getShape();
    auto l = equivalentBlocked(enc, fs);
    auto runs = [](ArrayRef<int64_t> shape, const WarpLayout& w) -> int64_t {
      if (shape.size() != 2) return llvm::all_of(w.warpsPerCTA, [](int64_t n) { return n == 1; }) ? 1 : 0;
      if (w.warpsPerCTA[1] == 1) return w.warpsPerCTA[0];
      return shape[0] == 1 && w.warpsPerCTA[0] == 1 ? w.warpsPerCTA[1] : 0;
    };
    const int64_t warps = succeeded(l) ? runs(fs, *l) : 0;
    if (warps == 1 && ts.size() != 2) return enc;
    if (warps && ts.size() == 2) {
      if (ts[0] % warps == 0) return blocked(ctx, WarpLayout{{ts[0] / warps, ts[1]}, {warps, 1}, {1, 0}});
      if (ts[0] == 1 && ts[1] % warps == 0) return blocked(ctx, WarpLayout{{1, ts[1] / warps}, {1, warps}, {1, 0}});
    }
    r.emitError() << "cannot keep each warp's run of the row-major order through the reshape (" << enc << " on "
                  << tileTypeOf(from) << ")";
    return nullptr;
  }

  // a and b share a layout; c and the result take its warps, each warp's
  // rows and segments (a's columns / G).
  LogicalResult visitSegmentDot(SegmentDotOp d) {
    auto scaled = [&](Attribute e, Value from, Value to) -> Attribute {
      auto fs = tileTypeOf(from).getShape(), ts = tileTypeOf(to).getShape();
      auto l = equivalentBlocked(e, fs);
      if (failed(l)) return nullptr;
      WarpLayout out = *l;
      for (size_t i = 0; i < ts.size(); ++i) {
        if (ts[i] % l->warpsPerCTA[i]) return nullptr;
        out.sizePerWarp[i] = ts[i] / l->warpsPerCTA[i];
      }
      return blocked(ctx, out);
    };
    Value operand = get(d.getA()) ? d.getA() : d.getB(), sum = get(d.getResult()) ? d.getResult() : d.getC();
    Attribute ea = get(operand), er = get(sum);
    if (!ea && !er) return success();
    if (ea) er = er ? er : scaled(ea, operand, d.getResult());
    else ea = scaled(er, sum, d.getA());
    if (!ea || !er) return d.emitError() << "cannot split the segments' rows and columns over warps alike";
    for (Value v : {d.getA(), d.getB()})
      if (failed(set(v, ea, d))) return failure();
    for (Value v : {d.getC(), d.getResult()})
      if (failed(set(v, er, d))) return failure();
    return success();
  }

  LogicalResult visitDot(DotOp dot) {
    Attribute r = get(dot.getResult());
    if (!r) r = get(dot.getC());
    if (!r) {
      if (auto a = dyn_cast_or_null<DotOperandEncodingAttr>(get(dot.getA())); a && a.getOpIdx() == 0) r = a.getParent();
      if (auto b = dyn_cast_or_null<DotOperandEncodingAttr>(get(dot.getB())); b && b.getOpIdx() == 1) r = b.getParent();
    }
    if (!r) {
      // An A operand laid out by a producer (paged decode: p split over warps
      // along K) gives the result its rows and the B operand its K split.
      if (Attribute a = get(dot.getA()); a && !isa<DotOperandEncodingAttr>(a)) {
        auto aShape = tileTypeOf(dot.getA()).getShape();
        auto la = equivalentBlocked(a, aShape);
        if (failed(la) || la->warpsPerCTA[0] != 1 && la->warpsPerCTA[1] != 1)
          return dot.emitError() << "cannot derive a dot layout from its A operand's " << a
                                 << " (K may be split over warps only when rows are not)";
        int64_t n = tileTypeOf(dot.getResult()).getDimSize(1);
        WarpLayout lr{{la->sizePerWarp[0], n}, la->warpsPerCTA, {1, 0}};
        WarpLayout lb{{la->sizePerWarp[1], n}, {la->warpsPerCTA[1], la->warpsPerCTA[0]}, {1, 0}};
        if (failed(set(dot.getResult(), blocked(ctx, lr), dot)) || failed(set(dot.getC(), blocked(ctx, lr), dot)))
          return failure();
        return set(dot.getB(), blocked(ctx, lb), dot);
      }
      return success();
    }
    if (failed(set(dot.getResult(), r, dot)) || failed(set(dot.getC(), r, dot))) return failure();
    // An integer dot's B in K pairs ([K / 2, 2 N]) is no [K, N] operand:
    // it stays whole, on the one warp these dots run on (the CPU).
    if (dot.getBPairs()) {
      auto lr = equivalentBlocked(r, tileTypeOf(dot.getResult()).getShape());
      if (failed(lr) || llvm::any_of(lr->warpsPerCTA, [](int64_t w) { return w != 1; }))
        return dot.emitError() << "an integer dot (B in K pairs) runs on one warp";
      auto bs = tileTypeOf(dot.getB()).getShape();
      if (!get(dot.getB()) && failed(set(dot.getB(), blocked(ctx, WarpLayout{{bs[0], bs[1]}, {1, 1}, {1, 0}}), dot)))
        return failure();
    }
    // A result every warp holds whole although warps are laid along it is a
    // K split: its operands take their layouts from their own producers
    // (the split_k root's A and the block pointers it shares); B follows A
    // as above when A is laid out first.
    auto resShape = tileTypeOf(dot.getResult()).getShape();
    if (auto lr = equivalentBlocked(r, resShape); succeeded(lr))
      for (size_t i = 0; i < resShape.size(); ++i)
        if (lr->warpsPerCTA[i] > 1 && lr->sizePerWarp[i] == resShape[i]) {
          Attribute a = get(dot.getA());
          if (!a || isa<DotOperandEncodingAttr>(a) || get(dot.getB())) return success();
          auto la = equivalentBlocked(a, tileTypeOf(dot.getA()).getShape());
          if (failed(la)) return success();
          WarpLayout lb{{la->sizePerWarp[1], resShape[1]}, {la->warpsPerCTA[1], la->warpsPerCTA[0]}, {1, 0}};
          return set(dot.getB(), blocked(ctx, lb), dot);
        }
    // Operands already laid out by a producer keep their layout (split K).
    if (!get(dot.getA()) && failed(set(dot.getA(), DotOperandEncodingAttr::get(ctx, 0, r), dot))) return failure();
    if (!get(dot.getB()) && failed(set(dot.getB(), DotOperandEncodingAttr::get(ctx, 1, r), dot))) return failure();
    return success();
  }

  MLIRContext* ctx;
  DenseMap<Value, Attribute> enc;
  SmallVector<Value> worklist;
};

struct AssignLayoutsPass : impl::AssignLayoutsBase<AssignLayoutsPass> {
  using AssignLayoutsBase::AssignLayoutsBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    int64_t warps = numWarps;
    if (warps <= 0) {
      auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps");
      if (!a) {
        f.emitError() << "needs a warp count: the num-warps option or a tile.num_warps attribute";
        return signalPassFailure();
      }
      warps = a.getInt();
    }
    auto choice = detectWorkload(f);
    if (failed(choice)) return signalPassFailure();
    std::string why;
    auto layout = rootLayout(tileTypeOf(choice->root).getShape(), warps, choice->tiling, why);
    if (failed(layout)) {
      f.emitError() << workloadName(choice->workload) << " root: " << why;
      return signalPassFailure();
    }
    MLIRContext* ctx = &getContext();
    Propagator prop(ctx);
    Operation* rootOp = choice->root.getDefiningOp() ? choice->root.getDefiningOp() : f.getOperation();
    if (failed(prop.set(choice->root, blocked(ctx, *layout), rootOp)) || failed(prop.run(f)))
      return signalPassFailure();
    // A kernel may hold independent chains: an elementwise one (the KV write
    // moves K and V rows that never meet) or a GEMM whose K is walked in
    // chunks (the first chunk's dot starts from zeros, the later ones from
    // the stored partial sums). Each chain not reached from the root is a
    // workload of its own kind and gets the root layout for its shape: a
    // GEMM's from its next dot (with the root's tiling), an elementwise
    // one's from its next tile. An attention kernel may hold dot-free ones:
    // the CPU piece form zero-fills its accumulator rows before the key
    // loops and normalizes them after, tiles that meet the root's only in
    // memory; they get the row layout of their shape. Reduction kernels must
    // be connected to their root.
    // A GEMM may also hold dot-free chains once its dots are laid out: the
    // quantized form's weight blocks, widened and stored into the local
    // buffers its dots read (GemmKernelSpec::int8Blocks, staged); they get
    // the row layout of their shape, as an attention kernel's do.
    const bool attention = choice->workload == Workload::Attention || choice->workload == Workload::PagedDecode;
    bool chains = choice->workload == Workload::Elementwise || choice->workload == Workload::Gemm || attention;
    bool dotFree = choice->workload == Workload::Elementwise || attention;
    while (chains) {
      Value next;
      f.walk([&](Operation* op) {
        bool candidate = dotFree ? !isa<DotOp>(op) : isa<DotOp>(op);
        // split_k chains start at a dot's A operand, like the root (also
        // when the result is laid out already: a K split's operands take
        // their layouts from their own producers, not from the result; a
        // staged kernel's fallback loops share only their zero accumulators
        // with the staged loop).
        if (auto d = dyn_cast<DotOp>(op); d && choice->tiling == Tiling::SplitK) {
          if (!next && !prop.get(d.getA())) next = d.getA();
          return;
        }
        for (Value v : op->getResults())
          if (!next && candidate && isTileValue(v) && !prop.get(v) && !isCopyPointer(v)) next = v;
      });
      if (!next && !dotFree && choice->workload == Workload::Gemm) {
        dotFree = true;
        continue;
      }
      if (!next) break;
      Tiling tiling = choice->workload == Workload::Gemm && !dotFree ? choice->tiling : rowTiling(tileTypeOf(next).getShape());
      auto l = rootLayout(tileTypeOf(next).getShape(), warps, tiling, why);
      if (failed(l)) {
        next.getDefiningOp()->emitError() << workloadName(choice->workload) << " chain root: " << why;
        return signalPassFailure();
      }
      if (failed(prop.set(next, blocked(ctx, *l), next.getDefiningOp())) || failed(prop.run(f)))
        return signalPassFailure();
    }

    // Rewrite every tile type (values and block arguments) with its encoding.
    bool missing = false;
    f.walk([&](Operation* op) {
      for (Region& r : op->getRegions())
        for (Block& b : r)
          for (BlockArgument a : b.getArguments())
            if (isTileValue(a) && op != f.getOperation()) {
              if (Attribute e = prop.get(a)) a.setType(withEncoding(a.getType(), e));
            }
      for (Value v : op->getResults()) {
        // Workgroup-level copies' views need no layout.
        if (!isTileValue(v) || isCopyPointer(v)) continue;
        Attribute e = prop.get(v);
        if (!e) {
          op->emitError() << "no layout reaches this tile (it is not connected to the " << workloadName(choice->workload)
                          << " root)";
          missing = true;
          continue;
        }
        v.setType(withEncoding(v.getType(), e));
        if (auto c = dyn_cast<arith::ConstantOp>(op))
          if (auto d = dyn_cast<DenseElementsAttr>(c.getValue()))
            c.setValueAttr(d.reshape(cast<ShapedType>(v.getType())));
      }
    });
    if (missing) return signalPassFailure();
    OpBuilder b(ctx);
    f->setAttr("tile.workload", b.getStringAttr(workloadName(choice->workload)));
    f->setAttr("tile.num_warps", b.getI64IntegerAttr(warps));
  }
};

}  // namespace
}  // namespace strata::tile
