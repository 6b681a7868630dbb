//===- NVVMLanes.cpp - lane-held tiles, reductions, masks ---------------------===//
//
// Part of convert-tile-to-nvvm: see ConvertTileToNVVM.cpp and NVVMLowering.h.
//===----------------------------------------------------------------------===//
#include "codegen/targets/cuda/NVVMLowering.h"

namespace strata::tile::nvvm {

Type Lowering::laneType(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t) return memRefTypeOf(v.getType());
  return VectorType::get({frags.of(v).size()}, t.getElementType());
}

SmallVector<Value> Lowering::coords(const Frag& fr, int64_t i) {
  Value kBase = fr.permuteK ? quad : pair;
  Value rowBase = fr.kind == Frag::B ? kBase : group, colBase = fr.kind == Frag::A ? kBase : fr.kind == Frag::B ? group : pair;
  Location loc = f.getLoc();
  Value r = fr.collapseRows ? cst(0) : arith::AddIOp::create(b, loc, rowBase, cst(fr.rowOff(i))).getResult();
  Value c = fr.collapseCols ? cst(0) : arith::AddIOp::create(b, loc, colBase, cst(fr.colOff(i))).getResult();
  if (fr.droppedAxis == 0) return {c};
  if (fr.droppedAxis == 1) return {r};
  return {r, c};
}

Value Lowering::inBounds(Location loc, Value view, ArrayRef<Value> idx) {
  Value ok;
  for (auto [d, i] : llvm::enumerate(idx)) {
    Value size = memref::DimOp::create(b, loc, view, d);
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, size);
    ok = ok ? arith::AndIOp::create(b, loc, ok, in).getResult() : in;
  }
  return ok;
}

