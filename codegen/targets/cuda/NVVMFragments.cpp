//===- NVVMFragments.cpp - which fragment each tile takes ---------------------===//
//
// Part of convert-tile-to-nvvm: see ConvertTileToNVVM.cpp and NVVMLowering.h.
//===----------------------------------------------------------------------===//
#include "codegen/targets/cuda/NVVMLowering.h"

#include <functional>

namespace strata::tile::nvvm {

LogicalResult FragAnalysis::run(func::FuncOp f, bool hasDot, bool permuteK) {
  this->permuteK = permuteK;
  // Without dots no tile is an mma operand: every tile is lane-linear,
  // in vectors of the kernel's tile.lane_vector elements where a tile
  // allows (tiles of one shape alike, so elementwise operands agree).
  if (!hasDot) {
    auto attr = f->getAttrOfType<IntegerAttr>("tile.lane_vector");
    const int64_t vec = attr ? attr.getInt() : 1;
    auto lane = [&](Value v) {
      if (auto t = dyn_cast<RankedTensorType>(v.getType())) frags[v] = Frag::lane(t, vec);
    };
    f.walk([&](Operation* op) { llvm::for_each(op->getResults(), lane); });
    f.walk([&](Block* blk) { llvm::for_each(blk->getArguments(), lane); });
    // A broadcast of a row or column ([n, 1] -> [n, m]: a quantized
    // GEMV's block scales): its source, back through elementwise ops to
    // the loads, takes the result's lanes with the broadcast dim collapsed,
    // so each lane loads the values its result elements take (lanes that
    // share one load the same address) and the broadcast moves nothing.
    f.walk([&](BroadcastOp br) {
      if (!ok) return;
      Frag res = of(br.getResult());
      auto src = cast<RankedTensorType>(br.getSrc().getType());
      if (src.getNumElements() == 1 || src.getNumElements() == res.numel || repeatsInLane(of(br.getSrc()), res)) return;
      res.collapseRows = src.getDimSize(0) == 1;
      res.collapseCols = src.getRank() == 2 && src.getDimSize(1) == 1;
      SmallVector<Value> work = {br.getSrc()};
      while (!work.empty() && ok) {
        Value v = work.pop_back_val();
        Operation* def = v.getDefiningOp();
        if (!v.hasOneUse() || !def || !(isa<LoadOp>(def) || isElementwise(def))) {
          br.emitError() << "the sm_90 lowering broadcasts a row or column only from loads through elementwise ops "
                            "used by the broadcast alone";
          ok = false;
          return;
        }
        frags[v] = res;
        if (!isa<LoadOp>(def))
          for (Value o : def->getOperands())
            if (isa<RankedTensorType>(o.getType())) work.push_back(o);
      }
    });
    return success(ok);
  }
  // Every rule to its fixpoint.
  auto settle = [&] {
    for (bool again = true; again && ok;) {
      again = false;
      f.walk([&](Operation* op) { again |= visit(op); });
    }
  };
  settle();
  if (!ok) return failure();
  // Tiles no use decides (a stored-only tile: an epilogue's, or weight
  // blocks widened into local memory) take the accumulator layout, from the
  // last op up, each op's rules applied as its results are set: a
  // broadcast's source then takes its collapsed form (a block's scale
  // column) before anything sets it whole. A loop's body goes before the
  // loop's own rule, so the values it carries reach their initial values
  // before those are reached; loops and branches take their results from
  // their bodies, and a value only yielded waits for the loop's rule.
  // Whatever is left takes the accumulator layout after that.
  auto byDefault = [&](Value r, Operation* op) {
    if (isa<RankedTensorType>(r.getType()) && !frags.count(r)) set(r, Frag{}, op);
  };
  std::function<void(Block&)> backwards = [&](Block& blk) {
    for (Operation& op : llvm::reverse(blk)) {
      for (Region& r : op.getRegions())
        for (Block& b : r) backwards(b);
      if (!op.getNumRegions())
        for (Value r : op.getResults())
          if (r.use_empty() || !llvm::all_of(r.getUsers(), [](Operation* u) { return isa<scf::YieldOp>(u); }))
            byDefault(r, &op);
      visit(&op);
    }
  };
  for (Block& b : f.getBody()) backwards(b);
  settle();
  f.walk([&](Operation* op) {
    for (Value r : op->getResults()) byDefault(r, op);
  });
  settle();
  // Joins (tile.concat) exist for one purpose: see lowerConcat.
  f.walk([&](ConcatOp cc) {
    const Frag& res = of(cc.getResult());
    if (res.kind == Frag::Desc || (res.kind == Frag::C && res.cols != 8)) return;
    if (ok && !(res.kind == Frag::A && !res.permuteK && cc.getAxis() == 1 && cc.getSrcs().size() == 2 &&
                llvm::all_of(cc.getSrcs(), [&](Value v) { return of(v) == Frag{}; }))) {
      cc.emitError() << "the sm_90 lowering joins only two [16, 8] accumulator fragments along columns into the A "
                        "operand of a dot";
      ok = false;
    }
  });
  f.walk([&](Operation* op) {
    for (Value r : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType())) checkShape(r, t, op);
  });
  return success(ok);
}

