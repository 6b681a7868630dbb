//===- ConvertTileToNVVM.cpp - sm_90 lowering of mma-sized tile IR --------===//
//
// Per-warp tile IR whose tiles are mma.sync fragments (match-target-size
// with the sm_90 row) becomes per-lane code: each tile value is held by the
// 32 lanes of its warp, element i of lane l at the coordinates the PTX ISA
// gives for mma.m16n8k16 operands (g = l / 4, t = l % 4), except that the
// K positions of A and B are permuted (the mma's K slot 2t + j + 8h holds
// the block's K position 4t + j + 2h, j, h in {0, 1}):
//   A [16, 16]: row g + 8 * (i/2 % 2), col 4t + i%2 + 2 * (i/4)     8 per lane
//   B [16,  8]: row 4t + i%2 + 2 * (i/2 % 2), col g (+ 8 * (i/4))    4 (8 for [16, 16])
//   C [16,  8]: row g + 8 * (i/2), col 2t + i%2                      4 per lane
// A dot sums over K, so any permutation of K that A and B share leaves it
// unchanged; every A and B fragment is loaded (or splat) through these
// coordinates, so they all share this one. It gives each lane 4 adjacent K
// elements per fragment row (one 8-byte access for 16-bit types, a whole
// 32-byte sector per 4 lanes) instead of two pairs 16 bytes apart.
// Kernels that stage dot operands through workgroup-local memory
// (tile.alloc, filled by tile.async_copy = cp.async) read them with
// ldmatrix, which yields the ISA's K order: their fragments are not
// permuted (every fragment of such a kernel, so global loads agree).
// Which fragment a tile is follows from its uses (an analysis before the
// rewrite): dot operands fix A, B and C; extracts, elementwise ops, loops
// and broadcasts carry the layout along (a broadcast source holds the same
// lane elements with the broadcast dimension at coordinate 0); a row or
// column reduction of C holds C's elements with that coordinate collapsed.
// Warpgroup dots (match-target-size's form for a B operand loaded from a
// swizzled local buffer) become wgmma.m64nNk16: B, and A when it comes
// from such a buffer too, is never held in registers (fragment Desc: the
// lowering turns the view it was loaded from into a shared-memory matrix
// descriptor); an A in registers is the mma A fragment (wgmma's register
// A of the warp's 16 rows is the same), in the ISA's K order; and their
// [16, N] accumulator holds the N / 8 [16, 8] C fragments one after the
// other (element i: row g + 8 (i/2 % 2), column 8 (i/4) + 2t + i%2), which
// is both wgmma's accumulator order for the warp's 16 rows and what the
// extracts and concats between it and the [16, 8] pieces need.
//===----------------------------------------------------------------------===//
#include "codegen/TileLowering.h"
#include "codegen/Passes.h"
#include "codegen/UArch.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace strata::tile {

#define GEN_PASS_DEF_CONVERTTILETONVVM
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

// The lane layout of one tile (see the file comment).
struct Frag {
  // Lane: a tile of a kernel without dots, `numel` elements spread over the
  // lanes round-robin (element i of lane l is linear index 32 i + l, so a
  // warp's access i is contiguous), or, for a single element, held by every
  // lane.
  // Desc: a warpgroup dot's operand, left in local memory (no registers).
  enum Kind { A, B, C, Lane, Desc } kind = C;
  int64_t cols = 8;            // B: 8 or 16 columns (an unsplit [16, 16] B load); C: 8 or a warpgroup dot's N
  bool collapseRows = false;   // a [1, n] broadcast source: row coordinate 0
  bool collapseCols = false;   // a [m, 1] broadcast source: column coordinate 0
  int64_t droppedAxis = -1;    // a 1-D tile (expand_dims source): this axis is gone
  int64_t numel = 0;           // Lane: elements of the tile
  // Lane: contiguous elements a lane holds per round (laneLinear); more
  // than 1 only on whole rounds (numel a multiple of 32 vec) whose rows
  // are whole vectors.
  int64_t vec = 1;
  bool permuteK = true;        // A, B: K permuted (else the ISA's order)
  SmallVector<int64_t, 2> shape;  // Lane: the tile's shape

  // `vec`: the kernel's tile.lane_vector, taken where the tile allows it.
  static Frag lane(RankedTensorType t, int64_t vec = 1) {
    Frag f{Lane};
    f.numel = t.getNumElements();
    f.shape.assign(t.getShape().begin(), t.getShape().end());
    if (vec > 1 && f.numel % (32 * vec) == 0 && f.shape.back() % vec == 0) f.vec = vec;
    return f;
  }

  int64_t size() const {
    if (kind == Lane) return numel == 1 ? 1 : (numel + 31) / 32;
    if (kind == Desc) return 1;
    return kind == A ? 8 : 4 * cols / 8;
  }
  bool operator==(const Frag& o) const {
    return kind == o.kind && numel == o.numel && vec == o.vec && shape == o.shape && cols == o.cols &&
           permuteK == o.permuteK &&
           collapseRows == o.collapseRows &&
           collapseCols == o.collapseCols && droppedAxis == o.droppedAxis;
  }
  // Offsets of element i from the lane's base coordinates (see the file
  // comment: K, A's columns and B's rows, permuted or in the ISA's order).
  int64_t kStep() const { return permuteK ? 2 : 8; }
  int64_t rowOff(int64_t i) const {
    return kind == A ? 8 * ((i >> 1) & 1) : kind == B ? (i & 1) + kStep() * ((i >> 1) & 1) : 8 * ((i >> 1) & 1);
  }
  // The lane's base row is g (A, C) or the K base (B); the base column the
  // K base (A), g (B) or 2t (C); the K base is 4t permuted, else 2t: see
  // Lowering::coords.
  int64_t colOff(int64_t i) const {
    return kind == A ? (i & 1) + kStep() * (i >> 2) : kind == B ? 8 * (i >> 2) : 8 * (i >> 2) + (i & 1);
  }
  std::string str() const {
    if (kind == Lane)
      return "lane-linear [" + std::to_string(numel) + "]" + (vec > 1 ? " x" + std::to_string(vec) : std::string());
    const char* k[] = {"A", "B", "C", "", "warpgroup operand"};
    std::string wide = kind == C && cols != 8 ? " [16, " + std::to_string(cols) + "]" : "";
    return k[kind] + wide + (collapseRows ? " (row broadcast)" : "") + (collapseCols ? " (column broadcast)" : "");
  }
};

bool isElementwise(Operation* op) {
  if (isa<ConvertOp, SiluOp, MaskOp, arith::SelectOp>(op)) return true;
  Dialect* d = op->getDialect();
  return d && (isa<arith::ArithDialect, math::MathDialect>(d)) && op->getNumResults() == 1 &&
         isa<RankedTensorType>(op->getResult(0).getType()) && !isa<arith::ConstantOp>(op);
}

// The local load a warpgroup dot operand comes from (through the extracts
// and concats match-target-size put between), or null.
LoadOp groupOperandLoad(Value v) {
  for (;;) {
    if (auto e = v.getDefiningOp<ExtractOp>()) v = e.getSrc();
    else if (auto c = v.getDefiningOp<ConcatOp>()) v = c.getSrcs().front();
    else break;
  }
  return isGroupDotOperand(v) ? v.getDefiningOp<LoadOp>() : LoadOp();
}
// A warpgroup dot: B from a swizzled buffer (A from one or from registers).
bool isGroupDot(DotOp d) { return bool(groupOperandLoad(d.getB())); }

// Decides every tile value's fragment; reports the first conflict.
class FragAnalysis {
 public:
  // `permuteK`: A and B fragments take the permuted K order (else the ISA's).
  LogicalResult run(func::FuncOp f, bool hasDot, bool permuteK) {
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
      return success();
    }
    bool changed = true;
    while (changed && ok) {
      changed = false;
      f.walk([&](Operation* op) { changed |= visit(op); });
    }
    if (!ok) return failure();
    // Tiles no use decides (a stored-only tile) take the accumulator layout.
    f.walk([&](Operation* op) {
      for (Value r : op->getResults())
        if (auto t = dyn_cast<RankedTensorType>(r.getType()); t && !frags.count(r)) set(r, Frag{}, op);
    });
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
  const Frag& of(Value v) const { return frags.find(v)->second; }
  // `to` replaces `from` in the rewrite: it holds the same fragment.
  void replaced(Value from, Value to) {
    if (auto it = frags.find(from); it != frags.end()) frags[to] = Frag(it->second);
  }

 private:
  bool set(Value v, const Frag& f, Operation* at) {
    if (!ok) return false;
    auto [it, inserted] = frags.try_emplace(v, f);
    if (inserted) return true;
    if (!(it->second == f)) {
      at->emitError() << "tile used both as mma fragment " << it->second.str() << " and " << f.str();
      ok = false;
    }
    return false;
  }
  std::optional<Frag> get(Value v) const {
    auto it = frags.find(v);
    return it == frags.end() ? std::nullopt : std::optional<Frag>(it->second);
  }
  // All of `vals` take one fragment (the first one known).
  bool unify(ArrayRef<Value> vals, Operation* at) {
    std::optional<Frag> f;
    for (Value v : vals)
      if (isa<RankedTensorType>(v.getType()) && (f = get(v))) break;
    if (!f) return false;
    bool changed = false;
    for (Value v : vals)
      if (isa<RankedTensorType>(v.getType())) changed |= set(v, *f, at);
    return changed;
  }