Value Lowering::guardedLoad(Location loc, Type t, Value ok, llvm::function_ref<Value()> load) {
  if (!ok) return load();
  auto guarded = scf::IfOp::create(b, loc, t, ok, true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(guarded.thenBlock());
  scf::YieldOp::create(b, loc, ValueRange{load()});
  b.setInsertionPointToStart(guarded.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange{arith::ConstantOp::create(b, loc, b.getZeroAttr(t))});
  return guarded.getResult(0);
}

Value Lowering::loadElement(Location loc, Value view, ArrayRef<Value> idx, Type et, Value ok) {
  return guardedLoad(loc, et, ok, [&] { return Value(memref::LoadOp::create(b, loc, view, idx)); });
}

void Lowering::storeElement(Location loc, Value v, Value view, ArrayRef<Value> idx, Value ok) {
  if (!ok) {
    memref::StoreOp::create(b, loc, v, view, idx);
    return;
  }
  auto guarded = scf::IfOp::create(b, loc, TypeRange{}, ok, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(guarded.thenBlock());
  memref::StoreOp::create(b, loc, v, view, idx);
}

SmallVector<SmallVector<int64_t, 4>> Lowering::runsOf(const Frag& fr, int64_t dim, int64_t maxRun) {
  // Lane base along dim: 4t or 2t (A's columns, B's rows: K permuted or
  // not), 2t (C's columns), g.
  bool kDim = (fr.kind == Frag::A && dim == 1) || (fr.kind == Frag::B && dim == 0);
  int64_t kRun = fr.permuteK ? 4 : 2;
  maxRun = std::min(maxRun, kDim ? kRun : fr.kind == Frag::C && dim == 1 ? int64_t(2) : int64_t(1));
  int64_t n = fr.size();
  auto along = [&](int64_t i) { return dim == 0 ? fr.rowOff(i) : fr.colOff(i); };
  auto across = [&](int64_t i) { return dim == 0 ? fr.colOff(i) : fr.rowOff(i); };
  SmallVector<bool> used(n, false);
  SmallVector<SmallVector<int64_t, 4>> out;
  for (int64_t i = 0; i < n; ++i) {
    if (used[i]) continue;
    SmallVector<int64_t, 4> group = {i};
    for (int64_t r = maxRun; r >= 2; r /= 2) {
      if (along(i) % r) continue;
      SmallVector<int64_t, 4> g = {i};
      for (int64_t k = 1; k < r; ++k)
        for (int64_t j = 0; j < n; ++j)
          if (!used[j] && j != i && across(j) == across(i) && along(j) == along(i) + k) {
            g.push_back(j);
            break;
          }
      if ((int64_t)g.size() == r) {
        group = g;
        break;
      }
    }
    for (int64_t j : group) used[j] = true;
    out.push_back(group);
  }
  return out;
}

Value Lowering::laneLinear(Location loc, const Frag& fr, int64_t i) {
  if (fr.numel == 1) return cst(0);
  if (fr.vec == 1) return arith::AddIOp::create(b, loc, laneId, cst(32 * i)).getResult();
  Value base = arith::MulIOp::create(b, loc, laneId, cst(fr.vec));
  return arith::AddIOp::create(b, loc, base, cst(i / fr.vec * 32 * fr.vec + i % fr.vec)).getResult();
}

SmallVector<Value> Lowering::laneIndices(Location loc, const Frag& fr, int64_t i) {
  Value e = laneLinear(loc, fr, i);
  if (fr.shape.size() != 2) return {e};
  // A broadcast source's collapsed dim (FragAnalysis::run) reads index 0.
  return {fr.collapseRows ? cst(0) : arith::DivUIOp::create(b, loc, e, cst(fr.shape[1])).getResult(),
          fr.collapseCols ? cst(0) : arith::RemUIOp::create(b, loc, e, cst(fr.shape[1])).getResult()};
}

void Lowering::forLaneElements(const Frag& fr, llvm::function_ref<void(int64_t, SmallVector<Value>, Value)> each) {
  Location loc = f.getLoc();
  for (int64_t i = 0; i < fr.size(); ++i) {
    Value pred;
    if (fr.numel > 1 && 32 * (i + 1) > fr.numel)
      pred = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, laneId, cst(fr.numel - 32 * i));
    each(i, laneIndices(loc, fr, i), pred);
  }
}

Value Lowering::lowerLaneLoad(LoadOp l, const Frag& fr) {
  Location loc = l.getLoc();
  auto vt = cast<VectorType>(laneType(l.getResult()));
  Type et = vt.getElementType();
  SmallVector<Value> elems;
  // A lane's vectors as one access each, where the load promises aligned
  // runs along the last dim at least that long: in bounds, or each run
  // wholly inside or outside the view (checked at its first element, the
  // run loaded or zeroed as one; whole rounds only, so no lane predicate).
  if (fr.vec > 1) {
    std::optional<RunView> runs = runView(l, fr, et, /*maskedRuns=*/true);
    const bool masked = !l.getInBounds();
    if (runs && runs->dim == (int64_t)fr.shape.size() - 1 && runs->run >= fr.vec &&
        (!masked || fr.numel % (32 * fr.vec) == 0)) {
      // (Whole rounds: no lane predicate.)
      for (int64_t i = 0; i < fr.size(); i += fr.vec) {
        SmallVector<Value> idx = laneIndices(loc, fr, i);
        Value v = guardedLoad(loc, VectorType::get({fr.vec}, et), masked ? inBounds(loc, l.getPtr(), idx) : Value(),
                              [&] { return runs->load(b, loc, idx, et, fr.vec); });
        // One access holds the lane's whole tile: the loaded vector as it is
        // (rebuilding byte vectors element by element costs NVPTX a byte
        // permute each).
        if (fr.size() == fr.vec) return v;
        for (int64_t k = 0; k < fr.vec; ++k) elems.push_back(vector::ExtractOp::create(b, loc, v, k));
      }
      return vector::FromElementsOp::create(b, loc, vt, elems);
    }
  }
  forLaneElements(fr, [&](int64_t, SmallVector<Value> idx, Value pred) {
    Value ok = both(loc, pred, l.getInBounds() ? Value() : inBounds(loc, l.getPtr(), idx));
    elems.push_back(loadElement(loc, l.getPtr(), idx, et, ok));
  });
  return vector::FromElementsOp::create(b, loc, vt, elems);
}

void Lowering::lowerLaneStore(StoreOp s, const Frag& fr) {
  Location loc = s.getLoc();
  // A lane's vectors as one access each, as lowerLaneLoad's.
  if (fr.vec > 1) {
    Type et = cast<VectorType>(s.getValue().getType()).getElementType();
    std::optional<RunView> runs = runView(s, fr, et);
    if (runs && runs->dim == (int64_t)fr.shape.size() - 1 && runs->run >= fr.vec) {
      for (int64_t i = 0; i < fr.size(); i += fr.vec) {
        SmallVector<int64_t> pos = llvm::to_vector(llvm::seq<int64_t>(i, i + fr.vec));
        Value v = fr.size() == fr.vec ? Value(s.getValue())
                                      : Value(vector::ShuffleOp::create(b, loc, s.getValue(), s.getValue(), pos));
        runs->store(b, loc, v, laneIndices(loc, fr, i));
      }
      return;
    }
  }
  // A single element is written by lane 0 only.
  Value first = fr.numel == 1 ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, laneId, cst(0)).getResult()
                              : Value();
  forLaneElements(fr, [&](int64_t i, SmallVector<Value> idx, Value pred) {
    Value v = vector::ExtractOp::create(b, loc, s.getValue(), i);
    Value ok = both(loc, both(loc, first, pred), s.getInBounds() ? Value() : inBounds(loc, s.getPtr(), idx));
    storeElement(loc, v, s.getPtr(), idx, ok);
  });
}

