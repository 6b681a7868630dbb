//===- DistributeToWarps.cpp - workgroup-level -> per-warp tile IR --------===//
#include "codegen/Passes.h"

namespace strata::tile {

#define GEN_PASS_DEF_DISTRIBUTETOWARPS
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

// How one tile type is split: its layout and, per dim, whether the dim is
// divided between warps (else every warp holds all of it).
struct Split {
  WarpLayout layout;
  SmallVector<bool> divided;
  SmallVector<int64_t> perWarpShape;
};

FailureOr<Split> splitOf(RankedTensorType t) {
  if (!t.getEncoding()) return failure();
  auto l = equivalentBlocked(t.getEncoding(), t.getShape());
  if (failed(l)) return failure();
  Split s{*l, {}, {}};
  for (int64_t i = 0; i < t.getRank(); ++i) {
    bool d = l->warpsPerCTA[i] > 1 && t.getDimSize(i) == l->sizePerWarp[i] * l->warpsPerCTA[i];
    s.divided.push_back(d);
    s.perWarpShape.push_back(d ? l->sizePerWarp[i] : t.getDimSize(i));
  }
  return s;
}

Type perWarpType(Value v) {
  if (!isTileValue(v)) return v.getType();
  auto s = splitOf(tileTypeOf(v));
  return failed(s) ? v.getType() : withShape(v.getType(), s->perWarpShape);
}

struct DistributeToWarpsPass : impl::DistributeToWarpsBase<DistributeToWarpsPass> {
  void runOnOperation() override {
    func::FuncOp f = getOperation();
    auto nw = f->getAttrOfType<IntegerAttr>("tile.num_warps");
    if (!nw) {
      f.emitError() << "run assign-layouts first (no tile.num_warps attribute)";
      return signalPassFailure();
    }
    bool unlaid = false;
    f.walk([&](Operation* op) {
      for (Value v : op->getResults()) {
        if (isTileValue(v) && !encodingOf(v.getType()) && !isCopyPointer(v)) {
          op->emitError() << "tile without a layout: run assign-layouts first";
          unlaid = true;
        }
      }
    });
    if (unlaid) return signalPassFailure();

    OpBuilder b(f.getContext());
    b.setInsertionPointToStart(&f.getBody().front());
    Location loc = f.getLoc();
    Value warpId = WarpIdOp::create(b, loc);
    // Coordinates are computed once, at the top, so every use dominates.
    OpBuilder cb = OpBuilder::atBlockBegin(&f.getBody().front());
    cb.setInsertionPointAfterValue(warpId);
    // The warp's coordinate along dim `dim` of a warpsPerCTA grid
    // (row-major: the last dim varies fastest).
    std::map<std::pair<SmallVector<int64_t>, int64_t>, Value> coords;
    auto coord = [&](ArrayRef<int64_t> warps, int64_t dim) {
      auto key = std::make_pair(SmallVector<int64_t>(warps), dim);
      if (auto it = coords.find(key); it != coords.end()) return it->second;
      int64_t stride = 1;
      for (int64_t i = dim + 1; i < (int64_t)warps.size(); ++i) stride *= warps[i];
      Value q = arith::DivUIOp::create(cb, loc, warpId, arith::ConstantIndexOp::create(cb, loc, stride));
      Value c = arith::RemUIOp::create(cb, loc, q, arith::ConstantIndexOp::create(cb, loc, warps[dim]));
      return coords[key] = c;
    };

    // 1. Decisions from the workgroup-level types.
    std::vector<std::pair<MakeBlockPtrOp, Split>> ptrs;
    std::vector<std::pair<MaskOp, Split>> masks;
    std::vector<std::pair<IotaOp, Split>> iotas;
    SmallVector<ReduceOp> crossReduces;
    SmallVector<DotOp> splitKDots;
    f.walk([&](Operation* op) {
      if (auto m = dyn_cast<MakeBlockPtrOp>(op))
        if (auto s = splitOf(m.getResult().getType().getTileType()); succeeded(s)) ptrs.push_back({m, *s});
      if (auto m = dyn_cast<MaskOp>(op))
        if (auto s = splitOf(cast<RankedTensorType>(m.getType())); succeeded(s)) masks.push_back({m, *s});
      if (auto io = dyn_cast<IotaOp>(op))
        if (auto s = splitOf(cast<RankedTensorType>(io.getType())); succeeded(s)) iotas.push_back({io, *s});
      if (auto r = dyn_cast<ReduceOp>(op))
        if (auto s = splitOf(cast<RankedTensorType>(r.getSrc().getType())); succeeded(s) && r.getAxis() &&
                                                                             s->divided[*r.getAxis()])
          crossReduces.push_back(r);
      if (auto d = dyn_cast<DotOp>(op))
        if (auto s = splitOf(cast<RankedTensorType>(d.getA().getType())); succeeded(s) && s->divided[1])
          splitKDots.push_back(d);
    });

    // 2. Offsets of block pointers, masks and iotas move to the warp's block.
    auto warpOffsets = [&](Operation* op, const Split& s, SmallVector<Value> offsets) {
      b.setInsertionPoint(op);
      for (size_t i = 0; i < offsets.size(); ++i) {
        if (!s.divided[i]) continue;
        Value base = arith::MulIOp::create(b, op->getLoc(), coord(s.layout.warpsPerCTA, i),
                                           arith::ConstantIndexOp::create(b, op->getLoc(), s.layout.sizePerWarp[i]));
        offsets[i] = arith::AddIOp::create(b, op->getLoc(), offsets[i], base);
      }
      return offsets;
    };
    for (auto& [m, s] : ptrs) m.getOffsetsMutable().assign(warpOffsets(m, s, SmallVector<Value>(m.getOffsets())));
    for (auto& [m, s] : masks) {
      SmallVector<Value> o = warpOffsets(m, s, {m.getRowBase(), m.getColBase()});
      m.getRowBaseMutable().assign(o[0]);
      m.getColBaseMutable().assign(o[1]);
    }
    for (auto& [io, s] : iotas) {
      SmallVector<Value> o(s.divided.size(), io.getBase());
      io.getBaseMutable().assign(warpOffsets(io, s, o)[io.getAxis()]);
    }

    // 3. Every tile type becomes the warp's block; splat constants follow.
    f.walk([&](Operation* op) {
      for (Region& r : op->getRegions())
        for (Block& blk : r)
          for (BlockArgument a : blk.getArguments())
            if (op != f.getOperation()) a.setType(perWarpType(a));
      for (Value v : op->getResults()) v.setType(perWarpType(v));
      if (auto c = dyn_cast<arith::ConstantOp>(op))
        if (auto d = dyn_cast<DenseElementsAttr>(c.getValue()); d && d.getType() != c.getType()) {
          if (!d.isSplat()) {
            op->emitError() << "only splat constant tiles can be distributed over warps";
            unlaid = true;
          } else {
            c.setValueAttr(DenseElementsAttr::get(cast<ShapedType>(c.getType()), d.getSplatValue<Attribute>()));
          }
        }
    });
    if (unlaid) return signalPassFailure();

    // 4. Reductions over a dim split between warps combine across warps.
    for (ReduceOp r : crossReduces) r.setCrossWarp(true);
    // 5. A dot with K split between warps: partial product, cross-warp sum, + c.
    // A dot that only accumulates a K loop's carried value (c is the loop's
    // argument and the dot's result its next value, neither used otherwise)
    // keeps accumulating its warp's partial sum from zeros; the sum across
    // warps is taken once, after the loop, and added to the loop's initial
    // value (sum over steps of the warps' sums = sum over warps of their
    // partial sums).
    for (DotOp d : splitKDots) {
      if (deferScaledSum(b, d)) continue;
      auto ct = cast<RankedTensorType>(d.getC().getType());
      auto zeros = [&] {
        return arith::ConstantOp::create(b, d.getLoc(), DenseElementsAttr::get(ct, b.getF32FloatAttr(0.f))).getResult();
      };
      if (auto loop = dyn_cast<scf::ForOp>(d->getParentOp()); loop && d.getC().hasOneUse() && d->hasOneUse()) {
        auto arg = dyn_cast<BlockArgument>(d.getC());
        auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
        if (arg && arg.getOwner() == loop.getBody() && arg.getArgNumber() >= 1 &&
            yield.getOperand(arg.getArgNumber() - 1) == d.getResult()) {
          unsigned k = arg.getArgNumber() - 1;
          b.setInsertionPoint(loop);
          Value init = loop.getInitArgs()[k];
          loop.getInitArgsMutable()[k].assign(zeros());
          b.setInsertionPointAfter(loop);
          Value partial = loop.getResult(k);
          auto sum = ReduceOp::create(b, d.getLoc(), ct, partial, b.getStringAttr("sum"), nullptr, b.getUnitAttr(), nullptr,
                                  nullptr);
          Value total = arith::AddFOp::create(b, d.getLoc(), init, sum.getResult());
          partial.replaceAllUsesExcept(total, sum);
          continue;
        }
      }
      b.setInsertionPoint(d);
      Value partial = DotOp::create(b, d.getLoc(), ct, d.getA(), d.getB(), zeros(), nullptr, d.getBPairsAttr());
      auto sum = ReduceOp::create(b, d.getLoc(), ct, partial, b.getStringAttr("sum"), nullptr, b.getUnitAttr(), nullptr,
                                  nullptr);
      Value total = arith::AddFOp::create(b, d.getLoc(), d.getC(), sum.getResult());
      d.getResult().replaceAllUsesWith(total);
      d.erase();
    }
    // 6. Row sums over warps that only feed such a scaled accumulator
    // (FlashAttention's l = l * alpha + rowsum(p)) stay per warp likewise.
    for (ReduceOp r : crossReduces)
      if (r.getKind() == "sum")
        if (auto add = dyn_cast<arith::AddFOp>(r->hasOneUse() ? *r->getUsers().begin() : nullptr)) {
          Value other = add.getLhs() == r.getResult() ? add.getRhs() : add.getLhs();
          if (other != r.getResult() && deferScaled(b, add.getResult(), other)) r.setCrossWarp(false);
        }
  }

