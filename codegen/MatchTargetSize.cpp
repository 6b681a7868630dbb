//===- MatchTargetSize.cpp - split per-warp ops to intrinsic sizes --------===//
//
// Each tile value V of shape S becomes a row-major grid of pieces of one
// shape P(V). Values joined by same-shape ops (elementwise math, load and
// its block pointer, store, advance, loop-carried values, dot accumulator
// and result) are one class and share P. A class holding a dot result gets
// the intrinsic dot's m x n; classes derived from it by reduce, expand_dims
// or broadcast follow it; classes that are loaded or stored get the largest
// 2-D block load; the rest stay whole. Dots then run over their m x n x k
// grid, taking operand sub-blocks with tile.extract (ML-Triton, Listing 4),
// or joining pieces with tile.concat where an operand's pieces are smaller
// than the intrinsic's block (attention's P, an accumulator, as the A
// operand of P V).
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "codegen/UArch.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "mlir/IR/IRMapping.h"
#include "ops/error.h"

namespace strata::tile {

#define GEN_PASS_DEF_MATCHTARGETSIZE
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

using Shape = SmallVector<int64_t>;

bool isElementwise(Operation* op) {
  if (isa<SiluOp, ConvertOp, MaskOp>(op)) return true;
  Dialect* d = op->getDialect();
  return d && isa<arith::ArithDialect, math::MathDialect>(d) && !isa<arith::ConstantOp>(op) &&
         op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType());
}