FailureOr<Value> Lowering::lowerLaneReduce(ReduceOp r, const Frag& fr) {
  Location loc = r.getLoc();
  if (!cast<VectorType>(r.getSrc().getType()).getElementType().isF32())
    return r.emitError() << "the sm_90 lowering reduces f32 tiles only";
  auto combine = [&](Value a, Value c) { return combineReduced(loc, r, a, c); };
  const Frag& res = frags.of(r.getResult());
  if (res.numel != 1) {
    // Rows held whole by their lanes (the lane's vector is a row): result
    // element j of a lane combines its vector j, and nothing crosses lanes.
    if (r.getKind() == "argmax" || r.getCrossWarp() || *r.getAxis() != 1 || fr.shape.size() != 2 ||
        fr.vec != fr.shape[1] || res.vec != 1 || res.numel * fr.vec != fr.numel)
      return r.emitError() << "the sm_90 lowering reduces a kernel's lane-linear tiles whole (the kept dims must be 1), "
                              "or along rows that each lane holds whole (a lane vector of the row's length)";
    SmallVector<Value> out;
    for (int64_t j = 0; j < res.size(); ++j) {
      Value acc = vector::ExtractOp::create(b, loc, r.getSrc(), j * fr.vec);
      for (int64_t k = 1; k < fr.vec; ++k) acc = combine(acc, vector::ExtractOp::create(b, loc, r.getSrc(), j * fr.vec + k));
      out.push_back(acc);
    }
    return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(r.getResult())), out));
  }
  if (r.getKind() == "argmax") return lowerLaneArgmax(r, fr);
  bool isMax = r.getKind() == "max";
  Value acc = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(isMax ? -std::numeric_limits<float>::infinity() : 0.f));
  Value identity = acc;
  Value v = r.getSrc();
  for (int64_t i = 0; i < fr.size(); ++i) {
    Value e = vector::ExtractOp::create(b, loc, v, i);
    if (fr.numel > 1 && 32 * (i + 1) > fr.numel)
      e = arith::SelectOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, laneId, cst(fr.numel - 32 * i)), e, identity);
    acc = combine(acc, e);
  }
  if (fr.numel > 1) acc = combineAcrossLanes(loc, r, acc, {16, 8, 4, 2, 1});
  Value whole = vector::BroadcastOp::create(b, loc, laneType(r.getResult()), acc);
  // Split over warps (a row spread along its columns): every lane now
  // holds its warp's value; the warps combine theirs.
  return r.getCrossWarp() ? combineAcrossWarps(r, whole) : whole;
}