  bool visit(Operation* op) {
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

  void checkShape(Value v, RankedTensorType t, Operation* at) {
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

  DenseMap<Value, Frag> frags;
  bool ok = true, permuteK = true;
};

// What the rewrite needs to know about workgroup-local memory, gathered
// from the tile IR before it (the ops' operands are views by the time each
// op is lowered).
struct LocalMemory {
  memref::GlobalOp dynamic;                           // the kernel's dynamic shared memory (bytes)
  DenseMap<Operation*, int64_t> allocs;               // tile.alloc -> its byte offset in it
  DenseSet<Operation*> loads;                         // tile.load of a local view
  DenseMap<Operation*, RankedTensorType> copyBlocks;  // tile.async_copy -> its block
  DenseSet<Operation*> swizzledCopies;                // tile.async_copy into a swizzled buffer
  DenseSet<Operation*> swizzledStores;                // tile.store into a swizzled buffer (for tile.tma_store)
  DenseMap<Operation*, int64_t> mbarrierCounts;       // tile.mbarrier_init -> mbarriers in its buffer
  // Warpgroup dots that open / close a run of them in their block (the
  // run is fenced before and committed after as one wgmma group).
  DenseSet<Operation*> groupDotFirst, groupDotLast;
  // Last dots of runs that a tile.group_dot_wait ends: committed, not waited for.
  DenseSet<Operation*> groupDotDeferred;
  DenseSet<Operation*> nMajorB;  // warpgroup dots whose B view is N-contiguous
};

// The 128-byte swizzle (tile.alloc's `swizzle`): the 16-byte chunk of a
// byte offset (bits 4-6) xor its row within the 8-row atom (bits 7-9).
constexpr int64_t kSwizzleRowBytes = 128, kSwizzleAtomBytes = 1024;

// The suspend-time hint of an mbarrier wait's try_wait, in ns (an upper
// bound on one try; the hardware may return earlier).
constexpr int64_t kMBarrierSuspendNs = 10000000;

// offset + sum(idx_d * stride_d): element `idx` of a strided view as an
// index into its base buffer.
Value linearIndex(OpBuilder& b, Location loc, Value offset, ValueRange strides, ArrayRef<Value> idx) {
  Value lin = offset;
  for (auto [i, st] : llvm::zip(idx, strides))
    lin = arith::AddIOp::create(b, loc, lin, arith::MulIOp::create(b, loc, i, st));
  return lin;
}

class Lowering {
 public:
  // `scratch`: the kernel's shared-memory global (null without cross-warp
  // reductions), f32, numWarps x 32 x the largest lane vector reduced.
  Lowering(func::FuncOp f, FragAnalysis& frags, memref::GlobalOp scratch, const LocalMemory& local)
      : f(f), frags(frags), b(f.getContext()), scratchGlobal(scratch), local(local) {}

  LogicalResult run() {
    int64_t numWarps = 1;
    if (auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps")) numWarps = a.getInt();
    Block& entry = f.getBody().front();
    for (BlockArgument a : entry.getArguments()) a.setType(memRefTypeOf(a.getType()));
    f.setType(FunctionType::get(f.getContext(), entry.getArgumentTypes(), f.getResultTypes()));

    // Lane coordinates, once per kernel: warp = tid / 32, g = lane / 4, 2t, 4t.
    Location loc = f.getLoc();
    b.setInsertionPointToStart(&entry);
    tid = arith::IndexCastOp::create(b, loc, b.getIndexType(), NVVM::ThreadIdXOp::create(b, loc, b.getI32Type()));
    Value lane = arith::RemUIOp::create(b, loc, tid, cst(32));
    laneId = lane;
    warpId = arith::DivUIOp::create(b, loc, tid, cst(32));
    group = arith::DivUIOp::create(b, loc, lane, cst(4));
    if (scratchGlobal) scratch = memref::GetGlobalOp::create(b, loc, scratchGlobal.getType(), scratchGlobal.getSymName());
    this->numWarps = numWarps;
    Value t = arith::RemUIOp::create(b, loc, lane, cst(4));
    pair = arith::MulIOp::create(b, loc, t, cst(2));
    quad = arith::MulIOp::create(b, loc, t, cst(4));

    LogicalResult status = rewriteTileOps(
        b, &entry, [&](Value v) { return laneType(v); }, [&](Operation* op) { return lower(op); },
        [&](Value from, Value to) { frags.replaced(from, to); });
    if (failed(status)) return failure();
    // The block size: marked as a kernel once the function is an llvm.func.
    f->setAttr("tile.num_warps", b.getI64IntegerAttr(numWarps));
    return success();
  }

 private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, f.getLoc(), v); }

  // The per-lane vector of a tile value; other types unchanged.
  Type laneType(Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) return memRefTypeOf(v.getType());
    return VectorType::get({frags.of(v).size()}, t.getElementType());
  }

  // The view indices of element i of `fr` for this lane (rank of the view).
  SmallVector<Value> coords(const Frag& fr, int64_t i) {
    Value kBase = fr.permuteK ? quad : pair;
    Value rowBase = fr.kind == Frag::B ? kBase : group, colBase = fr.kind == Frag::A ? kBase : fr.kind == Frag::B ? group : pair;
    Location loc = f.getLoc();
    Value r = fr.collapseRows ? cst(0) : arith::AddIOp::create(b, loc, rowBase, cst(fr.rowOff(i))).getResult();
    Value c = fr.collapseCols ? cst(0) : arith::AddIOp::create(b, loc, colBase, cst(fr.colOff(i))).getResult();
    if (fr.droppedAxis == 0) return {c};
    if (fr.droppedAxis == 1) return {r};
    return {r, c};
  }