int64_t product(ArrayRef<int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// A value split into pieces: grid (per dim count), piece shape, values in
// row-major grid order.
struct Pieces {
  Shape grid, piece;
  SmallVector<Value> values;
  Value at(ArrayRef<int64_t> idx) const {
    int64_t linear = 0;
    for (size_t i = 0; i < grid.size(); ++i) linear = linear * grid[i] + idx[i];
    return values[linear];
  }
};

// Calls fn(index) for every index of a grid, row-major.
void forEachIndex(ArrayRef<int64_t> grid, function_ref<void(ArrayRef<int64_t>)> fn) {
  Shape idx(grid.size(), 0);
  for (int64_t n = 0, total = product(grid); n < total; ++n) {
    fn(idx);
    for (int64_t d = (int64_t)grid.size() - 1; d >= 0; --d) {
      if (++idx[d] < grid[d]) break;
      idx[d] = 0;
    }
  }
}

class Splitter {
 public:
  // `group`: the warpgroup dot as one warp's share (16 rows x up to max N
  // x k; empty where the target has none).
  // `dotFragments`: UArch::dotFragmentTiles.
  Splitter(func::FuncOp f, Shape maxLoad, Shape maxDot, Shape group, bool dotFragments)
      : f(f), ctx(f.getContext()), maxLoad(std::move(maxLoad)), dot(std::move(maxDot)), group(std::move(group)),
        dotFragments(dotFragments) {}

  LogicalResult run() {
    classify();
    if (failed(choosePieces())) return failure();
    if (failed(rewriteBlock(f.getBody().front()))) return failure();
    // Old ops still reference each other (and an old loop's block
    // arguments): drop every reference first, then erase.
    for (Operation* op : dead) op->dropAllReferences();
    for (Operation* op : llvm::reverse(dead)) {
      op->dropAllUses();
      op->erase();
    }
    return success();
  }

 private:
  // --- classes -----------------------------------------------------------
  void join(Value a, Value b) {
    if (isTileValue(a) && isTileValue(b)) classes.unionSets(a, b);
  }

  void classify() {
    f.walk([&](Operation* op) {
      for (Value v : op->getResults())
        if (isTileValue(v)) classes.insert(v);
      for (Region& r : op->getRegions())
        for (Block& b : r)
          for (Value a : b.getArguments())
            if (isTileValue(a)) classes.insert(a);
      if (isElementwise(op) || isa<LoadOp, StoreOp, AdvanceOp, PrefetchOp>(op)) {
        Value first;
        for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
          if (isTileValue(v) && tileTypeOf(v).getShape() == tileTypeOf(op->getOperand(0)).getShape()) {
            if (first) join(first, v);
            else first = v;
          }
      }
      if (auto d = dyn_cast<DotOp>(op)) join(d.getC(), d.getResult());
      // A reduce over warps only maps piece by piece: one class (a K split
      // over warps sums the dot's accumulator pieces, which the value it
      // joins must share, whatever a broadcast elsewhere would derive).
      if (auto r = dyn_cast<ReduceOp>(op); r && !r.getAxis()) join(r.getSrc(), r.getResult());
      if (auto fo = dyn_cast<scf::ForOp>(op))
        for (auto [i, a, r, y] : llvm::zip(fo.getInitArgs(), fo.getRegionIterArgs(), fo.getResults(),
                                           fo.getBody()->getTerminator()->getOperands())) {
          join(i, a), join(a, r), join(r, y);
        }
      if (auto ifo = dyn_cast<scf::IfOp>(op))
        for (auto [k, r] : llvm::enumerate(ifo.getResults()))
          if (isTileValue(r))
            for (Region* reg : {&ifo.getThenRegion(), &ifo.getElseRegion()})
              if (!reg->empty()) join(r, reg->front().getTerminator()->getOperand(k));
    });
  }

  Value leader(Value v) { return classes.getLeaderValue(v); }

  std::optional<Shape> pieceOfClass(Value v) {
    auto it = classPiece.find(leader(v));
    if (it == classPiece.end()) return std::nullopt;
    return it->second;
  }

  LogicalResult setPiece(Value v, Shape p, Operation* why) {
    Shape s(tileTypeOf(v).getShape());
    for (size_t i = 0; i < s.size(); ++i) {
      p[i] = std::min(p[i], s[i]);
      if (s[i] % p[i] != 0)
        return why->emitError() << "cannot split " << tileTypeOf(v) << " into pieces of "
                                << "[" << llvm::make_range(p.begin(), p.end()) << "] (not a multiple)";
    }
    auto [it, fresh] = classPiece.try_emplace(leader(v), p);
    if (!fresh && it->second != p)
      return why->emitError() << "values of one def-use class need pieces of two sizes";
    return success();
  }

  Shape loadPiece(Value v) {
    auto t = tileTypeOf(v);
    int64_t bytes = std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    int64_t cols = std::max<int64_t>(1, maxLoad[1] / bytes);
    if (t.getRank() == 1) return {cols};
    Shape p(t.getShape());
    p[t.getRank() - 1] = cols;
    p[t.getRank() - 2] = maxLoad[0];
    return p;
  }

  // Derives a class from a neighbour across reduce/expand_dims/broadcast.
  // Returns true when something changed.
  bool deriveOnce(Operation* op, LogicalResult& status) {
    auto derive = [&](Value from, Value to, function_ref<Shape(Shape)> map) {
      if (pieceOfClass(to) || !pieceOfClass(from)) return false;
      if (failed(setPiece(to, map(*pieceOfClass(from)), op))) status = failure();
      return true;
    };
    if (auto r = dyn_cast<ReduceOp>(op)) {
      if (!r.getAxis()) return false;  // one class with its source (classify)
      int64_t ax = *r.getAxis();
      int64_t full = tileTypeOf(r.getSrc()).getDimSize(ax);
      return derive(r.getSrc(), r.getResult(), [&](Shape p) { p.erase(p.begin() + ax); return p; }) ||
             derive(r.getResult(), r.getSrc(), [&](Shape p) { p.insert(p.begin() + ax, full); return p; });
    }
    if (auto e = dyn_cast<ExpandDimsOp>(op)) {
      int64_t ax = e.getAxis();
      return derive(e.getSrc(), e.getResult(), [&](Shape p) { p.insert(p.begin() + ax, 1); return p; }) ||
             derive(e.getResult(), e.getSrc(), [&](Shape p) { p.erase(p.begin() + ax); return p; });
    }
    if (auto b = dyn_cast<BroadcastOp>(op)) {
      auto src = tileTypeOf(b.getSrc());
      return derive(b.getResult(), b.getSrc(), [&](Shape p) {
               for (int64_t i = 0; i < src.getRank(); ++i) if (src.getDimSize(i) == 1) p[i] = 1;
               return p;
             }) ||
             derive(b.getSrc(), b.getResult(), [&](Shape p) {
               auto dst = tileTypeOf(b.getResult());
               for (int64_t i = 0; i < src.getRank(); ++i) if (src.getDimSize(i) == 1) p[i] = dst.getDimSize(i);
               return p;
             });
    }
    return false;
  }

  LogicalResult deriveAll() {
    LogicalResult status = success();
    for (bool changed = true; changed && succeeded(status);) {
      changed = false;
      f.walk([&](Operation* op) { changed |= deriveOnce(op, status); });
    }
    return status;
  }

  LogicalResult choosePieces() {
    LogicalResult status = success();
    f.walk([&](DotOp d) {
      if (succeeded(status)) status = setPiece(d.getResult(), {dot[0], dot[1]}, d);
    });
    if (failed(status) || failed(deriveAll())) return failure();
    // Classes a dot reads (its A and B operands) load in blocks; with
    // dotFragments the other loaded or stored classes of a kernel with dots
    // take the accumulator's pieces.
    DenseSet<Value> dotOperands;
    f.walk([&](DotOp d) {
      dotOperands.insert(leader(d.getA()));
      dotOperands.insert(leader(d.getB()));
    });
    auto piecesOf = [&](Value v) -> Shape {
      if (dotFragments && !dotOperands.empty() && !dotOperands.contains(leader(v)) && tileTypeOf(v).getRank() == 2)
        return {dot[0], dot[1]};
      return loadPiece(v);
    };
    f.walk([&](Operation* op) {
      if (succeeded(status) && isa<LoadOp, StoreOp, MakeBlockPtrOp>(op)) {
        Value v = op->getNumResults() ? op->getResult(0) : op->getOperand(1);
        // A workgroup-level copy's views stay whole (the target lowers the
        // copy over all of the workgroup's threads).
        if (isCopyPointer(v)) {
          if (!pieceOfClass(v)) status = setPiece(v, Shape(tileTypeOf(v).getShape()), op);
          return;
        }
        // Derive right away so a reduced or broadcast value that is stored
        // keeps its producer's pieces.
        if (!pieceOfClass(v)) status = succeeded(setPiece(v, piecesOf(v), op)) ? deriveAll() : failure();
      }
    });
    if (failed(status) || failed(deriveAll())) return failure();
    f.walk([&](Operation* op) {
      for (Value v : op->getResults())
        if (isTileValue(v) && !pieceOfClass(v) && succeeded(status))
          status = setPiece(v, Shape(tileTypeOf(v).getShape()), op);
    });
    if (failed(status)) return failure();
    return deriveAll();
  }

  // --- rewriting ---------------------------------------------------------
  RankedTensorType pieceType(Value v, ArrayRef<int64_t> p) {
    return RankedTensorType::get(p, tileTypeOf(v).getElementType());
  }

  Pieces layoutFor(Value v) {
    Pieces out;
    out.piece = *pieceOfClass(v);
    for (auto [s, p] : llvm::zip(tileTypeOf(v).getShape(), out.piece)) out.grid.push_back(s / p);
    return out;
  }

  // Sub-block of `shape` at element `origin` of a split value, via extract.
  FailureOr<Value> subBlock(OpBuilder& b, Location loc, Value old, ArrayRef<int64_t> origin, ArrayRef<int64_t> shape) {
    const Pieces& p = pieces(old);
    for (size_t i = 0; i < origin.size(); ++i)
      if (shape[i] > p.piece[i]) return joinedBlock(b, loc, old, origin, shape, i);
    Shape gridIdx, local;
    for (size_t i = 0; i < origin.size(); ++i) {
      gridIdx.push_back(origin[i] / p.piece[i]);
      local.push_back(origin[i] % p.piece[i]);
      if (p.piece[i] % shape[i] != 0 || local[i] % shape[i] != 0)
        return emitError(loc) << "a dot needs [" << llvm::make_range(shape.begin(), shape.end())
                              << "] blocks of an operand split into [" << llvm::make_range(p.piece.begin(), p.piece.end())
                              << "] pieces";
    }
    Value piece = p.at(gridIdx);
    if (ArrayRef<int64_t>(p.piece) == shape) return piece;
    int64_t index = 0;
    for (size_t i = 0; i < shape.size(); ++i) index = index * (p.piece[i] / shape[i]) + local[i] / shape[i];
    auto key = std::make_pair(piece, index);
    if (auto it = extracts.find(key); it != extracts.end()) return it->second;
    // Right after the piece (and its earlier extracts, keeping creation
    // order): it then dominates every later use, in every loop that reads
    // it, and stays loop-invariant when the piece is.
    OpBuilder::InsertionGuard guard(b);
    if (Operation* prev = lastExtract.lookup(piece)) b.setInsertionPointAfter(prev);
    else b.setInsertionPointAfterValue(piece);
    auto e = ExtractOp::create(b, loc, pieceType(old, shape), piece, b.getI64IntegerAttr(index));
    lastExtract[piece] = e;
    return extracts[key] = e;
  }

  // A block larger than the pieces along `axis` (a dot's [16, 16] A block
  // of an operand split into [16, 8] accumulator pieces): the pieces it
  // covers joined by tile.concat, placed right after the last of them when
  // they share a block (then reused by every later use), else at `b`.
  FailureOr<Value> joinedBlock(OpBuilder& b, Location loc, Value old, ArrayRef<int64_t> origin, ArrayRef<int64_t> shape,
                               size_t axis) {
    const Pieces& p = pieces(old);
    if (shape[axis] % p.piece[axis] || origin[axis] % p.piece[axis])
      return emitError(loc) << "a dot needs [" << llvm::make_range(shape.begin(), shape.end())
                            << "] blocks of an operand split into [" << llvm::make_range(p.piece.begin(), p.piece.end())
                            << "] pieces (not a whole number of pieces)";
    SmallVector<Value> parts;
    for (int64_t k = 0; k < shape[axis] / p.piece[axis]; ++k) {
      Shape o(origin), sh(shape);
      o[axis] += k * p.piece[axis];
      sh[axis] = p.piece[axis];
      auto part = subBlock(b, loc, old, o, sh);
      if (failed(part)) return failure();
      parts.push_back(*part);
    }
    auto key = std::make_pair(parts.front(), int64_t(parts.size()));
    if (auto it = joins.find(key); it != joins.end()) return it->second;
    Block* blk = parts.front().getParentBlock();
    Operation* last = nullptr;
    bool shared = true;
    for (Value v : parts) {
      shared &= v.getParentBlock() == blk;
      if (Operation* d = v.getDefiningOp(); d && (!last || last->isBeforeInBlock(d))) last = d;
    }
    OpBuilder::InsertionGuard guard(b);
    if (shared) {
      if (last) b.setInsertionPointAfter(last);
      else b.setInsertionPointToStart(blk);
    }
    auto t = RankedTensorType::get(shape, tileTypeOf(old).getElementType());
    Value joined = ConcatOp::create(b, loc, t, parts, b.getI64IntegerAttr(axis));
    if (shared) joins[key] = joined;
    return joined;
  }

  LogicalResult rewriteBlock(Block& blk) {
    for (Operation& opRef : llvm::make_early_inc_range(blk)) {
      Operation* op = &opRef;
      if (isa<scf::YieldOp>(op)) {
        SmallVector<Value> flat;
        for (Value v : op->getOperands()) append(v, flat);
        op->setOperands(flat);
        continue;
      }
      bool touchesTiles = llvm::any_of(op->getOperands(), isTileValue) || llvm::any_of(op->getResults(), isTileValue);
      if (auto fo = dyn_cast<scf::ForOp>(op)) {
        if (failed(rewriteFor(fo))) return failure();
        continue;
      }
      if (auto ifo = dyn_cast<scf::IfOp>(op)) {
        // Branches (a kernel's fast path and its checked path) are split in
        // place; tiles they yield become their pieces (rewriteIf).
        for (Region& r : ifo->getRegions())
          if (!r.empty() && failed(rewriteBlock(r.front()))) return failure();
        if (llvm::any_of(ifo.getResults(), isTileValue)) rewriteIf(ifo);
        continue;
      }
      if (!touchesTiles) continue;
      OpBuilder b(op);
      if (failed(rewriteOp(b, op))) return failure();
      dead.push_back(op);
    }
    return success();
  }

  void append(Value v, SmallVectorImpl<Value>& out) {
    if (!isTileValue(v)) return out.push_back(v);
    auto& vals = pieces(v).values;
    out.append(vals.begin(), vals.end());
  }

  // An scf.if whose (already rewritten) branches yield tiles as pieces: a
  // new scf.if with the pieces' types takes the branches, and each tile
  // result is bound to its pieces there.
  void rewriteIf(scf::IfOp old) {
    OpBuilder b(old);
    TypeRange types = old.thenYield().getOperandTypes();
    auto fresh = scf::IfOp::create(b, old.getLoc(), types, old.getCondition(), /*addThenBlock=*/false,
                                   /*addElseBlock=*/false);
    fresh.getThenRegion().takeBody(old.getThenRegion());
    fresh.getElseRegion().takeBody(old.getElseRegion());
    bindPieces(old.getResults(), fresh.getResults());
    dead.push_back(old);
  }

  // Binds each of `olds` to its run of `news`: a scalar to one value (its
  // uses move there), a tile to its pieces, in order.
  void bindPieces(ValueRange olds, ValueRange news) {
    unsigned next = 0;
    for (Value o : olds) {
      if (!isTileValue(o)) {
        o.replaceAllUsesWith(news[next++]);
        continue;
      }
      Pieces p = layoutFor(o);
      for (int64_t i = 0; i < product(p.grid); ++i) p.values.push_back(news[next++]);
      pieces(o) = p;
    }
  }

  LogicalResult rewriteFor(scf::ForOp old) {
    OpBuilder b(old);
    SmallVector<Value> inits;
    for (Value v : old.getInitArgs()) append(v, inits);
    auto fresh = scf::ForOp::create(b, old.getLoc(), old.getLowerBound(), old.getUpperBound(), old.getStep(), inits);
    Block* nb = fresh.getBody();
    if (!nb->empty()) nb->getTerminator()->erase();
    nb->getOperations().splice(nb->end(), old.getBody()->getOperations());
    old.getInductionVar().replaceAllUsesWith(fresh.getInductionVar());
    bindPieces(old.getRegionIterArgs(), fresh.getRegionIterArgs());
    if (failed(rewriteBlock(*nb))) return failure();
    bindPieces(old.getResults(), fresh.getResults());
    dead.push_back(old);
    return success();
  }

  LogicalResult rewriteOp(OpBuilder& b, Operation* op) {
    Location loc = op->getLoc();
    if (auto m = dyn_cast<MakeBlockPtrOp>(op)) {
      Pieces p = layoutFor(m.getResult());
      auto type = BlockPtrType::get(ctx, pieceType(m.getResult(), p.piece));
      forEachIndex(p.grid, [&](ArrayRef<int64_t> idx) {
        SmallVector<Value> offs(m.getOffsets());
        for (size_t i = 0; i < offs.size(); ++i)
          if (idx[i])
            offs[i] = arith::AddIOp::create(b, loc, offs[i], arith::ConstantIndexOp::create(b, loc, idx[i] * p.piece[i]));
        p.values.push_back(MakeBlockPtrOp::create(b, loc, type, m.getBase(), m.getShape(), m.getStrides(), offs));
      });
      pieces(m.getResult()) = p;
      return success();
    }
    if (auto m = dyn_cast<MaskOp>(op)) {
      // Each piece masks its own rows and columns.
      Pieces p = layoutFor(m.getResult());
      const Pieces& s = pieces(m.getSrc());
      auto t = pieceType(m.getResult(), p.piece);
      int64_t n = 0;
      forEachIndex(p.grid, [&](ArrayRef<int64_t> idx) {
        auto shifted = [&](Value base, int64_t by) {
          return by ? Value(arith::AddIOp::create(b, loc, base, arith::ConstantIndexOp::create(b, loc, by))) : base;
        };
        p.values.push_back(MaskOp::create(b, loc, t, s.values[n++], shifted(m.getRowBase(), idx[0] * p.piece[0]),
                                          shifted(m.getColBase(), idx[1] * p.piece[1]), m.getLimit(),
                                          m.getCausalAttr()));
      });
      pieces(m.getResult()) = p;
      return success();
    }
    if (auto io = dyn_cast<IotaOp>(op)) {
      // Each piece counts from its own first index along the axis.
      Pieces p = layoutFor(io.getResult());
      auto t = pieceType(io.getResult(), p.piece);
      int64_t axis = io.getAxis();
      forEachIndex(p.grid, [&](ArrayRef<int64_t> idx) {
        Value base = io.getBase();
        if (int64_t by = idx[axis] * p.piece[axis])
          base = arith::AddIOp::create(b, loc, base, arith::ConstantIndexOp::create(b, loc, by));
        p.values.push_back(IotaOp::create(b, loc, t, base, io.getAxisAttr()));
      });
      pieces(io.getResult()) = p;
      return success();
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto d = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!d || !d.isSplat()) return op->emitError() << "only splat constant tiles can be split";
      Pieces p = layoutFor(c.getResult());
      auto t = pieceType(c.getResult(), p.piece);
      Value v = arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, d.getSplatValue<Attribute>()));
      p.values.assign(product(p.grid), v);
      pieces(c.getResult()) = p;
      return success();
    }
    if (auto d = dyn_cast<DotOp>(op)) return rewriteDot(b, d);
    if (auto r = dyn_cast<ReduceOp>(op)) return rewriteReduce(b, r);
    if (auto br = dyn_cast<BroadcastOp>(op)) {
      Pieces p = layoutFor(br.getResult());
      const Pieces& s = pieces(br.getSrc());
      auto t = pieceType(br.getResult(), p.piece);
      forEachIndex(p.grid, [&](ArrayRef<int64_t> idx) {
        Shape si(idx);
        for (size_t i = 0; i < si.size(); ++i) if (s.grid[i] == 1) si[i] = 0;
        Value src = s.at(si);
        p.values.push_back(ArrayRef<int64_t>(s.piece) == ArrayRef<int64_t>(p.piece) ? src : BroadcastOp::create(b, loc, t, src));
      });
      pieces(br.getResult()) = p;
      return success();
    }
    // Everything else maps piece by piece: same grid for all tile operands
    // and results (elementwise, load, store, advance, prefetch, splat,
    // expand_dims, cross-warp-only reduce).
    Value shapeSource = op->getNumResults() && isTileValue(op->getResult(0)) ? op->getResult(0) : op->getOperand(0);
    Pieces ref = layoutFor(shapeSource);
    for (Value v : op->getOperands())
      if (isTileValue(v) && pieces(v).values.size() != (size_t)product(ref.grid))
        return op->emitError() << "operands split differently from the result (" << tileTypeOf(v) << ")";
    SmallVector<Pieces> results;
    for (Value r : op->getResults()) results.push_back(layoutFor(r));
    for (int64_t n = 0, total = product(ref.grid); n < total; ++n) {
      IRMapping m;
      for (Value v : op->getOperands())
        if (isTileValue(v)) m.map(v, pieces(v).values[n]);
      Operation* c = b.clone(*op, m);
      for (auto [i, r] : llvm::enumerate(c->getResults())) {
        if (auto bp = dyn_cast<BlockPtrType>(r.getType()))
          r.setType(BlockPtrType::get(ctx, pieceType(op->getResult(i), results[i].piece)));
        else if (isa<RankedTensorType>(r.getType()))
          r.setType(pieceType(op->getResult(i), results[i].piece));
        results[i].values.push_back(r);
      }
    }
    for (auto [i, r] : llvm::enumerate(op->getResults())) pieces(r) = results[i];
    return success();
  }

  // A dot whose B operand comes from a swizzled local buffer runs on the
  // warpgroup MMA: each warp holds 16 rows of the accumulator (the dot's
  // `horizontal` tiling puts the 4 warps of a warpgroup on 4 consecutive
  // 16-row strips, which one m64nNk16 computes), and B stays in local
  // memory. A does too when it also comes from a swizzled buffer; otherwise
  // it is held in registers as [16, k] blocks (FlashAttention's P: its
  // [16, 8] accumulator pieces joined, as for mma.sync). Per K step of
  // `group[2]` one dot of [16, k] x [k, N] on the accumulator's [16, 8]
  // pieces joined along N (concat), split back after the K steps
  // (extract): the lowering keeps that wide accumulator in the registers
  // wgmma works on.
  LogicalResult rewriteGroupDot(OpBuilder& b, DotOp d) {
    auto at = tileTypeOf(d.getA());
    int64_t M = at.getDimSize(0), K = at.getDimSize(1), N = tileTypeOf(d.getB()).getDimSize(1);
    if (group.empty())
      return d.emitError() << "operands in swizzled local memory need a warpgroup dot, which this target lacks";
    auto tiling = d->getAttrOfType<StringAttr>("tiling");
    if (M != group[0] || N % dot[1] || N > group[1] || K % group[2] || !tiling || tiling.getValue() != "horizontal")
      return d.emitError() << "a dot on swizzled local memory runs as a warpgroup dot: it needs the `horizontal` "
                              "tiling with "
                           << group[0] << " rows per warp, N a multiple of " << dot[1] << " up to " << group[1]
                           << " and K a multiple of " << group[2] << " (got " << M << "x" << N << "x" << K << ")";
    Pieces out = layoutFor(d.getResult());
    if (out.piece[0] != M || out.piece[1] != dot[1])
      return d.emitError() << "a warpgroup dot's accumulator must be split into [" << M << ", " << dot[1] << "] pieces";
    auto wide = RankedTensorType::get({M, N}, tileTypeOf(d.getResult()).getElementType());
    auto acc = subBlock(b, d.getLoc(), d.getC(), {0, 0}, {M, N});
    if (failed(acc)) return failure();
    Value v = *acc;
    for (int64_t kk = 0; kk < K / group[2]; ++kk) {
      auto a = subBlock(b, d.getLoc(), d.getA(), {0, kk * group[2]}, {M, group[2]});
      auto bb = subBlock(b, d.getLoc(), d.getB(), {kk * group[2], 0}, {group[2], N});
      if (failed(a) || failed(bb)) return failure();
      v = DotOp::create(b, d.getLoc(), wide, *a, *bb, v, nullptr, nullptr);
    }
    auto piece = RankedTensorType::get({M, dot[1]}, wide.getElementType());
    for (int64_t j = 0; j < N / dot[1]; ++j)
      out.values.push_back(ExtractOp::create(b, d.getLoc(), piece, v, b.getI64IntegerAttr(j)));
    pieces(d.getResult()) = out;
    return success();
  }

  LogicalResult rewriteDot(OpBuilder& b, DotOp d) {
    if (isGroupDotOperand(d.getA()) || isGroupDotOperand(d.getB())) {
      if (!isGroupDotOperand(d.getB()))
        return d.emitError() << "a warpgroup dot takes B from swizzled local memory (A from there or from registers)";
      return rewriteGroupDot(b, d);
    }
    auto at = tileTypeOf(d.getA());
    const int64_t pk = d.getBPairs() ? 2 : 1, pn = d.bColumnsPerN();  // B [K / 2, pn N] in K pairs
    int64_t M = at.getDimSize(0), K = at.getDimSize(1), N = tileTypeOf(d.getB()).getDimSize(1) / pn;
    // Integer dots keep K whole: the target multiplies K pairs, not K steps.
    int64_t m = std::min(dot[0], M), n = std::min(dot[1], N), k = pk == 2 ? K : std::min(dot[2], K);
    if (M % m || N % n || K % k)
      return d.emitError() << "dot " << M << "x" << N << "x" << K << " does not split into " << m << "x" << n << "x"
                           << k << " intrinsics";
    Pieces out = layoutFor(d.getResult());
    const Pieces& c = pieces(d.getC());
    auto ct = pieceType(d.getResult(), {m, n});
    for (int64_t i = 0; i < M / m; ++i)
      for (int64_t j = 0; j < N / n; ++j) {
        Value acc = c.at({i, j});
        for (int64_t kk = 0; kk < K / k; ++kk) {
          auto a = subBlock(b, d.getLoc(), d.getA(), {i * m, kk * k}, {m, k});
          auto bb = subBlock(b, d.getLoc(), d.getB(), {kk * k / pk, j * n * pn}, {k / pk, n * pn});
          if (failed(a) || failed(bb)) return failure();
          acc = DotOp::create(b, d.getLoc(), ct, *a, *bb, acc, nullptr, d.getBPairsAttr());
        }
        out.values.push_back(acc);
      }
    pieces(d.getResult()) = out;
    return success();
  }

  LogicalResult rewriteReduce(OpBuilder& b, ReduceOp r) {
    Location loc = r.getLoc();
    const Pieces& s = pieces(r.getSrc());
    Pieces out = layoutFor(r.getResult());
    auto t = pieceType(r.getResult(), out.piece);
    if (!r.getAxis()) {
      for (Value v : s.values)
        out.values.push_back(ReduceOp::create(b, loc, t, v, r.getKindAttr(), nullptr, r.getCrossWarpAttr(),
                                              r.getDstWarpsAttr(), r.getReassocAttr()));
      pieces(r.getResult()) = out;
      return success();
    }
    int64_t ax = *r.getAxis();
    // Pieces' indices would need their offsets: argmax reduces one whole tile.
    if (r.getKind() == "argmax" && s.grid[ax] > 1)
      return r.emitError() << "an argmax is not split into pieces (on sm_90 its lane-linear tile stays whole)";
    Shape want(s.piece);
    want.erase(want.begin() + ax);
    if (want != out.piece)
      return r.emitError() << "reduction result is split differently from its source";
    bool isMax = r.getKind() == "max";
    // The pieces along the axis are combined elementwise first and the one
    // piece left is reduced: one reduction per row of pieces (on sm_90 its
    // shuffles are the expensive part; attention's S row max and sum take
    // one per 16 rows instead of one per [16, 8] piece).
    forEachIndex(out.grid, [&](ArrayRef<int64_t> idx) {
      Value whole;
      for (int64_t g = 0; g < s.grid[ax]; ++g) {
        Shape si(idx);
        si.insert(si.begin() + ax, g);
        Value part = s.at(si);
        whole = !whole ? part : isMax ? Value(arith::MaximumFOp::create(b, loc, whole, part)) : Value(arith::AddFOp::create(b, loc, whole, part));
      }
      Value acc =
          ReduceOp::create(b, loc, t, whole, r.getKindAttr(), r.getAxisAttr(), nullptr, nullptr, r.getReassocAttr());
      if (r.getCrossWarp())
        acc = ReduceOp::create(b, loc, t, acc, r.getKindAttr(), nullptr, r.getCrossWarpAttr(), r.getDstWarpsAttr(),
                               r.getReassocAttr());
      out.values.push_back(acc);
    });
    pieces(r.getResult()) = out;
    return success();
  }

  func::FuncOp f;
  MLIRContext* ctx;
  Shape maxLoad, dot, group;
  bool dotFragments = false;
  llvm::EquivalenceClasses<Value> classes;
  DenseMap<Value, Shape> classPiece;
  // Stable references: rewriting holds a value's pieces while adding others.
  std::map<void*, Pieces> split;
  Pieces& pieces(Value v) { return split[v.getAsOpaquePointer()]; }
  DenseMap<std::pair<Value, int64_t>, Value> extracts;
  DenseMap<Value, Operation*> lastExtract;
  DenseMap<std::pair<Value, int64_t>, Value> joins;  // (first part, parts) -> tile.concat
  SmallVector<Operation*> dead;
};