 private:
  // A loop-carried accumulator whose step is `next` = f(arg * x) for a
  // tile x every warp holds whole (the same on every warp: alpha after a
  // max over warps), where f adds a sum over warps (a K-split dot's, or a
  // row sum's): each warp may carry its own partial sum instead, scaled by
  // the same x, and the sum over warps is taken once after the loop (sum
  // over warps of each warp's scaled partial = the scaled sum). `scaled` is
  // the loop's arg * x. The initial value must be zeros or itself a sum
  // over warps (the previous loop's: its per-warp partials carry on).
  // Returns false, changing nothing, when the pattern does not hold.
  bool deferScaled(OpBuilder& b, Value next, Value scaled) {
    auto mul = scaled.getDefiningOp<arith::MulFOp>();
    auto loop = next.getDefiningOp() ? dyn_cast<scf::ForOp>(next.getDefiningOp()->getParentOp()) : nullptr;
    if (!mul || !loop || !next.hasOneUse() || !mul->hasOneUse() || mul->getParentOp() != loop) return false;
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    if (*next.getUsers().begin() != yield.getOperation()) return false;
    unsigned k = next.getUses().begin()->getOperandNumber();
    Value arg = loop.getRegionIterArgs()[k];
    Value x = mul.getLhs() == arg ? mul.getRhs() : mul.getLhs();
    if (x == arg || (mul.getLhs() != arg && mul.getRhs() != arg) || !arg.hasOneUse()) return false;
    if (auto sx = splitOf(tileTypeOf(x)); failed(sx) || llvm::is_contained(sx->divided, true)) return false;
    Value init = loop.getInitArgs()[k], partialInit;
    auto prevSum = init.getDefiningOp<ReduceOp>();
    if (prevSum && prevSum.getCrossWarp() && !prevSum.getAxis() && prevSum.getKind() == "sum")
      partialInit = prevSum.getSrc();
    else if (auto c = init.getDefiningOp<arith::ConstantOp>())
      if (auto d = dyn_cast<DenseElementsAttr>(c.getValue()); d && d.isSplat() && d.getSplatValue<APFloat>().isZero())
        partialInit = init;
    if (!partialInit) return false;
    loop.getInitArgsMutable()[k].assign(partialInit);
    if (prevSum && prevSum->use_empty()) prevSum.erase();
    b.setInsertionPointAfter(loop);
    Value partial = loop.getResult(k);
    auto sum = ReduceOp::create(b, loop.getLoc(), partial.getType(), partial, b.getStringAttr("sum"), nullptr,
                                b.getUnitAttr(), nullptr, nullptr);
    partial.replaceAllUsesExcept(sum.getResult(), sum);
    return true;
  }

  // A K-split dot accumulating into arg * x (FlashAttention's acc * alpha +
  // p v with the keys over warps): see deferScaled.
  bool deferScaledSum(OpBuilder& b, DotOp d) { return deferScaled(b, d.getResult(), d.getC()); }
};

}  // namespace
}  // namespace strata::tile
