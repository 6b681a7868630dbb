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
#include "codegen/targets/cuda/NVVMLowering.h"
#include "mlir/IR/Matchers.h"

namespace strata::tile {

#define GEN_PASS_DEF_CONVERTTILETONVVM
#include "codegen/Passes.h.inc"

namespace nvvm {

LogicalResult Lowering::run() {
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

FailureOr<Value> Lowering::lower(Operation* op) {
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
  if (auto r = dyn_cast<ReshapeOp>(op)) {
    // Lane-linear on both sides (kernels without dots): the same elements
    // in the same lanes when both take the same vectors.
    const Frag &src = frags.of(r.getSrc()), &res = frags.of(r.getResult());
    if (src.kind != Frag::Lane || res.kind != Frag::Lane || src.vec != res.vec || src.collapseRows ||
        src.collapseCols)
      return op->emitError() << "the sm_90 lowering reshapes lane-linear tiles of one vector width only (" << src.str()
                             << " -> " << res.str() << ")";
    return r.getSrc();
  }
  if (auto br = dyn_cast<BroadcastOp>(op); br && frags.of(br.getResult()).kind == Frag::Lane) {
    const Frag &src = frags.of(br.getSrc()), &res = frags.of(br.getResult());
    if (src.numel == res.numel) return br.getSrc();
    if (repeatsInLane(src, res)) {
      // Each lane's element j becomes its whole vector j.
      SmallVector<int64_t> pos;
      for (int64_t j = 0; j < src.size(); ++j) pos.append(res.vec, j);
      return Value(vector::ShuffleOp::create(b, loc, br.getSrc(), br.getSrc(), pos));
    }
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
  if (auto d = dyn_cast<SegmentDotOp>(op)) return lowerSegmentDot(d);
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
  if (auto c = dyn_cast<ConvertOp>(op)) {
    auto dst = cast<VectorType>(laneType(c.getResult()));
    auto src = cast<VectorType>(c.getSrc().getType());
    if (src.getElementType().isInteger(8) && dst.getElementType().isF32()) {
      // Signed i8 -> f32 without the I2F unit (a quarter of the FP32
      // rate on sm_90, which a quantized GEMV's widening would saturate):
      // q ^ 0x80 = q + 128 in [0, 255] as the low mantissa bits of 2^23
      // (0x4B000000), an f32 that is exactly 2^23 + 128 + q; subtracting
      // 2^23 + 128 leaves q exactly.
      auto i8 = VectorType::get(src.getShape(), b.getI8Type()), i32 = VectorType::get(src.getShape(), b.getI32Type());
      auto splat = [&](VectorType t, Attribute v) { return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t, v)); };
      Value biased = arith::XOrIOp::create(b, loc, c.getSrc(), splat(i8, b.getI8IntegerAttr(-128)));
      Value wide = arith::ExtUIOp::create(b, loc, i32, biased);
      Value bits = arith::OrIOp::create(b, loc, wide, splat(i32, b.getI32IntegerAttr(0x4B000000)));
      Value f = arith::BitcastOp::create(b, loc, dst, bits);
      return Value(arith::SubFOp::create(b, loc, f, splat(dst, b.getF32FloatAttr(8388736.0f))));
    }
    return lowerConvert(b, loc, c.getSrc(), dst);
  }
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
  if (auto sh = dyn_cast<arith::ShRUIOp>(op)) {
    // A byte vector shifted right by one amount (nibbles unpacked from
    // quantized weights): as i32 words, masked to each byte's bits, where
    // NVPTX would shift byte by byte.
    auto vt = dyn_cast<VectorType>(sh.getLhs().getType());
    DenseElementsAttr amount;
    if (vt && vt.getElementType().isInteger(8) && vt.getNumElements() % 4 == 0 &&
        matchPattern(sh.getRhs(), m_Constant(&amount)) && amount.isSplat()) {
      const uint32_t by = amount.getSplatValue<APInt>().getZExtValue();
      if (by < 8) {
        auto wt = VectorType::get({vt.getNumElements() / 4}, b.getI32Type());
        auto splat = [&](uint32_t v) { return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(wt, b.getI32IntegerAttr(int32_t(v)))); };
        Value w = vector::BitCastOp::create(b, loc, wt, sh.getLhs());
        Value shifted = arith::ShRUIOp::create(b, loc, w, splat(by));
        Value masked = arith::AndIOp::create(b, loc, shifted, splat((0xFFu >> by) * 0x01010101u));
        return Value(vector::BitCastOp::create(b, loc, vt, masked));
      }
    }
  }
  // Elementwise arith/math and scalars: retype in place.
  for (Value r : op->getResults()) r.setType(laneType(r));
  return Value();
}

}  // namespace nvvm

namespace {

using namespace mlir;
using namespace nvvm;

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
               ExpandDimsOp, BroadcastOp, ReshapeOp, SplatOp, ConvertOp, SiluOp, ReduceOp, SegmentDotOp, BlockLookupOp, AllocOp, AsyncCopyOp,
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