void FragAnalysis::replaced(Value from, Value to) {
  if (auto it = frags.find(from); it != frags.end()) frags[to] = Frag(it->second);
}

bool FragAnalysis::set(Value v, const Frag& f, Operation* at) {
  if (!ok) return false;
  auto [it, inserted] = frags.try_emplace(v, f);
  if (inserted) return true;
  if (!(it->second == f)) {
    at->emitError() << "tile used both as mma fragment " << it->second.str() << " and " << f.str();
    ok = false;
  }
  return false;
}

std::optional<Frag> FragAnalysis::get(Value v) const {
  auto it = frags.find(v);
  return it == frags.end() ? std::nullopt : std::optional<Frag>(it->second);
}

bool FragAnalysis::unify(ArrayRef<Value> vals, Operation* at) {
  std::optional<Frag> f;
  for (Value v : vals)
    if (isa<RankedTensorType>(v.getType()) && (f = get(v))) break;
  if (!f) return false;
  bool changed = false;
  for (Value v : vals)
    if (isa<RankedTensorType>(v.getType())) changed |= set(v, *f, at);
  return changed;
}

bool FragAnalysis::visit(Operation* op) {
  bool c = false;
  if (auto d = dyn_cast<DotOp>(op); d && isGroupDot(d)) {
    Frag acc;
    acc.cols = cast<RankedTensorType>(d.getC().getType()).getDimSize(1);
    Frag a{Frag::A, 16};
    a.permuteK = permuteK;
    c |= set(d.getA(), groupOperandLoad(d.getA()) ? Frag{Frag::Desc} : a, op);
    c |= set(d.getB(), Frag{Frag::Desc}, op);
    c |= set(d.getC(), acc, op);
    c |= set(d.getResult(), acc, op);
  } else if (auto d = dyn_cast<DotOp>(op)) {
    Frag a{Frag::A, 16}, bf{Frag::B, 8};
    a.permuteK = bf.permuteK = permuteK;
    c |= set(d.getA(), a, op);
    c |= set(d.getB(), bf, op);
    c |= set(d.getC(), Frag{}, op);
    c |= set(d.getResult(), Frag{}, op);
  } else if (auto e = dyn_cast<ExtractOp>(op)) {
    if (auto f = get(e.getResult()); f && f->kind == Frag::B) {
      Frag src = *f;
      src.cols = 16;
      c |= set(e.getSrc(), src, op);
    } else if (f && f->kind == Frag::Desc) {
      c |= set(e.getSrc(), *f, op);
    } else if (auto src = get(e.getSrc()); src && src->kind == Frag::C && src->cols != 8) {
      c |= set(e.getResult(), Frag{}, op);  // a [16, 8] piece of a warpgroup accumulator
    }
  } else if (auto cc = dyn_cast<ConcatOp>(op); cc && get(cc.getResult()) &&
                                               (get(cc.getResult())->kind == Frag::Desc ||
                                                (get(cc.getResult())->kind == Frag::C && get(cc.getResult())->cols != 8))) {
    // A warpgroup dot's B operand (its pieces stay in local memory) or
    // accumulator (its [16, 8] pieces side by side).
    Frag part = *get(cc.getResult());
    if (part.kind == Frag::C) part.cols = 8;
    for (Value v : cc.getSrcs()) c |= set(v, part, op);
  } else if (auto cc = dyn_cast<ConcatOp>(op)) {
    // Two [16, 8] accumulator fragments side by side are one [16, 16] A
    // fragment in the ISA's K order (see lowerConcat).
    if (auto f = get(cc.getResult()); f && f->kind == Frag::A && !f->permuteK)
      for (Value v : cc.getSrcs()) c |= set(v, Frag{}, op);
  } else if (auto b = dyn_cast<BroadcastOp>(op)) {
    if (auto f = get(b.getResult())) {
      auto src = cast<RankedTensorType>(b.getSrc().getType());
      auto dst = cast<RankedTensorType>(b.getType());
      f->collapseRows |= src.getDimSize(0) == 1 && dst.getDimSize(0) != 1;
      f->collapseCols |= src.getDimSize(1) == 1 && dst.getDimSize(1) != 1;
      c |= set(b.getSrc(), *f, op);
    }
  } else if (auto e = dyn_cast<ExpandDimsOp>(op)) {
    if (auto f = get(e.getResult())) {
      f->droppedAxis = e.getAxis();
      c |= set(e.getSrc(), *f, op);
    } else if (auto f = get(e.getSrc()); f && f->droppedAxis == int64_t(e.getAxis())) {
      // A reduced row max or sum stored as a [16, 1] column (attention's
      // split partials): the same lane elements, the axis back at size 1.
      f->droppedAxis = -1;
      c |= set(e.getResult(), *f, op);
    }
  } else if (auto r = dyn_cast<ReduceOp>(op); r && r.getCrossWarp() && !r.getAxis()) {
    c |= unify({r.getSrc(), r.getResult()}, op);  // same elements, combined across warps
  } else if (auto r = dyn_cast<ReduceOp>(op); r && !r.getCrossWarp() && r.getAxis() && get(r.getSrc()) &&
                                              get(r.getSrc())->kind == Frag::C) {
    // A row (axis 1) or column (axis 0) reduction of an accumulator
    // fragment: the result holds the kept coordinate of every element
    // (see lowerFragmentReduce), as an expand_dims + broadcast back expects.
    Frag res = *get(r.getSrc());
    (*r.getAxis() == 1 ? res.collapseCols : res.collapseRows) = true;
    res.droppedAxis = *r.getAxis();
    c |= set(r.getResult(), res, op);
  } else if (isElementwise(op)) {
    SmallVector<Value> vals(op->getOperands());
    vals.push_back(op->getResult(0));
    c |= unify(vals, op);
  } else if (auto fo = dyn_cast<scf::ForOp>(op)) {
    auto yield = cast<scf::YieldOp>(fo.getBody()->getTerminator());
    for (auto [init, arg, res, y] : llvm::zip(fo.getInitArgs(), fo.getRegionIterArgs(), fo.getResults(),
                                              yield.getOperands()))
      c |= unify({init, arg, res, y}, op);
  } else if (auto i = dyn_cast<scf::IfOp>(op)) {
    for (auto [k, res] : llvm::enumerate(i.getResults())) {
      SmallVector<Value> vals = {res};
      for (Region* r : {&i.getThenRegion(), &i.getElseRegion()})
        if (!r->empty()) vals.push_back(r->front().getTerminator()->getOperand(k));
      c |= unify(vals, op);
    }
  }
  return c;
}

void FragAnalysis::checkShape(Value v, RankedTensorType t, Operation* at) {
  if (!ok) return;
  const Frag& f = of(v);
  if (f.kind == Frag::Desc) return;
  SmallVector<int64_t> want = {16, f.kind == Frag::A ? 16 : f.cols};
  if (f.collapseRows) want[0] = 1;
  if (f.collapseCols) want[1] = 1;
  if (f.droppedAxis >= 0) want.erase(want.begin() + f.droppedAxis);
  if (t.getShape() != ArrayRef<int64_t>(want)) {
    InFlightDiagnostic d = at->emitError() << "the sm_90 lowering holds tiles as mma.m16n8k16 fragments; " << t
                                          << " does not fit fragment " << f.str() << " (expected [";
    llvm::interleaveComma(want, d);
    d << "]): run match-target-size with target=sm_90 first";
    ok = false;
  }
}

}  // namespace strata::tile::nvvm
