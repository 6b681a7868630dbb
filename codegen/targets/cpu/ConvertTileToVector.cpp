//===- ConvertTileToVector.cpp - CPU lowering of intrinsic-sized tile IR --===//
#include "codegen/Passes.h"

#include "codegen/TileLowering.h"
#include "codegen/UArch.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace strata::tile {

#define GEN_PASS_DEF_CONVERTTILETOVECTOR
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

Type convertType(Type t) {
  if (auto r = dyn_cast<RankedTensorType>(t)) return VectorType::get(r.getShape(), r.getElementType());
  return memRefTypeOf(t);
}

class Lowering {
 public:
  Lowering(func::FuncOp f, bool vnni) : f(f), b(f.getContext()), vnni(vnni) {}

  LogicalResult run() {
    if (f.isExternal()) return success();
    int64_t numWarps = 1;
    if (auto a = f->getAttrOfType<IntegerAttr>("tile.num_warps")) numWarps = a.getInt();
    bool bad = false;
    f.walk([&](Operation* op) {
      for (Type t : op->getResultTypes())
        if (encodingOf(t) && !bad) {
          op->emitError() << "tile still has a layout encoding: run distribute-to-warps and match-target-size first";
          bad = true;
        }
      if (auto r = dyn_cast<ReduceOp>(op); r && r.getCrossWarp()) {
        r.emitError() << "cross-warp reductions are not supported by the CPU backend";
        bad = true;
      }
      if (isa<AllocOp, BarrierOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp, MBarrierInitOp, TmaCopyOp, TmaStoreOp,
              MBarrierWaitOp, ArriveOp, GroupDotWaitOp>(op)) {
        op->emitError()
            << "workgroup-local memory, async copies, barriers and arrival counters are not supported by the CPU backend";
        bad = true;
      }
    });
    if (bad) return failure();
    // A prefetch's pointer operand is a view by the time the op is lowered:
    // remember each block's shape first. Lines are the target's (recorded
    // by match-target-size).
    f.walk([&](PrefetchOp p) { prefetchBlocks[p] = cast<BlockPtrType>(p.getPtr().getType()).getTileType(); });
    if (!prefetchBlocks.empty()) {
      auto target = f->getAttrOfType<StringAttr>("tile.target");
      if (!target) return f.emitError() << "tile.prefetch needs the function's tile.target: run match-target-size first";
      lineBytes = uarchFor(target.getValue()).cacheLineBytes;
    }

    // Signature: pointers become memrefs; three program ids are appended.
    Block& entry = f.getBody().front();
    for (BlockArgument a : entry.getArguments()) a.setType(convertType(a.getType()));
    Value pid[3];
    for (int i = 0; i < 3; ++i) pid[i] = entry.addArgument(b.getIndexType(), f.getLoc());
    f.setType(FunctionType::get(f.getContext(), entry.getArgumentTypes(), f.getResultTypes()));

    // Warps run one after another: wrap the body in a loop over warp ids.
    b.setInsertionPointToStart(&entry);
    Value c0 = arith::ConstantIndexOp::create(b, f.getLoc(), 0);
    Value c1 = arith::ConstantIndexOp::create(b, f.getLoc(), 1);
    Value nw = arith::ConstantIndexOp::create(b, f.getLoc(), numWarps);
    auto warps = scf::ForOp::create(b, f.getLoc(), c0, nw, c1);
    Block* body = warps.getBody();
    Operation* ret = entry.getTerminator();
    body->getOperations().splice(body->begin(), entry.getOperations(), std::next(Block::iterator(warps)),
                                 Block::iterator(ret));
    Value warpId = warps.getInductionVar();

    LogicalResult status = rewriteTileOps(
        b, warps.getBody(), [](Value v) { return convertType(v.getType()); },
        [&](Operation* op) { return lower(op, pid, warpId); });
    f->removeAttr("tile.num_warps");
    return status;
  }