Value Lowering::lowerLaneArgmax(ReduceOp r, const Frag& fr) {
  Location loc = r.getLoc();
  Type f32 = b.getF32Type();
  auto fcst = [&](double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult(); };
  auto wins = [&](Value v, Value i, Value best, Value at) {
    Value larger = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v, best);
    Value lower = arith::AndIOp::create(b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, v, best),
                                        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, i, at));
    return arith::OrIOp::create(b, loc, larger, lower).getResult();
  };
  Value best = fcst(-std::numeric_limits<double>::infinity()), at = fcst(std::numeric_limits<double>::infinity());
  for (int64_t i = 0; i < fr.size(); ++i) {
    Value e = vector::ExtractOp::create(b, loc, r.getSrc(), i);
    Value pos = laneLinear(loc, fr, i);
    Value idx = arith::UIToFPOp::create(
        b, loc, f32, arith::IndexCastOp::create(b, loc, b.getI32Type(), pos));
    Value take = wins(e, idx, best, at);
    if (fr.numel > 1 && 32 * (i + 1) > fr.numel)
      take = arith::AndIOp::create(
          b, loc, take, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, laneId, cst(fr.numel - 32 * i)));
    best = arith::SelectOp::create(b, loc, take, e, best);
    at = arith::SelectOp::create(b, loc, take, idx, at);
  }
  if (fr.numel > 1) {
    Value all = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1));
    Value clamp = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(31));
    for (int32_t off : {16, 8, 4, 2, 1}) {
      Value o = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(off));
      Value ov = NVVM::ShflOp::create(b, loc, f32, all, best, o, clamp, NVVM::ShflKind::bfly, UnitAttr());
      Value oi = NVVM::ShflOp::create(b, loc, f32, all, at, o, clamp, NVVM::ShflKind::bfly, UnitAttr());
      Value take = wins(ov, oi, best, at);
      best = arith::SelectOp::create(b, loc, take, ov, best);
      at = arith::SelectOp::create(b, loc, take, oi, at);
    }
  }
  return vector::BroadcastOp::create(b, loc, laneType(r.getResult()), at);
}

FailureOr<Value> Lowering::lowerSegmentDot(SegmentDotOp d) {
  Location loc = d.getLoc();
  const Frag &src = frags.of(d.getA()), &res = frags.of(d.getResult());
  // (The operands are lane vectors by now: the segment from the tiles' shapes.)
  if (src.shape.size() != 2 || res.shape.size() != 2 || !res.shape[1])
    return d.emitError() << "the sm_90 lowering takes rank-2 segment dots";
  const int64_t G = src.shape[1] / res.shape[1];
  // Each lane's vectors hold whole segments: segment j of a lane's
  // elements is its result element j (both lane-linear, the result's
  // vector G times shorter).
  if (src.kind != Frag::Lane || res.kind != Frag::Lane || res.vec * G != src.vec ||
      res.numel * G != src.numel || !(frags.of(d.getB()) == src) || !(frags.of(d.getC()) == res))
    return d.emitError() << "the sm_90 lowering takes segment dots whose lanes hold whole segments (" << src.str()
                         << " -> " << res.str() << ", segments of " << G << ")";
  auto kind = [](bool unsignedBytes) {
    return unsignedBytes ? NVVM::DotAccumulateType::UNSIGNED : NVVM::DotAccumulateType::SIGNED;
  };
  // The bytes as i32 words, each word's four bytes one dp4a operand (as
  // bitcasts, which cost nothing, where byte extracts cost a permute each).
  auto words = [&](Value v) {
    auto vt = cast<VectorType>(v.getType());
    return vector::BitCastOp::create(b, loc, VectorType::get({vt.getNumElements() / 4}, b.getI32Type()), v).getResult();
  };
  Value aw = words(d.getA()), bw = words(d.getB());
  SmallVector<Value> out;
  for (int64_t j = 0; j < res.size(); ++j) {
    Value acc = vector::ExtractOp::create(b, loc, d.getC(), j);
    for (int64_t q = 0; q < G; q += 4) {
      auto four = [&](Value w) {
        Value one = vector::ExtractStridedSliceOp::create(b, loc, w, {(j * G + q) / 4}, {1}, {1});
        return vector::BitCastOp::create(b, loc, VectorType::get({4}, b.getI8Type()), one).getResult();
      };
      acc = NVVM::DotAccumulate4WayOp::create(b, loc, b.getI32Type(), four(aw), kind(d.getAUnsigned()), four(bw),
                                              kind(d.getBUnsigned()), acc);
    }
    out.push_back(acc);
  }
  return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(d.getResult())), out));
}