  // i < size_d for every index of `idx` into `view`.
  Value inBounds(Location loc, Value view, ArrayRef<Value> idx) {
    Value ok;
    for (auto [d, i] : llvm::enumerate(idx)) {
      Value size = memref::DimOp::create(b, loc, view, d);
      Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, size);
      ok = ok ? arith::AndIOp::create(b, loc, ok, in).getResult() : in;
    }
    return ok;
  }

  // Element `idx` of `view`, or 0 where `ok` (when given) is false.
  Value loadElement(Location loc, Value view, ArrayRef<Value> idx, Type et, Value ok) {
    if (!ok) return memref::LoadOp::create(b, loc, view, idx);
    auto guarded = scf::IfOp::create(b, loc, et, ok, true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(guarded.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange{memref::LoadOp::create(b, loc, view, idx)});
    b.setInsertionPointToStart(guarded.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantOp::create(b, loc, b.getZeroAttr(et))});
    return guarded.getResult(0);
  }
  // Stores `v` at `idx` of `view` where `ok` (when given) holds.
  void storeElement(Location loc, Value v, Value view, ArrayRef<Value> idx, Value ok) {
    if (!ok) {
      memref::StoreOp::create(b, loc, v, view, idx);
      return;
    }
    auto guarded = scf::IfOp::create(b, loc, TypeRange{}, ok, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(guarded.thenBlock());
    memref::StoreOp::create(b, loc, v, view, idx);
  }

  // A flat view of a load's array for R-element accesses: base buffer as
  // memref<?xT>, the view's offset and strides, the run length R.
  struct RunView {
    Value flat, offset;
    SmallVector<Value> strides;
    int64_t dim = 0, run = 2;
    Value load(OpBuilder& b, Location loc, ArrayRef<Value> idx, Type et, int64_t n) const {
      Value lin = linearIndex(b, loc, offset, strides, idx);
      int64_t bytes = n * et.getIntOrFloatBitWidth() / 8;
      return vector::LoadOp::create(b, loc, VectorType::get({n}, et), flat, ValueRange{lin}, /*nontemporal=*/false,
                                    llvm::MaybeAlign(bytes));
    }
    void store(OpBuilder& b, Location loc, Value v, ArrayRef<Value> idx) const {
      auto vt = cast<VectorType>(v.getType());
      Value lin = linearIndex(b, loc, offset, strides, idx);
      int64_t bytes = vt.getNumElements() * vt.getElementType().getIntOrFloatBitWidth() / 8;
      vector::StoreOp::create(b, loc, v, flat, ValueRange{lin}, /*nontemporal=*/false, llvm::MaybeAlign(bytes));
    }
  };

  // Set when `l` promises `contiguous = d` (runs of `run` elements along d)
  // of a full 2-D view of 16-bit elements (of 16- or 32-bit ones for a
  // lane-linear tile, whose vectors are 16 bytes at most: 8 or 4 elements;
  // of 32-bit ones for an accumulator, whose column pairs are 8 bytes):
  // elements of the fragment that form an aligned run along d then load as
  // one wider access (see runsOf).
  // (A store's promise, the same attributes, likewise.)
  template <typename Op>
  std::optional<RunView> runView(Op l, const Frag& fr, Type et) {
    auto d = l.getContiguous();
    const int64_t bits = et.getIntOrFloatBitWidth();
    if (!d || !l.getInBounds() || fr.collapseRows || fr.collapseCols || fr.droppedAxis >= 0 ||
        !(bits == 16 || (bits == 32 && ((fr.kind == Frag::Lane && fr.vec <= 4) || fr.kind == Frag::C))))
      return std::nullopt;
    Location loc = l.getLoc();
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, l.getPtr());
    auto flatType = MemRefType::get({ShapedType::kDynamic}, et);
    Value flat = memref::ReinterpretCastOp::create(b, loc, flatType, md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
                                                   ArrayRef<OpFoldResult>{b.getIndexAttr(INT32_MAX)},
                                                   ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    return RunView{flat, md.getOffset(), SmallVector<Value>(md.getStrides().begin(), md.getStrides().end()), int64_t(*d),
                   int64_t(l.getRun().value_or(2))};
  }

  // The fragment's elements grouped into accesses: each group lists element
  // indices in increasing position along `dim`; a group of n > 1 is an
  // n-element run starting at a multiple of n (n <= maxRun, and n divides
  // the lane's base coordinate along `dim`, so the run is aligned).
  // Singletons where no run forms.
  static SmallVector<SmallVector<int64_t, 4>> runsOf(const Frag& fr, int64_t dim, int64_t maxRun) {
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

  // Lane-linear tiles (kernels without dots). Element i of this lane is
  // linear index 32 i + lane (index 0 in every lane for a single element),
  // or with vectors of v = fr.vec elements (i / v) 32 v + v lane + i % v.
  Value laneLinear(Location loc, const Frag& fr, int64_t i) {
    if (fr.numel == 1) return cst(0);
    if (fr.vec == 1) return arith::AddIOp::create(b, loc, laneId, cst(32 * i)).getResult();
    Value base = arith::MulIOp::create(b, loc, laneId, cst(fr.vec));
    return arith::AddIOp::create(b, loc, base, cst(i / fr.vec * 32 * fr.vec + i % fr.vec)).getResult();
  }
  // The view indices of this lane's element i (laneLinear's position).
  SmallVector<Value> laneIndices(Location loc, const Frag& fr, int64_t i) {
    Value e = laneLinear(loc, fr, i);
    if (fr.shape.size() != 2) return {e};
    return {arith::DivUIOp::create(b, loc, e, cst(fr.shape[1])).getResult(),
            arith::RemUIOp::create(b, loc, e, cst(fr.shape[1])).getResult()};
  }
  // `each(i, idx, pred)` is called per element with its view indices and,
  // for the last round of a tile that does not fill it, the lane predicate
  // (null when every lane holds a real element).
  void forLaneElements(const Frag& fr, llvm::function_ref<void(int64_t, SmallVector<Value>, Value)> each) {
    Location loc = f.getLoc();
    for (int64_t i = 0; i < fr.size(); ++i) {
      Value pred;
      if (fr.numel > 1 && 32 * (i + 1) > fr.numel)
        pred = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, laneId, cst(fr.numel - 32 * i));
      each(i, laneIndices(loc, fr, i), pred);
    }
  }
  Value both(Location loc, Value a, Value c) { return !a ? c : !c ? a : arith::AndIOp::create(b, loc, a, c).getResult(); }

  Value lowerLaneLoad(LoadOp l, const Frag& fr) {
    Location loc = l.getLoc();
    auto vt = cast<VectorType>(laneType(l.getResult()));
    Type et = vt.getElementType();
    SmallVector<Value> elems;
    // A lane's vectors as one access each, where the load promises aligned
    // runs along the last dim at least that long (in bounds).
    if (fr.vec > 1) {
      std::optional<RunView> runs = runView(l, fr, et);
      if (runs && runs->dim == (int64_t)fr.shape.size() - 1 && runs->run >= fr.vec) {
        // (Whole rounds: no lane predicate.)
        for (int64_t i = 0; i < fr.size(); i += fr.vec) {
          Value v = runs->load(b, loc, laneIndices(loc, fr, i), et, fr.vec);
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

  void lowerLaneStore(StoreOp s, const Frag& fr) {
    Location loc = s.getLoc();
    // A lane's vectors as one access each, as lowerLaneLoad's.
    if (fr.vec > 1) {
      Type et = cast<VectorType>(s.getValue().getType()).getElementType();
      std::optional<RunView> runs = runView(s, fr, et);
      if (runs && runs->dim == (int64_t)fr.shape.size() - 1 && runs->run >= fr.vec) {
        for (int64_t i = 0; i < fr.size(); i += fr.vec) {
          SmallVector<int64_t> pos = llvm::to_vector(llvm::seq<int64_t>(i, i + fr.vec));
          Value v = vector::ShuffleOp::create(b, loc, s.getValue(), s.getValue(), pos);
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

  // A reduction of a whole lane-linear tile (the kept dim is 1) to one value
  // every lane holds: each lane combines its elements (identity for the
  // missing ones of a partial round), then five butterfly shuffles.
  FailureOr<Value> lowerLaneReduce(ReduceOp r, const Frag& fr) {
    Location loc = r.getLoc();
    if (frags.of(r.getResult()).numel != 1)
      return r.emitError() << "the sm_90 lowering reduces a kernel's lane-linear tiles whole (the kept dims must be 1)";
    if (!cast<VectorType>(r.getSrc().getType()).getElementType().isF32())
      return r.emitError() << "the sm_90 lowering reduces f32 tiles only";
    if (r.getKind() == "argmax") return lowerLaneArgmax(r, fr);
    bool isMax = r.getKind() == "max";
    auto combine = [&](Value a, Value c) { return combineReduced(loc, r, a, c); };
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

  // The index of a whole lane-linear tile's largest element (the lowest on
  // ties), as f32, in every lane. Each lane keeps a (value, index) pair:
  // its elements sit at lane + 32 i; the five butterfly shuffles exchange
  // pairs. A pair wins on a larger value or an equal one at a lower index
  // (so -inf elements still give an index; NaN never wins).
  Value lowerLaneArgmax(ReduceOp r, const Frag& fr) {
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

  // `v` combined (as `r` combines) with the lanes whose ids differ from
  // this lane's in the bits `offsets` name: one butterfly shuffle each.
  Value combineAcrossLanes(Location loc, ReduceOp r, Value v, ArrayRef<int32_t> offsets) {
    Value all = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1));
    Value clamp = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(31));
    for (int32_t off : offsets) {
      Value o = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(off));
      v = combineReduced(loc, r, v, NVVM::ShflOp::create(b, loc, b.getF32Type(), all, v, o, clamp, NVVM::ShflKind::bfly, UnitAttr()));
    }
    return v;
  }

  // A row (axis 1) or column (axis 0) reduction of a [16, 8] accumulator
  // fragment (element i at row g + 8 (i / 2), column 2t + i % 2; match-
  // target-size splits wider tiles and combines the pieces along the
  // reduced axis elementwise before this one reduction). Rows: each lane combines its two columns per row, then
  // the 4 lanes of a row (same g: lane bits 0-1) by butterfly shuffles;
  // columns: its two rows per column, then the 8 lanes of a column (same t:
  // lane bits 2-4). The result keeps the fragment's element numbering with
  // the reduced coordinate gone (rows: [r(g), r(g), r(g+8), r(g+8)];
  // columns: [c(2t), c(2t+1), c(2t), c(2t+1)]), so it broadcasts back
  // through expand_dims + broadcast without data movement.
  FailureOr<Value> lowerFragmentReduce(ReduceOp r, const Frag& fr) {
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

  // a + c or max(a, c) as the reduction `r` combines.
  Value combineReduced(Location loc, ReduceOp r, Value a, Value c) {
    if (r.getKind() == "max") return arith::MaximumFOp::create(b, loc, a, c);
    return arith::AddFOp::create(b, loc, a, c);
  }

  // A cross-warp sum or max of a tile every warp holds whole (same lane
  // elements in every warp) through the scratch block: write, barrier,
  // combine all warps' values, barrier (the scratch is reused).
  Value combineAcrossWarps(ReduceOp r, Value src) {
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

  // A generic pointer to the data of a view (its aligned pointer: global
  // addresses are generic addresses, and tile.alloc views are generic
  // pointers into .shared).
  Value genericPointer(Location loc, Value view) {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, view);
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
    return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
  }

  // The address of element `idx` of the view `view` as an LLVM pointer in
  // address space `space` (1 global, 3 shared). Views of tile.alloc
  // buffers are generic pointers into .shared (see lowerAlloc). The view's
  // base is cast to `space` first and the element offset added there (a
  // GEP), so the accesses of one view share one base register and their
  // constant offsets become immediates (shared addresses are 32-bit: see
  // CudaBackend's short pointers); offsets added to the generic pointer
  // cost a 64-bit register and a cvta per access.
  // `swizzled`: the view's buffer is a swizzled tile.alloc (its byte
  // offsets are permuted; the buffer starts on an atom boundary).
  Value elementPtr(Location loc, Value view, ArrayRef<Value> idx, unsigned space, bool swizzled = false) {
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, view);
    Value lin = linearIndex(b, loc, md.getOffset(), md.getStrides(), idx);
    int64_t bytes = cast<MemRefType>(view.getType()).getElementTypeBitWidth() / 8;
    Value inSpace =
        LLVM::AddrSpaceCastOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), space), genericPointer(loc, view));
    Value byteOff = arith::MulIOp::create(b, loc, lin, cst(bytes));
    if (swizzled) {
      Value chunkRow = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, byteOff, cst(3)), cst(0x70));
      byteOff = arith::XOrIOp::create(b, loc, byteOff, chunkRow);
    }
    Value off = arith::IndexCastOp::create(b, loc, b.getI64Type(), byteOff);
    return LLVM::GEPOp::create(b, loc, inSpace.getType(), b.getI8Type(), inSpace, ValueRange{off});
  }

  // tile.alloc: its bytes of the kernel's dynamic shared memory as a generic
  // memref<?xT> (what every tile.ptr is), so views of it are built like any
  // other.
  Value lowerAlloc(AllocOp a) {
    Location loc = a.getLoc();
    memref::GlobalOp g = local.dynamic;
    Value shared = memref::GetGlobalOp::create(b, loc, g.getType(), g.getSymName());
    auto i8 = b.getI8Type();
    Value bytes = memref::MemorySpaceCastOp::create(b, loc, MemRefType::get(g.getType().getShape(), i8), shared);
    bytes = memref::CastOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, i8), bytes);
    return memref::ViewOp::create(b, loc, memRefTypeOf(a.getType()), bytes, cst(local.allocs.lookup(a)),
                                  ValueRange{cst(a.getSize())});
  }

  // tile.async_copy: the workgroup's threads take the block's 16-byte runs
  // (8 elements along the contiguous dim) round-robin, one cp.async.cg each;
  // a run that leaves the source array copies what is inside (cp.async's
  // source size) and zero-fills the rest.
  // When a thread has several runs and the threads cover whole lines
  // (threads a multiple of the runs per line), its runs keep their place
  // along the contiguous dim and step a fixed number of lines: the index
  // math, the row's room and the run's bytes are computed once per copy and
  // every run adds a constant (an address immediate when the strides are
  // constants), one compare and one select besides the copy (the per-run
  // form took about 14 instructions a run on sm_90). A run with nothing
  // inside copies 0 bytes from its own address (cp.async reads nothing).
  // Copies of one run a thread (the paged prefill's pages over 8 warps)
  // keep the per-run form: nothing to amortize, and on the H100
  // (2026-11-23) the hoisted form spilled that kernel (stack 48 -> 104
  // bytes, wgmma serialized: 0.80x the TFLOP/s).
  LogicalResult lowerAsyncCopy(AsyncCopyOp c) {
    Location loc = c.getLoc();
    RankedTensorType block = local.copyBlocks.lookup(c);
    int64_t d = c.getContiguous(), o = 1 - d;
    if (block.getRank() != 2) return c.emitError() << "the sm_90 lowering copies 2-D blocks";
    int64_t perLine = block.getDimSize(d) / 8, total = block.getNumElements() / 8, threads = 32 * numWarps;
    const bool regular = threads % perLine == 0 && total > threads;
    const int64_t linesPerStep = threads / perLine;
    Value dst = c.getDst(), src = c.getSrc();
    const int64_t eltBytes = cast<MemRefType>(src.getType()).getElementTypeBitWidth() / 8;
    if (eltBytes != 2) return c.emitError() << "the sm_90 lowering copies runs of 8 16-bit elements";
    auto i32c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v).getResult(); };
    // The run's place: along d (a multiple of 8) and along o.
    auto place = [&](int64_t it) -> std::pair<Value, Value> {
      if (regular) {
        Value alongO = arith::DivUIOp::create(b, loc, tid, cst(perLine));
        if (it) alongO = arith::AddIOp::create(b, loc, alongO, cst(it * linesPerStep));
        return {arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, tid, cst(perLine)), cst(8)), alongO};
      }
      Value chunk = arith::AddIOp::create(b, loc, tid, cst(it * threads));
      return {arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, chunk, cst(perLine)), cst(8)),
              arith::DivUIOp::create(b, loc, chunk, cst(perLine))};
    };
    // Bounds (not in_bounds): elements of a run inside the array along d,
    // min(8, size_d - along_d) (at least 0), as bytes; the lines left from
    // the thread's first run along o, as an i32.
    Value sizeD, sizeO, fullBytes, room;
    if (!c.getInBounds()) {
      sizeD = memref::DimOp::create(b, loc, src, d);
      sizeO = memref::DimOp::create(b, loc, src, o);
      if (regular) {
        auto [alongD, alongO] = place(0);
        fullBytes = runBytes(loc, sizeD, alongD, eltBytes);
        // Views have sizes >= 0 and a run's line is under 2^31, so the
        // room is above -2^31: capped at 2^30 it fits an i32.
        Value left = arith::MinSIOp::create(b, loc, arith::SubIOp::create(b, loc, sizeO, alongO), cst(int64_t(1) << 30));
        room = opaqueI32(loc, i32(loc, left));
      }
    }
    Value first;  // the source address of the thread's first run
    for (int64_t it = 0; it * threads < total; ++it) {
      OpBuilder::InsertionGuard guard(b);
      if ((it + 1) * threads > total) {
        Value chunk = arith::AddIOp::create(b, loc, tid, cst(it * threads));
        auto inside = scf::IfOp::create(b, loc, TypeRange{},
                                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, chunk, cst(total)), false);
        b.setInsertionPointToStart(inside.thenBlock());
      }
      auto [alongD, alongO] = place(it);
      SmallVector<Value> idx = d == 1 ? SmallVector<Value>{alongO, alongD} : SmallVector<Value>{alongD, alongO};
      Value to = elementPtr(loc, dst, idx, 3, local.swizzledCopies.contains(c));
      Value bytes;
      SmallVector<Value> srcIdx = idx;
      if (!c.getInBounds() && regular) {
        Value rowIn = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i32c(it * linesPerStep), room);
        bytes = arith::SelectOp::create(b, loc, rowIn, fullBytes, i32c(0));
      } else if (!c.getInBounds()) {
        // The per-run form: the run's bytes, and an address inside the
        // array (the block's first element when the run has nothing inside).
        Value rowIn = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, alongO, sizeO);
        bytes = arith::SelectOp::create(b, loc, rowIn, runBytes(loc, sizeD, alongD, eltBytes), i32c(0));
        Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, bytes, i32c(0));
        for (Value& i : srcIdx) i = arith::SelectOp::create(b, loc, any, i, cst(0));
      }
      // The source: in the hoisted form the thread's first run's address
      // plus a constant step, so the address arithmetic is done once.
      Value from;
      if (regular && it) {
        Value step = arith::MulIOp::create(b, loc, memref::ExtractStridedMetadataOp::create(b, loc, src).getStrides()[o],
                                           cst(it * linesPerStep * eltBytes));
        from = LLVM::GEPOp::create(b, loc, first.getType(), b.getI8Type(), first,
                                   ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), step)});
      } else {
        from = elementPtr(loc, src, srcIdx, 1);
        if (regular) first = from;
      }
      NVVM::CpAsyncOp::create(b, loc, to, from, 16u, NVVM::LoadCacheModifierKind::CG, bytes);
    }
    return success();
  }

  // A tile.block_lookup whose value the loop carries to its next step: one
  // 8-byte ld.global, issued where the IR puts it. As an ordinary load LLVM
  // sank it to its first use: the paged decode form's look-ahead lookups
  // landed right before the copies they feed, and waiting on them was a
  // third of that kernel's stall samples (H100, Nsight Compute,
  // 2026-11-23). Other lookups stay ordinary loads (pinning all of them
  // spilled the paged prefill: stack 40 -> 56 bytes). Tables are i64
  // arrays (8-byte aligned).
  Value lowerPinnedLookup(BlockLookupOp l) {
    Location loc = l.getLoc();
    Value at = elementPtr(loc, l.getTable(), {l.getIndex()}, 1);
    Value v = inlinePtx(loc, b.getI64Type(), ValueRange{at}, "ld.global.b64 $0, [$1];", "=l,l", /*sideEffects=*/true);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }

  // tile.arrive: a barrier (every thread's earlier stores are issued),
  // then thread 0 fences (release at device scope) and adds one to the
  // counter; the arrival that makes it `count` stores zero back and fences
  // again (acquire). A barrier reduction (bar.red.or) hands thread 0's
  // verdict to every thread and orders its acquire before their later
  // loads: the pattern of a split-K semaphore (CUTLASS's, for one).
  Value lowerArrive(ArriveOp a) {
    Location loc = a.getLoc();
    Type i32 = b.getI32Type();
    NVVM::Barrier0Op::create(b, loc);
    Value at = elementPtr(loc, a.getCounters(), {a.getIndex()}, 1);
    Value lastCount = arith::IndexCastOp::create(b, loc, i32, arith::SubIOp::create(b, loc, a.getCount(), cst(1)));
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{i32}, first, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value last = inlinePtx(loc, i32, ValueRange{at, lastCount},
                             "{\n.reg .u32 old, zero;\n.reg .pred p;\nfence.acq_rel.gpu;\n"
                             "atom.global.add.u32 old, [$1], 1;\nsetp.eq.u32 p, old, $2;\nmov.u32 zero, 0;\n"
                             "@p st.global.u32 [$1], zero;\n@p fence.acq_rel.gpu;\nselp.u32 $0, 1, 0, p;\n}",
                             "=r,l,r", /*sideEffects=*/true);
      scf::YieldOp::create(b, loc, last);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, i32, 0).getResult()});
    }
    Value all = inlinePtx(loc, i32, ValueRange{ifOp.getResult(0)},
                          "{\n.reg .pred p, q;\nsetp.ne.u32 p, $1, 0;\nbar.red.or.pred q, 0, p;\nselp.u32 $0, 1, 0, q;\n}",
                          "=r,r", /*sideEffects=*/true);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, all,
                                 arith::ConstantIntOp::create(b, loc, i32, 0).getResult());
  }

  // `v` through a register move LLVM cannot see through: the per-run row
  // tests compare an i32 whose range is known, and LLVM would widen them
  // back into 64-bit compares (two instructions each on sm_90).
  Value opaqueI32(Location loc, Value v) {
    return inlinePtx(loc, b.getI32Type(), ValueRange{v}, "mov.b32 $0, $1;", "=r,r", /*sideEffects=*/false);
  }

  // Inline PTX `text` with LLVM constraints, one result of type `type`;
  // `sideEffects` keeps LLVM from moving it across other such operations.
  Value inlinePtx(Location loc, Type type, ValueRange operands, StringRef text, StringRef constraints, bool sideEffects) {
    return LLVM::InlineAsmOp::create(b, loc, type, operands, text, constraints, sideEffects, /*is_align_stack=*/false,
                                     LLVM::tailcallkind::TailCallKind::None,
                                     LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
                                     /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }

  // Bytes of a run of 8 elements at `along` of a dim of `size` elements
  // inside it: min(8, size - along) elements, at least 0, as an i32.
  Value runBytes(Location loc, Value size, Value along, int64_t eltBytes) {
    Value left = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, size, along), cst(0));
    return i32(loc, arith::MulIOp::create(b, loc, arith::MinSIOp::create(b, loc, left, cst(8)), cst(eltBytes)));
  }

  // Thread 0 alone runs what `body` builds.
  void onThreadZero(Location loc, llvm::function_ref<void()> body) {
    OpBuilder::InsertionGuard guard(b);
    auto first = scf::IfOp::create(b, loc, TypeRange{}, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0)),
                                   false);
    b.setInsertionPointToStart(first.thenBlock());
    body();
  }

  Value i32(Location loc, Value index) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), index); }

  // tile.mbarrier_init: thread 0 initializes every mbarrier of the buffer,
  // fences the inits for the async proxy (the TMA unit completes
  // transactions on them) and the workgroup barrier publishes them.
  void lowerMBarrierInit(MBarrierInitOp m) {
    Location loc = m.getLoc();
    onThreadZero(loc, [&] {
      Value count = arith::ConstantIntOp::create(b, loc, b.getI32Type(), m.getArrivals());
      for (int64_t i = 0, n = local.mbarrierCounts.lookup(m); i < n; ++i)
        NVVM::MBarrierInitOp::create(b, loc, elementPtr(loc, m.getBarriers(), {cst(i)}, 3), count, Value());
      NVVM::FenceMbarrierInitOp::create(b, loc);
    });
    NVVM::Barrier0Op::create(b, loc);
  }

  // tile.tma_copy: thread 0 arrives on the barrier announcing the block's
  // bytes, then issues cp.async.bulk.tensor.2d (the TMA unit writes the
  // swizzled rows and completes the bytes on the barrier).
  void lowerTmaCopy(TmaCopyOp c) {
    Location loc = c.getLoc();
    RankedTensorType block = local.copyBlocks.lookup(c);
    int64_t bytes = block.getNumElements() * block.getElementTypeBitWidth() / 8;
    onThreadZero(loc, [&] {
      Value bar = elementPtr(loc, c.getBarriers(), {c.getSlot()}, 3);
      NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar,
                                             arith::ConstantIntOp::create(b, loc, b.getI32Type(), bytes),
                                             NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA),
                                             b.getBoolAttr(false), Value());
      // The PTX 8.0 form writes to shared::cluster (address space 7): the
      // CTA's own shared window lies inside it at the same addresses.
      Value dst = LLVM::AddrSpaceCastOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7),
                                                elementPtr(loc, c.getDst(), {cst(0), cst(0)}, 3));
      SmallVector<Value> coords;
      for (Value v : c.getCoords()) coords.push_back(i32(loc, v));
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(b, loc, dst, genericPointer(loc, c.getMap()), coords, bar,
                                                             ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE,
                                                             false, NVVM::CTAGroupKindAttr(), Value());
    });
  }

  // fence.proxy.async.shared::cta: this thread's generic-proxy accesses of
  // shared memory become ordered with the async proxy's (wgmma, TMA).
  void fenceAsyncShared(Location loc) {
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
                               NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
  }

  // tile.store into a swizzled buffer (a block for tile.tma_store): each
  // aligned run of the fragment (at most 8 elements, 16 bytes: it never
  // crosses a swizzle chunk) is one store at its swizzled address. A warp's
  // accumulator pairs of 8 rows then spread over more banks than a dense
  // buffer's, which puts rows 128 bytes apart on the same ones.
  FailureOr<Value> lowerSwizzledStore(StoreOp s) {
    Location loc = s.getLoc();
    const Frag& fr = frags.of(s.getValue());
    Type et = cast<VectorType>(s.getValue().getType()).getElementType();
    std::optional<RunView> runs = runView(s, fr, et);
    if (!runs || runs->dim != 1)
      return s.emitError() << "a store into a swizzled local buffer must be in bounds and contiguous along its rows";
    for (const auto& group : runsOf(fr, runs->dim, std::min<int64_t>(runs->run, 8))) {
      Value at = elementPtr(loc, s.getPtr(), coords(fr, group[0]), 3, /*swizzled=*/true);
      SmallVector<int64_t> pos(group.begin(), group.end());
      Value v = group.size() == 1 ? vector::ExtractOp::create(b, loc, s.getValue(), group[0]).getResult()
                                  : vector::ShuffleOp::create(b, loc, s.getValue(), s.getValue(), pos).getResult();
      LLVM::StoreOp::create(b, loc, v, at, int64_t(group.size()) * et.getIntOrFloatBitWidth() / 8);
    }
    return Value();
  }

  // tile.tma_store: every thread fences its local writes for the async
  // proxy (the TMA unit reads the buffer through it), the workgroup barrier
  // joins them, then thread 0 issues cp.async.bulk.tensor.3d shared ->
  // global at panel coordinates (0, column / 64, row), commits it and waits
  // until the buffer has been read. A run of consecutive stores shares the
  // fence and barrier before it and the wait after it.
  void lowerTmaStore(TmaStoreOp st) {
    Location loc = st.getLoc();
    if (!isa_and_nonnull<TmaStoreOp>(st->getPrevNode())) {
      fenceAsyncShared(loc);
      NVVM::Barrier0Op::create(b, loc);
    }
    const bool last = !isa_and_nonnull<TmaStoreOp>(st->getNextNode());
    onThreadZero(loc, [&] {
      Value src = elementPtr(loc, st.getSrc(), {cst(0), cst(0)}, 3);
      Value panel = arith::ShRUIOp::create(b, loc, st.getCoords()[0], cst(6));
      SmallVector<Value> coords = {i32(loc, cst(0)), i32(loc, panel), i32(loc, st.getCoords()[1])};
      NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(b, loc, genericPointer(loc, st.getMap()), src, coords,
                                                         Value(), NVVM::TMAStoreMode::TILE, Value());
      if (last) {
        NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
        NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, b.getI32IntegerAttr(0), b.getUnitAttr());
      }
    });
  }

  // tile.group_dot_wait: wgmma.wait_group. After a wait for every group
  // (pending = 0) right behind a K loop, the f32 accumulators the loop hands
  // out pass through an empty inline asm (each register tied to itself,
  // ordered after the wait as both have side effects), so nothing that
  // reads them can move above the wait. LLVM sees no tie between the wait
  // and the registers wgmma writes: it folded the epilogue's bf16 converts
  // into a phi of the loop's exit and its zero-trip path, above the wait,
  // and ptxas then serialized every wgmma of the kernel (C7514; H100,
  // 2026-11-24: the plain tall and large GEMMs took 1.16-1.36x the time).
  void lowerGroupDotWait(GroupDotWaitOp w) {
    Location loc = w.getLoc();
    auto loop = dyn_cast_or_null<scf::ForOp>(w->getPrevNode());
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(w.getPending()));
    if (w.getPending() != 0 || !loop) return;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(w);
    Type f32 = b.getF32Type();
    for (Value r : loop.getResults()) {
      auto vt = dyn_cast<VectorType>(r.getType());
      if (!vt || vt.getElementType() != f32) continue;
      const int64_t n = vt.getNumElements();
      DenseSet<Operation*> reads;
      SmallVector<Value> in;
      std::string constraints;
      for (int64_t i = 0; i < n; ++i) {
        auto e = vector::ExtractOp::create(b, loc, r, i);
        reads.insert(e);
        in.push_back(e);
        constraints += i ? ",=f" : "=f";
      }
      for (int64_t i = 0; i < n; ++i) constraints += "," + std::to_string(i);
      Value tied = inlinePtx(loc, LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(n, f32)), in, "",
                             constraints, /*sideEffects=*/true);
      SmallVector<Value> out;
      for (int64_t i = 0; i < n; ++i) out.push_back(LLVM::ExtractValueOp::create(b, loc, tied, i));
      Value fenced = vector::FromElementsOp::create(b, loc, vt, out);
      frags.replaced(r, fenced);
      r.replaceUsesWithIf(fenced, [&](OpOperand& u) { return !reads.contains(u.getOwner()); });
    }
  }

  // tile.mbarrier_wait: every thread polls the phase (try_wait.parity in a
  // loop, suspending up to the hint between tries).
  void lowerMBarrierWait(MBarrierWaitOp w) {
    Location loc = w.getLoc();
    Value bar = elementPtr(loc, w.getBarriers(), {w.getSlot()}, 3);
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, i32(loc, w.getParity()),
                                          arith::ConstantIntOp::create(b, loc, b.getI32Type(), kMBarrierSuspendNs));
  }

  // An A or B fragment from a view of workgroup-local memory: one
  // ldmatrix (.x4 for A and [16, 16] B, .x2 for [16, 8] B). Lanes 8j..8j+7
  // give the rows of 8x8 matrix j, 8 elements along the view's contiguous
  // dim each: A (contiguous along K) non-transposed; B contiguous along K
  // ([N, K] storage) non-transposed, along N ([K, N] storage) with .trans.
  // Register j then holds the fragment's elements 2j, 2j + 1 (ISA order).
  FailureOr<Value> lowerLocalLoad(LoadOp l, const Frag& fr) {
    Location loc = l.getLoc();
    if (fr.kind == Frag::Desc) return descriptorOperand(loc, l.getResult(), GroupOperand{l.getPtr()});
    if (isSwizzledLocalPointer(l.getPtr()))
      return l.emitError() << "a swizzled local buffer is read only by warpgroup dots (this load feeds " << fr.str()
                           << ")";
    auto vt = cast<VectorType>(laneType(l.getResult()));
    Type et = vt.getElementType();
    auto d = l.getContiguous();
    if ((fr.kind != Frag::A && fr.kind != Frag::B) || fr.collapseRows || fr.collapseCols || fr.droppedAxis >= 0 ||
        et.getIntOrFloatBitWidth() != 16 || !d || (fr.kind == Frag::A && *d != 1))
      return l.emitError() << "the sm_90 lowering loads workgroup-local tiles only as 16-bit dot operands with "
                              "`contiguous` along K (A) or either dim (B), through ldmatrix";
    int64_t num = fr.kind == Frag::A || fr.cols == 16 ? 4 : 2;
    bool trans = fr.kind == Frag::B && *d == 1;
    Value j = arith::DivUIOp::create(b, loc, laneId, cst(8));
    if (num == 2) j = arith::RemUIOp::create(b, loc, j, cst(2));
    Value r = arith::RemUIOp::create(b, loc, laneId, cst(8));
    Value lo = arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, j, cst(2)), cst(8));  // 8 (j % 2)
    Value hi = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, j, cst(2)), cst(8));  // 8 (j / 2)
    SmallVector<Value> idx;
    if (fr.kind == Frag::A) idx = {arith::AddIOp::create(b, loc, r, lo), hi};            // rows r + 8 (j%2), K 8 (j/2)
    else if (!trans) idx = {lo, arith::AddIOp::create(b, loc, r, hi)};                   // K 8 (j%2), N r + 8 (j/2)
    else idx = {arith::AddIOp::create(b, loc, r, lo), hi};                               // K r + 8 (j%2), N 8 (j/2)
    Value ptr = elementPtr(loc, l.getPtr(), idx, 3);
    Type i32 = b.getI32Type();
    Type res = num == 1 ? i32 : LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(num, i32));
    Value m = NVVM::LdMatrixOp::create(b, loc, res, ptr, b.getI32IntegerAttr(num),
                                       NVVM::MMALayoutAttr::get(b.getContext(), trans ? NVVM::MMALayout::col : NVVM::MMALayout::row),
                                       NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
                                       NVVM::LdStMatrixEltTypeAttr::get(b.getContext(), NVVM::LdStMatrixEltType::B16));
    SmallVector<Value> elems;
    auto pairType = VectorType::get({2}, et);
    for (int64_t k = 0; k < num; ++k) {
      Value reg = LLVM::ExtractValueOp::create(b, loc, m, k);
      Value p = LLVM::BitcastOp::create(b, loc, pairType, reg);
      for (int64_t e = 0; e < 2; ++e) elems.push_back(vector::ExtractOp::create(b, loc, p, e));
    }
    return Value(vector::FromElementsOp::create(b, loc, vt, elems));
  }

  FailureOr<Value> lower(Operation* op) {
    Location loc = op->getLoc();
    if (auto a = dyn_cast<AllocOp>(op)) return lowerAlloc(a);
    if (auto c = dyn_cast<AsyncCopyOp>(op)) {
      if (failed(lowerAsyncCopy(c))) return failure();
      return Value();
    }
    if (auto m = dyn_cast<MBarrierInitOp>(op)) {
      lowerMBarrierInit(m);
      return Value();
    }
    if (auto c = dyn_cast<TmaCopyOp>(op)) {
      lowerTmaCopy(c);
      return Value();
    }
    if (auto w = dyn_cast<MBarrierWaitOp>(op)) {
      lowerMBarrierWait(w);
      return Value();
    }
    if (auto st = dyn_cast<TmaStoreOp>(op)) {
      lowerTmaStore(st);
      return Value();
    }
    if (isa<AsyncCommitOp>(op)) {
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
      return Value();
    }
    if (auto w = dyn_cast<AsyncWaitOp>(op)) {
      NVVM::CpAsyncWaitGroupOp::create(b, loc, b.getI32IntegerAttr(w.getPending()));
      // cp.async writes through the generic proxy, wgmma reads through the
      // async proxy: each thread fences its landed copies before the
      // barrier that publishes them.
      if (!local.groupDotFirst.empty())
        fenceAsyncShared(loc);
      return Value();
    }
    if (isa<BarrierOp>(op)) {
      NVVM::Barrier0Op::create(b, loc);
      return Value();
    }
    if (auto w = dyn_cast<GroupDotWaitOp>(op)) {
      lowerGroupDotWait(w);
      return Value();
    }
    if (auto a = dyn_cast<ArriveOp>(op)) return lowerArrive(a);
    if (auto l = dyn_cast<LoadOp>(op); l && local.loads.contains(op)) return lowerLocalLoad(l, frags.of(l.getResult()));
    if (auto r = dyn_cast<ReduceOp>(op); r && r.getCrossWarp() && !r.getAxis()) return combineAcrossWarps(r, r.getSrc());
    if (auto p = dyn_cast<ProgramIdOp>(op)) {
      Value id;
      Type i32 = b.getI32Type();
      if (p.getAxis() == 0) id = NVVM::BlockIdXOp::create(b, loc, i32);
      else if (p.getAxis() == 1) id = NVVM::BlockIdYOp::create(b, loc, i32);
      else id = NVVM::BlockIdZOp::create(b, loc, i32);
      return Value(arith::IndexCastOp::create(b, loc, b.getIndexType(), id));
    }
    if (isa<WarpIdOp>(op)) return warpId;
    if (auto m = dyn_cast<MakeBlockPtrOp>(op)) return lowerMakeBlockPtr(b, m, m.getBase());
    if (auto a = dyn_cast<AdvanceOp>(op)) return lowerAdvance(b, a, a.getPtr());
    if (isa<PrefetchOp>(op)) return Value();
    if (auto l = dyn_cast<BlockLookupOp>(op)) {
      // A lookup for the loop's next step (its value is yielded) is pinned.
      if (llvm::any_of(l->getUsers(), [](Operation* u) { return isa<scf::YieldOp>(u); })) return lowerPinnedLookup(l);
      return lowerBlockLookup(b, l);
    }
    if (auto r = dyn_cast<ReduceOp>(op)) {
      const Frag& src = frags.of(r.getSrc());
      if (src.kind == Frag::Lane) return lowerLaneReduce(r, src);
      return lowerFragmentReduce(r, src);
    }
    if (auto l = dyn_cast<LoadOp>(op); l && frags.of(l.getResult()).kind == Frag::Lane)
      return lowerLaneLoad(l, frags.of(l.getResult()));
    if (auto s = dyn_cast<StoreOp>(op); s && frags.of(s.getValue()).kind == Frag::Lane) {
      lowerLaneStore(s, frags.of(s.getValue()));
      return Value();
    }
    if (auto br = dyn_cast<BroadcastOp>(op); br && frags.of(br.getResult()).kind == Frag::Lane) {
      const Frag& src = frags.of(br.getSrc());
      if (src.numel == frags.of(br.getResult()).numel) return br.getSrc();
      if (src.numel != 1)
        return op->emitError() << "the sm_90 lowering broadcasts single values only in kernels without dots";
      return Value(vector::BroadcastOp::create(b, loc, laneType(br.getResult()), vector::ExtractOp::create(b, loc, br.getSrc(), 0)));
    }
    if (auto l = dyn_cast<LoadOp>(op)) {
      const Frag& fr = frags.of(l.getResult());
      auto vt = cast<VectorType>(laneType(l.getResult()));
      Type et = vt.getElementType();
      SmallVector<Value> elems(fr.size());
      if (std::optional<RunView> runs = runView(l, fr, et)) {
        for (const auto& group : runsOf(fr, runs->dim, runs->run)) {
          SmallVector<Value> idx = coords(fr, group[0]);
          if (group.size() == 1) {
            elems[group[0]] = memref::LoadOp::create(b, loc, l.getPtr(), idx);
            continue;
          }
          Value v = runs->load(b, loc, idx, et, group.size());
          for (auto [k, i] : llvm::enumerate(group)) elems[i] = vector::ExtractOp::create(b, loc, v, k);
        }
        return Value(vector::FromElementsOp::create(b, loc, vt, elems));
      }
      for (int64_t i = 0; i < fr.size(); ++i) {
        SmallVector<Value> idx = coords(fr, i);
        elems[i] = loadElement(loc, l.getPtr(), idx, et, l.getInBounds() ? Value() : inBounds(loc, l.getPtr(), idx));
      }
      return Value(vector::FromElementsOp::create(b, loc, vt, elems));
    }
    if (auto s = dyn_cast<StoreOp>(op); s && local.swizzledStores.contains(s)) return lowerSwizzledStore(s);
    if (auto s = dyn_cast<StoreOp>(op)) {
      const Frag& fr = frags.of(s.getValue());
      // Aligned runs as one access each, as the load's (a GEMM epilogue's
      // bf16 pairs: one 4-byte store instead of two 2-byte ones).
      Type et = cast<VectorType>(s.getValue().getType()).getElementType();
      if (std::optional<RunView> runs = runView(s, fr, et)) {
        for (const auto& group : runsOf(fr, runs->dim, runs->run)) {
          SmallVector<Value> idx = coords(fr, group[0]);
          if (group.size() == 1) {
            memref::StoreOp::create(b, loc, vector::ExtractOp::create(b, loc, s.getValue(), group[0]), s.getPtr(), idx);
            continue;
          }
          SmallVector<int64_t> pos(group.begin(), group.end());
          runs->store(b, loc, vector::ShuffleOp::create(b, loc, s.getValue(), s.getValue(), pos), idx);
        }
        return Value();
      }
      for (int64_t i = 0; i < fr.size(); ++i) {
        SmallVector<Value> idx = coords(fr, i);
        Value v = vector::ExtractOp::create(b, loc, s.getValue(), i);
        storeElement(loc, v, s.getPtr(), idx, s.getInBounds() ? Value() : inBounds(loc, s.getPtr(), idx));
      }
      return Value();
    }
    if (auto d = dyn_cast<DotOp>(op); d && frags.of(d.getB()).kind == Frag::Desc) return lowerGroupDot(d);
    if (auto d = dyn_cast<DotOp>(op)) return lowerDot(d);
    if (auto cc = dyn_cast<ConcatOp>(op); cc && frags.of(cc.getResult()).kind == Frag::Desc)
      return descriptorOperand(loc, cc.getResult(), groupOperands.lookup(cc.getSrcs().front()));
    if (auto cc = dyn_cast<ConcatOp>(op); cc && frags.of(cc.getResult()).kind == Frag::C) {
      SmallVector<Value> elems;
      for (Value v : cc.getSrcs())
        for (int64_t i = 0; i < 4; ++i) elems.push_back(vector::ExtractOp::create(b, loc, v, i));
      return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(cc.getResult())), elems));
    }
    if (auto cc = dyn_cast<ConcatOp>(op)) return lowerConcat(cc);
    if (auto m = dyn_cast<MaskOp>(op)) return lowerMask(m);
    if (auto io = dyn_cast<IotaOp>(op)) return lowerIota(io);
    if (auto e = dyn_cast<ExtractOp>(op); e && frags.of(e.getSrc()).kind == Frag::Desc) {
      // Sub-block `index` of the source block, row-major over its grid.
      auto rt = cast<RankedTensorType>(e.getResult().getType());
      GroupOperand g = groupOperands.lookup(e.getSrc());
      int64_t perRow = g.cols / rt.getDimSize(1), index = e.getIndex();
      g.row += index / perRow * rt.getDimSize(0);
      g.col += index % perRow * rt.getDimSize(1);
      return descriptorOperand(loc, e.getResult(), g);
    }
    if (auto e = dyn_cast<ExtractOp>(op); e && frags.of(e.getSrc()).kind == Frag::C) {
      // A [16, 8] piece j of a warpgroup accumulator: its elements 4j..4j+3.
      return Value(vector::ExtractStridedSliceOp::create(b, loc, e.getSrc(), {4 * int64_t(e.getIndex())}, {4}, {1}));
    }
    if (auto e = dyn_cast<ExtractOp>(op)) {
      // Only B's [16, 16] -> [16, 8] column halves: elements 4j.. 4j+3.
      const Frag& src = frags.of(e.getSrc());
      if (src.kind != Frag::B || src.cols != 16)
        return op->emitError() << "the sm_90 lowering extracts only column halves of a [16, 16] B operand";
      return Value(vector::ExtractStridedSliceOp::create(b, loc, e.getSrc(), {4 * int64_t(e.getIndex())}, {4}, {1}));
    }
    if (isa<ExpandDimsOp, BroadcastOp>(op)) {
      // Same lane elements (see Frag), but a value of its own: the operand
      // keeps its fragment for its other uses (a row max stored as well as
      // broadcast back). The identity cast folds away in the LLVM lowering.
      Value src = op->getOperand(0);
      return UnrealizedConversionCastOp::create(b, loc, src.getType(), src).getResult(0);
    }
    if (auto s = dyn_cast<SplatOp>(op))
      return Value(vector::BroadcastOp::create(b, loc, laneType(s.getResult()), s.getValue()));
    if (auto c = dyn_cast<ConvertOp>(op))
      return lowerConvert(b, loc, c.getSrc(), cast<VectorType>(laneType(c.getResult())));
    if (auto s = dyn_cast<SiluOp>(op)) {
      // x / (1 + 2^(-x log2 e)): NVPTX has ex2 but no exp.
      auto vt = cast<VectorType>(s.getSrc().getType());
      auto splat = [&](double v) {
        return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), v)));
      };
      Value scaled = arith::MulFOp::create(b, loc, s.getSrc(), splat(-1.4426950408889634));
      Value e = math::Exp2Op::create(b, loc, scaled);
      return Value(arith::DivFOp::create(b, loc, s.getSrc(), arith::AddFOp::create(b, loc, splat(1.0), e)));
    }
    if (auto e = dyn_cast<math::ExpOp>(op)) {
      // NVPTX has ex2, not exp: e^x = 2^(x log2 e).
      auto vt = cast<VectorType>(laneType(e.getResult()));
      Value l2e = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), 1.4426950408889634)));
      return Value(math::Exp2Op::create(b, loc, arith::MulFOp::create(b, loc, e.getOperand(), l2e)));
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto d = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!d) return Value();
      if (!d.isSplat()) return op->emitError() << "the sm_90 lowering takes only splat tile constants";
      auto vt = cast<VectorType>(laneType(c.getResult()));
      return Value(arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, d.getSplatValue<Attribute>())));
    }
    // Elementwise arith/math and scalars: retype in place.
    for (Value r : op->getResults()) r.setType(laneType(r));
    return Value();
  }

  // Two [16, 8] accumulator fragments joined along columns as the A operand
  // of a dot: C element i is at row g + 8 (i/2), column 2t + i%2, and A
  // element i (ISA K order) at row g + 8 (i/2 % 2), column 2t + i%2 + 8
  // (i/4), so A = the left fragment's 4 elements, then the right one's.
  // Only that join is a register move; the analysis refuses others.
  Value lowerConcat(ConcatOp cc) {
    Location loc = cc.getLoc();
    SmallVector<Value> elems;
    for (Value v : cc.getSrcs())
      for (int64_t i = 0; i < 4; ++i) elems.push_back(vector::ExtractOp::create(b, loc, v, i));
    return Value(vector::FromElementsOp::create(b, loc, cast<VectorType>(laneType(cc.getResult())), elems));
  }

  // keep = col < limit && (!causal || col <= row) per lane element, at the
  // element's coordinates plus the mask's bases; -inf elsewhere.
  FailureOr<Value> lowerMask(MaskOp m) {
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

  // lowerMask for a lane-linear 2-D tile (element coordinates as its loads
  // have them).
  Value lowerLaneMask(MaskOp m, const Frag& fr) {
    SmallVector<Value> keep;
    forLaneElements(fr, [&](int64_t, SmallVector<Value> idx, Value) { keep.push_back(keepsElement(m, idx[0], idx[1])); });
    return maskedBy(m, keep);
  }

  // Each lane element's index along the axis plus the base, as f32.
  Value lowerIota(IotaOp io) {
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

  // Whether the mask keeps the element at (row, col) of its tile.
  Value keepsElement(MaskOp m, Value row, Value col) {
    Location loc = m.getLoc();
    col = arith::AddIOp::create(b, loc, m.getColBase(), col);
    Value k = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col, m.getLimit());
    if (!m.getCausal()) return k;
    row = arith::AddIOp::create(b, loc, m.getRowBase(), row);
    return arith::AndIOp::create(b, loc, k, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, col, row));
  }

  // The mask's source with -inf where `keep` (one i1 per lane element) is false.
  Value maskedBy(MaskOp m, ArrayRef<Value> keep) {
    Location loc = m.getLoc();
    auto vt = cast<VectorType>(laneType(m.getResult()));
    Value mask = vector::FromElementsOp::create(b, loc, VectorType::get({int64_t(keep.size())}, b.getI1Type()), keep);
    Value ninf = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), -std::numeric_limits<double>::infinity())));
    return arith::SelectOp::create(b, loc, mask, m.getSrc(), ninf);
  }

  // A warpgroup dot operand: where in local memory its block starts.
  struct GroupOperand {
    Value view;                // the (lowered) view it was loaded from
    int64_t row = 0, col = 0;  // the block's first element in that view
    int64_t cols = 0;          // the block's columns (set by descriptorOperand)
  };
  // Stands in for the operand `orig` (a placeholder register: nothing reads
  // it once the dots are lowered) and records where its block lies.
  Value descriptorOperand(Location loc, Value orig, GroupOperand g) {
    g.cols = cast<RankedTensorType>(orig.getType()).getDimSize(1);
    auto vt = cast<VectorType>(laneType(orig));
    Value v = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getZeroAttr(vt.getElementType())));
    groupOperands[v] = g;
    return v;
  }

  // The sm_90 shared-memory matrix descriptor of a block in a 128-byte
  // swizzled buffer starting at `ptr` (address space 3): start address / 16
  // in bits 0-13, leading byte offset / 16 in 16-29, stride byte offset /
  // 16 in 32-45, swizzle mode in 62-63 (1: 128 bytes). The same fields
  // describe both layouts the buffers have:
  // - K-major (rows of 64 K elements): the stride offset is one 8-row atom
  //   (1024 bytes) to the next along M / N; the leading offset is unused
  //   (1). A block starting k elements into the atom's rows (k * 2 bytes)
  //   is addressed by that byte offset: the unit applies the swizzle to the
  //   address bits, as the copies did.
  // - N-major (rows of 64 N elements, one per K; wgmma's transposed B):
  //   the stride offset is one 8-row atom (8 K) to the next along K; the
  //   leading offset (to the next 64 N) is unused at the N <= 64 such
  //   blocks have here (1).
  Value matrixDescriptor(Location loc, Value ptr) {
    Type i64 = b.getI64Type();
    auto c64 = [&](uint64_t v) { return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(int64_t(v))); };
    Value addr = LLVM::PtrToIntOp::create(b, loc, i64, ptr);
    Value start = LLVM::LShrOp::create(b, loc, LLVM::AndOp::create(b, loc, addr, c64(0x3FFFF)), c64(4));
    uint64_t fixed = (uint64_t(1) << 16) | (uint64_t(kSwizzleAtomBytes / 16) << 32) | (uint64_t(1) << 62);
    return LLVM::OrOp::create(b, loc, start, c64(fixed));
  }

  // wgmma.mma_async.m64nNk16.f32 with B in local memory and A there too or
  // in registers: the warp's 16 accumulator rows are rows 16 (warp % 4) ..
  // of its warpgroup's 64, so a local A's descriptor starts that many rows
  // above the warp's own A block (the same address in all four warps); a
  // register A is the warp's own [16, 16] fragment. A run of warpgroup
  // dots is fenced before its first dot (the accumulator and A registers
  // were written by other instructions), committed as one group after its
  // last and waited for right there, so the dots complete where the tile
  // IR has them — unless a tile.group_dot_wait ends the run: then that op
  // waits instead, and the group may stay in flight across a K loop's back
  // edge (ptxas accepts it now that the loop-carried accumulator is not
  // copied between the dots; it serialized them on 2026-11-22).
  FailureOr<Value> lowerGroupDot(DotOp d) {
    Location loc = d.getLoc();
    GroupOperand bq = groupOperands.lookup(d.getB());
    auto mt = bq.view ? dyn_cast<MemRefType>(bq.view.getType()) : MemRefType();
    Type et = mt ? mt.getElementType() : Type();
    const Frag& af = frags.of(d.getA());
    if (!et || (!et.isBF16() && !et.isF16()) || (af.kind == Frag::A && af.permuteK))
      return d.emitError() << "warpgroup dots take f16 or bf16 operands, B from local memory (A in the ISA's K order "
                              "when in registers)";
    int64_t n = frags.of(d.getResult()).cols;
    bool nMajor = local.nMajorB.contains(d);
    Value descB = matrixDescriptor(loc, elementPtr(loc, bq.view, {cst(bq.row), cst(bq.col)}, 3));
    if (local.groupDotFirst.contains(d)) NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Type f32 = b.getF32Type();
    auto st = LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(n / 2, f32));
    Value acc = LLVM::UndefOp::create(b, loc, st);
    for (int64_t i = 0; i < n / 2; ++i)
      acc = LLVM::InsertValueOp::create(b, loc, acc, vector::ExtractOp::create(b, loc, d.getC(), i), i);
    auto ctx = b.getContext();
    Value res;
    if (af.kind == Frag::Desc) {
      GroupOperand a = groupOperands.lookup(d.getA());
      const UArch& u = uarchFor("sm_90");
      Value wgRow = arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, warpId, cst(u.warpsPerGroup())),
                                          cst(u.groupDotM / u.warpsPerGroup()));
      Value aRow = arith::SubIOp::create(b, loc, cst(a.row), wgRow);
      Value descA = matrixDescriptor(loc, elementPtr(loc, a.view, {aRow, cst(a.col)}, 3));
      NVVM::WGMMATypes t = et.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
      res = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, st, acc, descA, descB, NVVM::MMAShapeAttr::get(ctx, 64, n, 16), NVVM::WGMMATypesAttr::get(ctx, t),
          NVVM::WGMMATypesAttr::get(ctx, t), NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
          NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one), NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          NVVM::MMALayoutAttr::get(ctx, nMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col), nullptr);
    } else {
      res = registerAGroupDot(loc, d.getA(), descB, acc, st, n, et, nMajor);
    }
    if (local.groupDotLast.contains(d)) {
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      if (!local.groupDotDeferred.contains(d)) NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
    }
    SmallVector<Value> out;
    for (int64_t i = 0; i < n / 2; ++i) out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
    return Value(vector::FromElementsOp::create(b, loc, VectorType::get({n / 2}, f32), out));
  }

  // wgmma with A from registers: the NVVM op takes descriptors only, so
  // this is the PTX itself, in the form the op's own lowering writes: the
  // accumulator's n / 2 floats written ("=f") and read from the same
  // registers (tied "0", "1", ...), A as four packed 16-bit pairs (the
  // lane's elements 2j, 2j + 1: rows g / g + 8, K 2t / 2t + 8, wgmma's
  // register A order), B's descriptor, the accumulate predicate (from an
  // immediate 1) and B's transpose bit (1: N-major).
  Value registerAGroupDot(Location loc, Value aFrag, Value descB, Value acc, Type st, int64_t n, Type et, bool nMajor) {
    SmallVector<Value> operands;
    for (int64_t i = 0; i < n / 2; ++i) operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
    for (int64_t r = 0; r < 4; ++r) {
      Value p = vector::ExtractStridedSliceOp::create(b, loc, aFrag, {2 * r}, {2}, {1});
      operands.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), p));
    }
    operands.push_back(descB);
    operands.push_back(LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(1)));
    std::string type = et.isBF16() ? "bf16" : "f16";
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(n + 5) +
                       ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." + type +
                       " {";
    std::string constraints;
    for (int64_t i = 0; i < n / 2; ++i) {
      text += (i ? ", $" : "$") + std::to_string(i);
      constraints += (i ? ",=f" : "=f");
    }
    int64_t next = n;  // after the n / 2 outputs and the n / 2 tied inputs
    text += "}, {";
    for (int64_t r = 0; r < 4; ++r) text += (r ? ", $" : "$") + std::to_string(next + r);
    text += "}, $" + std::to_string(next + 4) + ", p, 1, 1, " + (nMajor ? "1" : "0") + ";\n}";
    for (int64_t i = 0; i < n / 2; ++i) constraints += "," + std::to_string(i);
    constraints += ",r,r,r,r,l,n";
    return inlinePtx(loc, st, operands, text, constraints, /*sideEffects=*/true);
  }

  // mma.sync.m16n8k16.row.col, f32 accumulate. bf16 pairs travel as i32
  // registers (the ISA's .bf16x2 operands); f16 pairs as vector<2xf16>.
  FailureOr<Value> lowerDot(DotOp d) {
    Location loc = d.getLoc();
    Type et = cast<RankedTensorType>(d.getA().getType()).getElementType();
    if (!et.isF16() && !et.isBF16())
      return d.emitError() << "sm_90 dots take f16 or bf16 operands (got " << et << ")";
    auto regs = [&](Value v, int64_t n) {
      SmallVector<Value> out;
      for (int64_t r = 0; r < n; ++r) {
        Value p = vector::ExtractStridedSliceOp::create(b, loc, v, {2 * r}, {2}, {1});
        out.push_back(et.isBF16() ? LLVM::BitcastOp::create(b, loc, b.getI32Type(), p).getResult() : p);
      }
      return out;
    };
    SmallVector<Value> a = regs(d.getA(), 4), bb = regs(d.getB(), 2), c;
    for (int64_t i = 0; i < 4; ++i) c.push_back(vector::ExtractOp::create(b, loc, d.getC(), i));
    Type f32 = b.getF32Type();
    auto res = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    NVVM::MMATypes pt = et.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Value mma = NVVM::MmaOp::create(b, loc, res, a, bb, c, ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
                                    std::array<NVVM::MMATypes, 2>{pt, pt},
                                    std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i) out.push_back(LLVM::ExtractValueOp::create(b, loc, mma, i));
    return Value(vector::FromElementsOp::create(b, loc, VectorType::get({4}, f32), out));
  }

  func::FuncOp f;
  FragAnalysis& frags;
  OpBuilder b;
  memref::GlobalOp scratchGlobal;
  Value scratch;
  const LocalMemory& local;
  int64_t numWarps = 1;
  Value tid, warpId, laneId, group, pair, quad;  // quad = 4t, pair = 2t
  DenseMap<Value, GroupOperand> groupOperands;   // placeholder -> its block in local memory
};