struct MatchTargetSizePass : impl::MatchTargetSizeBase<MatchTargetSizePass> {
  using MatchTargetSizeBase::MatchTargetSizeBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    const UArch* u = nullptr;
    try {
      u = &uarchFor(target);
    } catch (const std::exception& e) {
      f.emitError() << e.what();
      return signalPassFailure();
    }
    Shape load{u->maxLoadRows, u->maxLoadRowBytes}, dot{u->dotM, u->dotN, u->dotK};
    if (!maxLoad.empty()) {
      if (maxLoad.size() != 2) {
        f.emitError() << "max-load takes rows,cols (in 16-bit elements)";
        return signalPassFailure();
      }
      load = {maxLoad[0], maxLoad[1] * 2};
    }
    if (!maxDot.empty()) {
      if (maxDot.size() != 3) {
        f.emitError() << "max-dot takes m,n,k";
        return signalPassFailure();
      }
      dot.assign(maxDot.begin(), maxDot.end());
    }
    // On a GPU a kernel without dots keeps its tiles whole: the lowering
    // spreads each over the warp's lanes, so no intrinsic shape applies.
    bool hasDot = false;
    f.walk([&](DotOp) { hasDot = true; });
    if (u->lanes > 1 && !hasDot) {
      auto strip = [](Value v) { v.setType(withEncoding(v.getType(), {})); };
      f.walk([&](Operation* op) { llvm::for_each(op->getResults(), strip); });
      f.walk([&](Block* blk) { llvm::for_each(blk->getArguments(), strip); });
      f.walk([&](arith::ConstantOp c) {
        if (auto d = dyn_cast<DenseElementsAttr>(c.getValue())) c.setValueAttr(d.reshape(cast<ShapedType>(c.getType())));
      });
    } else if (failed(Splitter(f, load, dot,
                               u->groupDotM ? Shape{u->groupDotM / u->warpsPerGroup(), u->groupDotMaxN, u->groupDotK}
                                            : Shape{},
                               u->dotFragmentTiles)
                          .run())) {
      return signalPassFailure();
    }
    f->setAttr("tile.target", StringAttr::get(&getContext(), u->name));
  }
};

}  // namespace
}  // namespace strata::tile