Value Lowering::combineAcrossLanes(Location loc, ReduceOp r, Value v, ArrayRef<int32_t> offsets) {
  Value all = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1));
  Value clamp = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(31));
  for (int32_t off : offsets) {
    Value o = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(off));
    v = combineReduced(loc, r, v, NVVM::ShflOp::create(b, loc, b.getF32Type(), all, v, o, clamp, NVVM::ShflKind::bfly, UnitAttr()));
  }
  return v;
}

FailureOr<Value> Lowering::lowerFragmentReduce(ReduceOp r, const Frag& fr) {
  Location loc = r.getLoc();
  if (fr.kind != Frag::C || fr.cols != 8 || fr.collapseRows || fr.collapseCols || fr.droppedAxis >= 0)
    return r.emitError() << "the sm_90 lowering reduces [16, 8] accumulator fragments only (got " << fr.str() << ")";
  if (!cast<VectorType>(r.getSrc().getType()).getElementType().isF32())
    return r.emitError() << "the sm_90 lowering reduces f32 tiles only";
  if (r.getKind() == "argmax") return r.emitError() << "the sm_90 lowering takes the argmax of lane-linear tiles only";
  const bool rows = *r.getAxis() == 1;
  auto el = [&](int64_t i) { return vector::ExtractOp::create(b, loc, r.getSrc(), i).getResult(); };
  // Per lane: rows combine elements (0, 1) and (2, 3); columns (0, 2), (1, 3).
  Value part[2] = {combineReduced(loc, r, el(0), el(rows ? 1 : 2)), combineReduced(loc, r, el(rows ? 2 : 1), el(3))};
  for (Value& v : part)
    v = rows ? combineAcrossLanes(loc, r, v, {1, 2}) : combineAcrossLanes(loc, r, v, {4, 8, 16});
  SmallVector<Value> out = rows ? SmallVector<Value>{part[0], part[0], part[1], part[1]}
                                : SmallVector<Value>{part[0], part[1], part[0], part[1]};
  return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(r.getResult())), out));
}

Value Lowering::combineReduced(Location loc, ReduceOp r, Value a, Value c) {
  if (r.getKind() == "max") return arith::MaximumFOp::create(b, loc, a, c);
  return arith::AddFOp::create(b, loc, a, c);
}