 private:
  // Lowers one op in place; returns its replacement value (null when the op
  // has none or is kept with retyped results).
  FailureOr<Value> lower(Operation* op, Value* pid, Value warpId) {
    Location loc = op->getLoc();
    if (auto p = dyn_cast<ProgramIdOp>(op)) return pid[p.getAxis()];
    if (isa<WarpIdOp>(op)) return warpId;
    if (auto m = dyn_cast<MakeBlockPtrOp>(op)) return lowerMakeBlockPtr(b, m, m.getBase());
    if (auto a = dyn_cast<AdvanceOp>(op)) return lowerAdvance(b, a, a.getPtr());
    if (auto l = dyn_cast<LoadOp>(op)) {
      auto vt = cast<VectorType>(convertType(l.getType()));
      auto view = cast<MemRefType>(l.getPtr().getType());
      if (vt.getRank() == 2 && view.getStridesAndOffset().first.back() != 1) {
        if (view.getStridesAndOffset().first.front() == 1)
          return lowerTransposedLoad(l, vt);
        return lowerStridedLoad(l, vt);
      }
      Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(vt.getElementType()));
      SmallVector<Value> zeros(vt.getRank(), arith::ConstantIndexOp::create(b, loc, 0));
      SmallVector<bool> inBounds(vt.getRank(), l.getInBounds());
      return Value(vector::TransferReadOp::create(b, loc, vt, l.getPtr(), zeros, pad, inBounds));
    }
    if (auto s = dyn_cast<StoreOp>(op)) {
      int64_t rank = cast<VectorType>(s.getValue().getType()).getRank();
      SmallVector<Value> zeros(rank, arith::ConstantIndexOp::create(b, loc, 0));
      SmallVector<bool> inBounds(rank, s.getInBounds());
      vector::TransferWriteOp::create(b, loc, s.getValue(), s.getPtr(), zeros, inBounds);
      return Value();
    }
    if (auto p = dyn_cast<PrefetchOp>(op)) return lowerPrefetch(p);
    if (auto l = dyn_cast<BlockLookupOp>(op)) return lowerBlockLookup(b, l);
    if (auto d = dyn_cast<DotOp>(op)) return lowerDot(d);
    if (auto e = dyn_cast<ExtractOp>(op)) {
      auto src = cast<VectorType>(e.getSrc().getType());
      auto dst = cast<VectorType>(convertType(e.getType()));
      SmallVector<int64_t> offsets(src.getRank()), ones(src.getRank(), 1);
      int64_t idx = e.getIndex();
      for (int64_t i = src.getRank() - 1; i >= 0; --i) {
        int64_t per = src.getDimSize(i) / dst.getDimSize(i);
        offsets[i] = (idx % per) * dst.getDimSize(i);
        idx /= per;
      }
      return Value(vector::ExtractStridedSliceOp::create(b, loc, e.getSrc(), offsets, dst.getShape(), ones));
    }
    if (auto r = dyn_cast<ReduceOp>(op)) {
      if (r.getKind() == "argmax") return r.emitError() << "the CPU backend does not lower argmax (sm_90 does)";
      auto src = cast<VectorType>(r.getSrc().getType());
      auto dstT = convertType(r.getType());
      bool isMax = r.getKind() == "max";
      // A max (or a sum marked reassoc) along the last dim of a power-of-two
      // length: halves combined elementwise until one column is left (log2 n
      // vector steps). LLVM expands the reduction intrinsics of maximumf
      // and of an ordered fadd into one scalar step per element (n - 1
      // dependent steps); a max's order never changes its result.
      const int64_t ax = r.getAxis() ? *r.getAxis() : -1, n = ax >= 0 ? src.getDimSize(ax) : 0;
      if ((isMax || r.getReassoc()) && src.getRank() == 2 && ax == 1 && n > 1 && llvm::isPowerOf2_64(n)) {
        Value v = r.getSrc();
        SmallVector<int64_t> shape(src.getShape()), zeros(src.getRank(), 0), ones(src.getRank(), 1);
        for (int64_t w = n / 2; w >= 1; w /= 2) {
          shape[ax] = w;
          SmallVector<int64_t> hiAt(zeros);
          hiAt[ax] = w;
          Value lo = vector::ExtractStridedSliceOp::create(b, loc, v, zeros, shape, ones);
          Value hi = vector::ExtractStridedSliceOp::create(b, loc, v, hiAt, shape, ones);
          v = isMax ? Value(arith::MaximumFOp::create(b, loc, lo, hi)) : Value(arith::AddFOp::create(b, loc, lo, hi));
        }
        return Value(vector::ShapeCastOp::create(b, loc, dstT, v));
      }
      auto kind = isMax ? vector::CombiningKind::MAXIMUMF : vector::CombiningKind::ADD;
      float init = isMax ? -std::numeric_limits<float>::infinity() : 0.f;
      Attribute initAttr = b.getFloatAttr(src.getElementType(), init);
      Value acc = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(cast<ShapedType>(dstT), initAttr));
      SmallVector<bool> mask(src.getRank(), false);
      mask[*r.getAxis()] = true;
      return Value(vector::MultiDimReductionOp::create(b, loc, r.getSrc(), acc, mask, kind));
    }
    // Joined pieces (an integer dot's B block of more K pairs than a load
    // piece has rows): each part inserted at its offset along the axis.
    if (auto c = dyn_cast<ConcatOp>(op)) {
      auto vt = cast<VectorType>(convertType(c.getType()));
      Value out = arith::ConstantOp::create(b, loc, b.getZeroAttr(vt));
      SmallVector<int64_t> at(vt.getRank(), 0), ones(vt.getRank(), 1);
      for (Value part : c.getSrcs()) {
        out = vector::InsertStridedSliceOp::create(b, loc, part, out, at, ones);
        at[c.getAxis()] += cast<VectorType>(part.getType()).getDimSize(c.getAxis());
      }
      return out;
    }
    if (auto e = dyn_cast<ExpandDimsOp>(op))
      return Value(vector::ShapeCastOp::create(b, loc, convertType(e.getType()), e.getSrc()));
    if (auto br = dyn_cast<BroadcastOp>(op))
      return Value(vector::BroadcastOp::create(b, loc, convertType(br.getType()), br.getSrc()));
    if (auto s = dyn_cast<SplatOp>(op))
      return Value(vector::BroadcastOp::create(b, loc, convertType(s.getType()), s.getValue()));
    if (auto c = dyn_cast<ConvertOp>(op))
      return lowerConvert(b, loc, c.getSrc(), cast<VectorType>(convertType(c.getType())));
    if (auto s = dyn_cast<SiluOp>(op)) {
      // x * sigmoid(x) = x / (1 + exp(-x))
      auto vt = cast<VectorType>(s.getSrc().getType());
      Value one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), 1.0)));
      Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, s.getSrc()));
      return Value(arith::DivFOp::create(b, loc, s.getSrc(), arith::AddFOp::create(b, loc, one, e)));
    }
    if (auto m = dyn_cast<MaskOp>(op)) return lowerMask(m);
    if (auto io = dyn_cast<IotaOp>(op)) return lowerIota(io);
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto d = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!d) return Value();
      auto vt = cast<VectorType>(convertType(c.getType()));
      return Value(arith::ConstantOp::create(b, loc, d.reshape(cast<ShapedType>(vt))));
    }
    // Elementwise arith/math (and anything else on scalars): retype in place.
    for (Value r : op->getResults()) r.setType(convertType(r.getType()));
    for (Type t : op->getResultTypes())
      if (isa<RankedTensorType, BlockPtrType>(t)) return op->emitError() << "the CPU backend cannot lower this op";
    return Value();
  }

  // One read prefetch (into the caches `locality` names) per cache line of each row of
  // the block: the row's first element, then every line's worth of elements
  // after it. Rows are contiguous in every block the kernels prefetch (a
  // strided view only gets its row starts). Addresses past the array are
  // harmless: x86 prefetches never fault.
  Value lowerPrefetch(PrefetchOp p) {
    Location loc = p.getLoc();
    RankedTensorType block = prefetchBlocks.lookup(p);
    auto view = cast<MemRefType>(p.getPtr().getType());
    int64_t rank = block.getRank();
    int64_t rows = rank == 2 ? block.getDimSize(0) : 1, cols = block.getDimSize(rank - 1);
    int64_t perLine = std::max<int64_t>(1, lineBytes * 8 / block.getElementTypeBitWidth());
    if (view.getStridesAndOffset().first.back() != 1) perLine = cols;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; j += perLine) {
        SmallVector<Value> idx;
        if (rank == 2) idx.push_back(arith::ConstantIndexOp::create(b, loc, i));
        idx.push_back(arith::ConstantIndexOp::create(b, loc, j));
        memref::PrefetchOp::create(b, loc, p.getPtr(), idx, /*isWrite=*/false, p.getLocality(),
                                   /*isDataCache=*/true);
      }
    return Value();
  }

  // Constant i64 vectors (of type `it`, the elements of `vt` in row-major
  // order) holding each element's row and column index in the 2-D tile.
  std::pair<Value, Value> indexGrid(Location loc, VectorType vt, VectorType it) {
    SmallVector<int64_t> rowIdx, colIdx;
    for (int64_t i = 0; i < vt.getDimSize(0); ++i)
      for (int64_t j = 0; j < vt.getDimSize(1); ++j) rowIdx.push_back(i), colIdx.push_back(j);
    return {arith::ConstantOp::create(b, loc, DenseElementsAttr::get(it, ArrayRef<int64_t>(rowIdx))),
            arith::ConstantOp::create(b, loc, DenseElementsAttr::get(it, ArrayRef<int64_t>(colIdx)))};
  }

  Value splatIndex(Location loc, Value index, VectorType it) {
    return vector::BroadcastOp::create(b, loc, it, arith::IndexCastOp::create(b, loc, b.getI64Type(), index));
  }

  // A 32-bit block whose rows are not contiguous and that is no transposed
  // view (neither stride 1) loads as one masked hardware gather instead of
  // an unrolled element-by-element transfer: element (i, j) is at offset +
  // i*s0 + j*s1 of the underlying buffer, present when i < size0 and j <
  // size1.
  Value lowerStridedLoad(LoadOp l, VectorType vt) {
    Location loc = l.getLoc();
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, l.getPtr());
    int64_t n = vt.getNumElements();
    // The flat view only carries the base address to the gather (its size
    // is never read); which elements exist is decided by the mask alone.
    auto flatType = MemRefType::get({ShapedType::kDynamic}, vt.getElementType());
    Value flat = memref::ReinterpretCastOp::create(b, loc, flatType, md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
                                                   {OpFoldResult(b.getIndexAttr(1))}, {OpFoldResult(b.getIndexAttr(1))});
    auto it = VectorType::get({n}, b.getI64Type());
    auto [rows, cols] = indexGrid(loc, vt, it);
    auto splat = [&](Value index) { return splatIndex(loc, index, it); };
    Value idx = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, rows, splat(md.getStrides()[0])),
                                      arith::MulIOp::create(b, loc, cols, splat(md.getStrides()[1])));
    Value mask = arith::AndIOp::create(b, loc,
                                       arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rows, splat(md.getSizes()[0])),
                                       arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, cols, splat(md.getSizes()[1])));
    auto flatVec = VectorType::get({n}, vt.getElementType());
    Value pass = arith::ConstantOp::create(b, loc, b.getZeroAttr(flatVec));
    Value g = vector::GatherOp::create(b, loc, flatVec, flat, ValueRange{md.getOffset()}, idx, mask, pass);
    return vector::ShapeCastOp::create(b, loc, vt, g);
  }

  // A block of a transposed view (unit stride along dim 0: K^T, [N, K]
  // weights viewed as [K, N]) is the transpose of a block whose rows are
  // contiguous: read that ([cols, rows], masked the same way by the view's
  // sizes) and transpose it in registers. x86 has no 16-bit gather (a
  // masked one becomes a branch per element, which LLVM's code generator
  // takes minutes over at attention sizes), and where gathers are slow
  // (AVX2 on the EPYC, Zen 1) LLVM scalarizes 32-bit ones the same way: the
  // paged-attention decode kernel's K^T was 22k instructions a key block.
  // Measured 2026-11-29 there, the 124.7M Llama: attention in a 128-token
  // prefill 53 -> 40 ms, in a batch-16 decode step 37 -> 21 ms, its
  // kernels compiled in 14 s instead of 19. (On the AVX-512 Xeon a gather
  // was as fast as this, 2026-11-21.)
  //
  // f32 blocks whose dims are multiples of 8 are read and transposed as 8x8
  // pieces: each is AVX2's 24-shuffle transpose (x86vector's lowering, see
  // Backend.cpp), where one shuffle of the whole flattened block legalized
  // to about 250 instructions for a [16, 8] block (the paged-attention
  // piece form's K^T piece, 2026-11-29).
  Value lowerTransposedLoad(LoadOp l, VectorType vt) {
    Location loc = l.getLoc();
    auto swap = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, b.getContext());
    Value view = memref::TransposeOp::create(b, loc, l.getPtr(), AffineMapAttr::get(swap));
    const int64_t R = vt.getDimSize(0), C = vt.getDimSize(1);
    Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(vt.getElementType()));
    SmallVector<bool> inBounds(2, l.getInBounds());
    auto index = [&](int64_t i) { return Value(arith::ConstantIndexOp::create(b, loc, i)); };
    constexpr int64_t E = 8;
    if (!vt.getElementType().isF32() || R % E || C % E ) {
      auto rowsType = VectorType::get({C, R}, vt.getElementType());
      Value rows = vector::TransferReadOp::create(b, loc, rowsType, view, ValueRange{index(0), index(0)}, pad, inBounds);
      return vector::TransposeOp::create(b, loc, rows, ArrayRef<int64_t>{1, 0});
    }
    // Piece (i, j) of the result is the transpose of the [8, 8] rows at
    // (j, i) of the view's transpose.
    auto pieceType = VectorType::get({E, E}, vt.getElementType());
    Value out = arith::ConstantOp::create(b, loc, b.getZeroAttr(vt));
    for (int64_t i = 0; i < R; i += E)
      for (int64_t j = 0; j < C; j += E) {
        Value rows = vector::TransferReadOp::create(b, loc, pieceType, view, ValueRange{index(j), index(i)}, pad, inBounds);
        Value t = vector::TransposeOp::create(b, loc, rows, ArrayRef<int64_t>{1, 0});
        out = vector::InsertStridedSliceOp::create(b, loc, t, out, ArrayRef<int64_t>{i, j}, ArrayRef<int64_t>{1, 1});
      }
    return out;
  }

  // keep(i, j) = col_base + j < limit && (!causal || col_base + j <= row_base + i),
  // from constant row/column index vectors plus the splatted bases.
  Value lowerMask(MaskOp m) {
    Location loc = m.getLoc();
    auto vt = cast<VectorType>(m.getSrc().getType());
    auto it = VectorType::get(vt.getShape(), b.getI64Type());
    auto [rowIdx, colIdx] = indexGrid(loc, vt, it);
    auto splat = [&](Value index) { return splatIndex(loc, index, it); };
    Value cols = arith::AddIOp::create(b, loc, colIdx, splat(m.getColBase()));
    Value keep = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, cols, splat(m.getLimit()));
    if (m.getCausal()) {
      Value rows = arith::AddIOp::create(b, loc, rowIdx, splat(m.getRowBase()));
      keep = arith::AndIOp::create(b, loc, keep, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, cols, rows));
    }
    Value ninf = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), -std::numeric_limits<double>::infinity())));
    return arith::SelectOp::create(b, loc, keep, m.getSrc(), ninf);
  }

  // Each element's index along the axis (a constant vector) plus the
  // splatted base, as f32.
  Value lowerIota(IotaOp io) {
    Location loc = io.getLoc();
    auto vt = cast<VectorType>(convertType(io.getType()));
    ArrayRef<int64_t> shape = vt.getShape();
    int64_t inner = 1;
    for (int64_t d = io.getAxis() + 1; d < vt.getRank(); ++d) inner *= shape[d];
    SmallVector<float> at;
    for (int64_t i = 0; i < vt.getNumElements(); ++i) at.push_back(float(i / inner % shape[io.getAxis()]));
    Value idx = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, ArrayRef<float>(at)));
    Value base = arith::SIToFPOp::create(b, loc, b.getF32Type(),
                                         arith::IndexCastOp::create(b, loc, b.getI64Type(), io.getBase()));
    return arith::AddFOp::create(b, loc, idx, vector::BroadcastOp::create(b, loc, vt, base));
  }

  // An integer dot (B in K pairs, tile.dot): for each row of A and each K
  // pair, A's two i16 values repeated across the row's N columns times B's
  // pair row (sign-extended to i16), the products of a pair summed: x86's
  // vpmaddwd plus an add, or with `vnni` one vpdpwssd (LLVM does not fuse
  // them itself once it has reassociated the adds). 512-bit on cpu-avx512
  // (AVX-512BW comes with every AVX-512F core this targets), else 256-bit;
  // rows of fewer than 16 products go 128-bit (SSE2's form).
  Value lowerIntDot(DotOp d) {
    Location loc = d.getLoc();
    auto at = cast<VectorType>(d.getA().getType());
    auto bt = cast<VectorType>(d.getB().getType());
    Type i16 = b.getI16Type(), i32 = b.getI32Type();
    // B as [K / 2, 2 N] i16: i8 sign-extended, i32 pairs reinterpreted.
    Value bw = d.getB();
    if (bt.getElementType().isInteger(8))
      bw = arith::ExtSIOp::create(b, loc, VectorType::get(bt.getShape(), i16), bw);
    else if (bt.getElementType().isInteger(32))
      bw = vector::BitCastOp::create(b, loc, VectorType::get({bt.getDimSize(0), 2 * bt.getDimSize(1)}, i16), bw);
    const int64_t M = at.getDimSize(0), K = at.getDimSize(1), N2 = cast<VectorType>(bw.getType()).getDimSize(1);
    const bool wide = f->getAttrOfType<StringAttr>("tile.target").getValue() == "cpu-avx512";
    int64_t w = wide && N2 % 32 == 0 ? 32 : N2 % 16 == 0 ? 16 : 8;
    const char* intrinsic = w == 32 ? "llvm.x86.avx512.pmaddw.d.512" : w == 16 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.sse2.pmadd.wd";
    const char* vnniIntrinsic = w == 32   ? "llvm.x86.avx512.vpdpwssd.512"
                                : w == 16 ? "llvm.x86.avx512.vpdpwssd.256"
                                          : "llvm.x86.avx512.vpdpwssd.128";
    auto chunkT = VectorType::get({w}, i16), sumT = VectorType::get({w / 2}, i32);
    Value out = d.getC();
    for (int64_t i = 0; i < M; ++i) {
      Value row = vector::ExtractOp::create(b, loc, out, ArrayRef<int64_t>{i});
      for (int64_t p = 0; p < K / 2; ++p) {
        // A's pair as one i32, repeated: (a0, a1, a0, a1, ...) as i16.
        Value pair = vector::ExtractStridedSliceOp::create(b, loc, d.getA(), ArrayRef<int64_t>{i, 2 * p},
                                                           ArrayRef<int64_t>{1, 2}, ArrayRef<int64_t>{1, 1});
        pair = vector::ShapeCastOp::create(b, loc, VectorType::get({2}, i16), pair);
        Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair);
        word = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
        Value rep = vector::BitCastOp::create(b, loc, chunkT,
                                              vector::BroadcastOp::create(b, loc, VectorType::get({w / 2}, i32), word));
        Value brow = vector::ExtractOp::create(b, loc, bw, ArrayRef<int64_t>{p});
        for (int64_t c = 0; c < N2; c += w) {
          Value bc = vector::ExtractStridedSliceOp::create(b, loc, brow, ArrayRef<int64_t>{c}, ArrayRef<int64_t>{w},
                                                           ArrayRef<int64_t>{1});
          Value acc = vector::ExtractStridedSliceOp::create(b, loc, row, ArrayRef<int64_t>{c / 2},
                                                            ArrayRef<int64_t>{w / 2}, ArrayRef<int64_t>{1});
          Value sum;
          if (vnni)
            sum = LLVM::CallIntrinsicOp::create(b, loc, sumT, b.getStringAttr(vnniIntrinsic), ValueRange{acc, rep, bc})
                      .getResult(0);
          else
            sum = arith::AddIOp::create(
                b, loc, acc,
                LLVM::CallIntrinsicOp::create(b, loc, sumT, b.getStringAttr(intrinsic), ValueRange{rep, bc}).getResult(0));
          row = vector::InsertStridedSliceOp::create(b, loc, sum, row, ArrayRef<int64_t>{c / 2}, ArrayRef<int64_t>{1});
        }
      }
      out = vector::InsertOp::create(b, loc, row, out, ArrayRef<int64_t>{i});
    }
    return out;
  }

  FailureOr<Value> lowerDot(DotOp d) {
    if (d.getBPairs()) {
      auto bt = cast<VectorType>(d.getB().getType());
      const int64_t i16PerRow = bt.getDimSize(1) * (bt.getElementType().isInteger(32) ? 2 : 1);
      if (i16PerRow % 8)
        return d.emitError() << "an integer dot's B rows hold a multiple of 8 values on the CPU (4 columns' pairs)";
      return lowerIntDot(d);
    }
    Location loc = d.getLoc();
    Value a = d.getA(), bb = d.getB();
    auto at = cast<VectorType>(a.getType());
    if (!at.getElementType().isF32()) {
      a = arith::ExtFOp::create(b, loc, VectorType::get(at.getShape(), b.getF32Type()), a);
      auto bt = cast<VectorType>(bb.getType());
      bb = arith::ExtFOp::create(b, loc, VectorType::get(bt.getShape(), b.getF32Type()), bb);
    }
    MLIRContext* ctx = b.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    auto maps = b.getAffineMapArrayAttr({AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {k, n}, ctx),
                                         AffineMap::get(3, 0, {m, n}, ctx)});
    auto iters = b.getArrayAttr({vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
                                 vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
                                 vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
    return Value(vector::ContractionOp::create(b, loc, a, bb, d.getC(), maps, iters));
  }

  func::FuncOp f;
  OpBuilder b;
  bool vnni;  // ConvertTileToVector's option
  DenseMap<Operation*, RankedTensorType> prefetchBlocks;
  int64_t lineBytes = 0;
};

struct ConvertTileToVectorPass : impl::ConvertTileToVectorBase<ConvertTileToVectorPass> {
  using ConvertTileToVectorBase::ConvertTileToVectorBase;
  void runOnOperation() override {
    if (failed(Lowering(getOperation(), vnni).run())) signalPassFailure();
  }
};

}  // namespace
}  // namespace strata::tile