struct ConvertTileToNVVMPass : impl::ConvertTileToNVVMBase<ConvertTileToNVVMPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> kernels(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp f : kernels)
      if (!f.isExternal() && failed(lowerKernel(f))) return signalPassFailure();
  }

  LogicalResult lowerKernel(func::FuncOp f) {
    bool bad = false;
    for (Type t : f.getArgumentTypes())
      if (isa<RankedTensorType>(t) && !bad) {
        f.emitError() << "kernel arguments are pointers and scalars (got " << t << "): load tiles through block pointers";
        bad = true;
      }
    f.walk([&](Operation* op) {
      if (!bad && op->getDialect() && isa<TileDialect>(op->getDialect()) &&
          !isa<ProgramIdOp, WarpIdOp, MakeBlockPtrOp, AdvanceOp, LoadOp, StoreOp, PrefetchOp, DotOp, ExtractOp,
               ExpandDimsOp, BroadcastOp, SplatOp, ConvertOp, SiluOp, ReduceOp, BlockLookupOp, AllocOp, AsyncCopyOp,
               AsyncCommitOp, AsyncWaitOp, BarrierOp, ConcatOp, MaskOp, IotaOp, MBarrierInitOp, TmaCopyOp,
               TmaStoreOp, MBarrierWaitOp, ArriveOp, GroupDotWaitOp>(op)) {
        op->emitError() << "the sm_90 lowering does not handle '" << op->getName() << "' yet";
        bad = true;
      }
      for (Type t : op->getResultTypes())
        if (encodingOf(t) && !bad) {
          op->emitError() << "tile still has a layout encoding: run distribute-to-warps and match-target-size first";
          bad = true;
        }
    });
    // In kernels with dots, a reduction combines whole tiles across warps
    // or reduces an accumulator fragment along one axis within its warp
    // (attention's softmax); other fragments are not reduced.
    bool hasDot = false;
    f.walk([&](DotOp) { hasDot = true; });
    if (hasDot && !bad)
      f.walk([&](ReduceOp r) {
        if (bad || (r.getCrossWarp() && !r.getAxis())) return;
        if (r.getCrossWarp() || !r.getAxis()) {
          r.emitError() << "the sm_90 lowering reduces along an axis within a warp, or whole tiles across warps";
          bad = true;
        }
      });
    // Workgroup-local memory: dot operands read from it come through
    // ldmatrix, so the kernel's fragments keep the ISA's K order.
    LocalMemory local;
    f.walk([&](LoadOp l) {
      if (isLocalPointer(l.getPtr())) local.loads.insert(l);
    });
    f.walk([&](StoreOp s) {
      if (isSwizzledLocalPointer(s.getPtr())) local.swizzledStores.insert(s);
    });
    f.walk([&](AsyncCopyOp c) {
      local.copyBlocks[c] = c.getDst().getType().getTileType();
      if (isSwizzledLocalPointer(c.getDst())) local.swizzledCopies.insert(c);
      if (!bad && (!isLocalPointer(c.getDst()) || isLocalPointer(c.getSrc()))) {
        c.emitError() << "tile.async_copy copies from global memory (src) into workgroup-local memory (dst)";
        bad = true;
      }
      if (!bad && (!isCopyPointer(c.getDst()) || !isCopyPointer(c.getSrc()))) {
        c.emitError() << "tile.async_copy's views must serve async copies only (the workgroup copies the whole "
                         "block); make separate views for loads";
        bad = true;
      }
    });
    f.walk([&](TmaCopyOp c) {
      local.copyBlocks[c] = c.getDst().getType().getTileType();
      if (!bad && !isSwizzledLocalPointer(c.getDst())) {
        c.emitError() << "tile.tma_copy writes into a swizzled tile.alloc buffer (the tensor map's 128-byte swizzle)";
        bad = true;
      }
      if (!bad && !isCopyPointer(c.getDst())) {
        c.emitError() << "tile.tma_copy's destination view must serve copies only; make separate views for loads";
        bad = true;
      }
    });
    f.walk([&](MBarrierInitOp m) { local.mbarrierCounts[m] = localBufferOf(m.getBarriers()).getSize(); });
    // Warpgroup dots: runs of them in a block, and their operand views (A
    // K-contiguous, B either way, 128-byte rows: what the descriptors
    // describe). The extracts and concats match-target-size puts between
    // chained dots (one accumulator through two dots) are register renames:
    // they do not end a run.
    f.walk([&](Block* blk) {
      Operation* prev = nullptr;
      for (Operation& op : *blk) {
        if (prev && isa<ExtractOp, ConcatOp>(op)) continue;
        auto d = dyn_cast<DotOp>(op);
        bool group = d && isGroupDot(d);
        if (group && !prev) local.groupDotFirst.insert(d);
        if (!group && prev) {
          local.groupDotLast.insert(prev);
          if (isa<GroupDotWaitOp>(op)) local.groupDotDeferred.insert(prev);
        }
        prev = group ? d.getOperation() : nullptr;
        if (!group || bad) continue;
        for (int operand = 0; operand < 2; ++operand) {
          LoadOp l = groupOperandLoad(operand ? d.getB() : d.getA());
          if (!l) continue;  // A in registers
          auto m = l.getPtr().getDefiningOp<MakeBlockPtrOp>();
          int64_t rowElems = kSwizzleRowBytes / (tileTypeOf(l.getPtr()).getElementTypeBitWidth() / 8);
          std::optional<int64_t> s0, s1;
          if (m && m.getStrides().size() == 2) {
            s0 = getConstantIntValue(m.getStrides()[0]);
            s1 = getConstantIntValue(m.getStrides()[1]);
          }
          // A: [M, K] with strides [rowElems, 1]; B: [K, N] with [1, rowElems]
          // (K-major) or [rowElems, 1] with N <= rowElems (N-major: one
          // 128-byte row per K).
          bool kMajor = s0 == 1 && s1 == rowElems;
          bool nMajor = s0 == rowElems && s1 == 1;
          int64_t n = tileTypeOf(d.getB()).getDimSize(1);
          bool ok = operand ? kMajor || (nMajor && n <= rowElems) : nMajor;
          if (operand && nMajor) local.nMajorB.insert(d);
          if (!ok) {
            if (operand)
              d.emitError() << "a warpgroup dot reads its B operand from a view with rows of " << rowElems
                            << " elements: K contiguous (strides [1, " << rowElems << "]) or N contiguous (strides ["
                            << rowElems << ", 1], N <= " << rowElems << "), static";
            else
              d.emitError() << "a warpgroup dot reads its A operand from a view with K contiguous and rows of "
                            << rowElems << " elements (strides [" << rowElems << ", 1], static)";
            bad = true;
          }
        }
      }
      if (prev) local.groupDotLast.insert(prev);
    });
    // A kernel that joins accumulator fragments into A operands (tile.concat)
    // needs the ISA's K order too.
    bool joins = false;
    f.walk([&](ConcatOp) { joins = true; });
    FragAnalysis frags;
    if (bad || failed(frags.run(f, hasDot, local.loads.empty() && !joins))) return failure();
    // Scratch for cross-warp reductions: numWarps x 32 lanes x the largest
    // lane vector reduced.
    int64_t numWarps = 1, perLane = 0;
    if (auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps")) numWarps = a.getInt();
    f.walk([&](ReduceOp r) {
      if (!r.getCrossWarp()) return;
      // A lane-linear reduce combines one value per warp (see lowerLaneReduce).
      const Frag& src = frags.of(r.getSrc());
      perLane = std::max(perLane, src.kind == Frag::Lane && r.getAxis() ? int64_t(1) : src.size());
    });
    memref::GlobalOp scratch;
    if (perLane) {
      OpBuilder mb(f);
      auto type = MemRefType::get({numWarps * 32 * perLane}, mb.getF32Type(), MemRefLayoutAttrInterface(),
                                  mb.getI64IntegerAttr(3));
      scratch = memref::GlobalOp::create(mb, f.getLoc(), (f.getName() + "_scratch").str(), mb.getStringAttr("private"),
                                         type, Attribute(), /*constant=*/false, mb.getI64IntegerAttr(16));
    }
    // tile.alloc buffers live in the kernel's dynamic shared memory (an
    // extern .shared array; the launch passes its size, which the
    // function's tile.shared_bytes records), each 16-byte aligned for
    // cp.async's 16-byte copies. With the scratch (static), within what a
    // block can have.
    // Swizzled buffers start on a 1024-byte atom boundary (the swizzle is
    // a function of the address bits).
    int64_t dynamicBytes = 0, align = 16;
    f.walk([&](AllocOp a) {
      if (a.getSwizzle()) {
        align = kSwizzleAtomBytes;
        dynamicBytes = (dynamicBytes + kSwizzleAtomBytes - 1) / kSwizzleAtomBytes * kSwizzleAtomBytes;
      }
      local.allocs[a] = dynamicBytes;
      dynamicBytes += (a.getSize() * ((a.getType().getElementType().getIntOrFloatBitWidth() + 7) / 8) + 15) / 16 * 16;
    });
    int64_t limit = uarchFor("sm_90").localMemoryBytes, staticBytes = scratch ? numWarps * 32 * perLane * 4 : 0;
    if (dynamicBytes + staticBytes > limit)
      return f.emitError() << "the kernel needs " << dynamicBytes + staticBytes
                           << " bytes of shared memory; an sm_90 block can have " << limit;
    if (dynamicBytes) {
      OpBuilder mb(f);
      auto type = MemRefType::get({0}, mb.getI8Type(), MemRefLayoutAttrInterface(), mb.getI64IntegerAttr(3));
      local.dynamic = memref::GlobalOp::create(mb, f.getLoc(), (f.getName() + "_local").str(),
                                               mb.getStringAttr("public"), type, Attribute(), /*constant=*/false,
                                               mb.getI64IntegerAttr(align));
      f->setAttr("tile.shared_bytes", mb.getI64IntegerAttr(dynamicBytes));
    }
    return Lowering(f, frags, scratch, local).run();
  }
};

}  // namespace
}  // namespace strata::tile