Value Lowering::combineAcrossWarps(ReduceOp r, Value src) {
  Location loc = r.getLoc();
  auto vt = cast<VectorType>(src.getType());
  int64_t n = vt.getNumElements();
  auto slot = [&](Value warp, int64_t i) {
    Value base = arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, warp, cst(n)), cst(i)), cst(32));
    return arith::AddIOp::create(b, loc, base, laneId).getResult();
  };
  for (int64_t i = 0; i < n; ++i)
    memref::StoreOp::create(b, loc, vector::ExtractOp::create(b, loc, src, i), scratch, ValueRange{slot(warpId, i)});
  NVVM::Barrier0Op::create(b, loc);
  SmallVector<Value> out;
  for (int64_t i = 0; i < n; ++i) {
    Value acc;
    for (int64_t w = 0; w < numWarps; ++w) {
      Value v = memref::LoadOp::create(b, loc, scratch, ValueRange{slot(cst(w), i)});
      acc = acc ? combineReduced(loc, r, acc, v) : v;
    }
    out.push_back(acc);
  }
  NVVM::Barrier0Op::create(b, loc);
  return vector::FromElementsOp::create(b, loc, vt, out);
}

Value Lowering::lowerConcat(ConcatOp cc) {
  Location loc = cc.getLoc();
  SmallVector<Value> elems;
  for (Value v : cc.getSrcs())
    for (int64_t i = 0; i < 4; ++i) elems.push_back(vector::ExtractOp::create(b, loc, v, i));
  return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(cc.getResult())), elems));
}

FailureOr<Value> Lowering::lowerMask(MaskOp m) {
  const Frag& fr = frags.of(m.getResult());
  if (fr.kind == Frag::Lane) return lowerLaneMask(m, fr);
  if (fr.kind != Frag::C || fr.cols != 8 || fr.collapseRows || fr.collapseCols || fr.droppedAxis >= 0)
    return m.emitError() << "the sm_90 lowering masks lane-linear tiles and [16, 8] accumulator fragments only (got "
                         << fr.str() << ")";
  SmallVector<Value> keep;
  for (int64_t i = 0; i < fr.size(); ++i) {
    SmallVector<Value> rc = coords(fr, i);
    keep.push_back(keepsElement(m, rc[0], rc[1]));
  }
  return maskedBy(m, keep);
}

Value Lowering::lowerLaneMask(MaskOp m, const Frag& fr) {
  SmallVector<Value> keep;
  forLaneElements(fr, [&](int64_t, SmallVector<Value> idx, Value) { keep.push_back(keepsElement(m, idx[0], idx[1])); });
  return maskedBy(m, keep);
}

Value Lowering::lowerIota(IotaOp io) {
  Location loc = io.getLoc();
  const Frag& fr = frags.of(io.getResult());
  int64_t axis = io.getAxis();
  SmallVector<Value> elems;
  auto push = [&](Value i) {
    Value at = arith::AddIOp::create(b, loc, io.getBase(), i);
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), at);
    elems.push_back(arith::SIToFPOp::create(b, loc, b.getF32Type(), i64));
  };
  if (fr.kind == Frag::Lane) forLaneElements(fr, [&](int64_t, SmallVector<Value> idx, Value) { push(idx[axis]); });
  else
    for (int64_t i = 0; i < fr.size(); ++i) push(coords(fr, i)[axis]);
  return vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(io.getResult())), elems);
}

Value Lowering::keepsElement(MaskOp m, Value row, Value col) {
  Location loc = m.getLoc();
  col = arith::AddIOp::create(b, loc, m.getColBase(), col);
  Value k = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col, m.getLimit());
  if (!m.getCausal()) return k;
  row = arith::AddIOp::create(b, loc, m.getRowBase(), row);
  return arith::AndIOp::create(b, loc, k, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, col, row));
}

Value Lowering::maskedBy(MaskOp m, ArrayRef<Value> keep) {
  Location loc = m.getLoc();
  auto vt = cast<VectorType>(laneType(m.getResult()));
  Value mask = vector::FromElementsOp::create(b, loc, VectorType::get({int64_t(keep.size())}, b.getI1Type()), keep);
  Value ninf = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), -std::numeric_limits<double>::infinity())));
  return arith::SelectOp::create(b, loc, mask, m.getSrc(), ninf);
}

}  // namespace strata::tile::nvvm
