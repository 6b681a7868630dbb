//===- NVVMMemory.cpp - shared memory, copies, TMA ----------------------------===//
//
// Part of convert-tile-to-nvvm: see ConvertTileToNVVM.cpp and NVVMLowering.h.
//===----------------------------------------------------------------------===//
#include "codegen/targets/cuda/NVVMLowering.h"

namespace strata::tile::nvvm {

Value Lowering::genericPointer(Location loc, Value view) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, view);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

Value Lowering::elementPtr(Location loc, Value view, ArrayRef<Value> idx, unsigned space, bool swizzled) {
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

Value Lowering::lowerAlloc(AllocOp a) {
  Location loc = a.getLoc();
  memref::GlobalOp g = local.dynamic;
  Value shared = memref::GetGlobalOp::create(b, loc, g.getType(), g.getSymName());
  auto i8 = b.getI8Type();
  Value bytes = memref::MemorySpaceCastOp::create(b, loc, MemRefType::get(g.getType().getShape(), i8), shared);
  bytes = memref::CastOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, i8), bytes);
  return memref::ViewOp::create(b, loc, memRefTypeOf(a.getType()), bytes, cst(local.allocs.lookup(a)),
                                ValueRange{cst(a.getSize())});
}

LogicalResult Lowering::lowerAsyncCopy(AsyncCopyOp c) {
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

Value Lowering::lowerPinnedLookup(BlockLookupOp l) {
  Location loc = l.getLoc();
  Value at = elementPtr(loc, l.getTable(), {l.getIndex()}, 1);
  Value v = inlinePtx(loc, b.getI64Type(), ValueRange{at}, "ld.global.b64 $0, [$1];", "=l,l", /*sideEffects=*/true);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value Lowering::lowerArrive(ArriveOp a) {
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

Value Lowering::opaqueI32(Location loc, Value v) {
  return inlinePtx(loc, b.getI32Type(), ValueRange{v}, "mov.b32 $0, $1;", "=r,r", /*sideEffects=*/false);
}

Value Lowering::inlinePtx(Location loc, Type type, ValueRange operands, StringRef text, StringRef constraints, bool sideEffects) {
  return LLVM::InlineAsmOp::create(b, loc, type, operands, text, constraints, sideEffects, /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None,
                                   LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
                                   /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

Value Lowering::runBytes(Location loc, Value size, Value along, int64_t eltBytes) {
  Value left = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, size, along), cst(0));
  return i32(loc, arith::MulIOp::create(b, loc, arith::MinSIOp::create(b, loc, left, cst(8)), cst(eltBytes)));
}

void Lowering::onThreadZero(Location loc, llvm::function_ref<void()> body) {
  OpBuilder::InsertionGuard guard(b);
  auto first = scf::IfOp::create(b, loc, TypeRange{}, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0)),
                                 false);
  b.setInsertionPointToStart(first.thenBlock());
  body();
}

void Lowering::lowerMBarrierInit(MBarrierInitOp m) {
  Location loc = m.getLoc();
  onThreadZero(loc, [&] {
    Value count = arith::ConstantIntOp::create(b, loc, b.getI32Type(), m.getArrivals());
    for (int64_t i = 0, n = local.mbarrierCounts.lookup(m); i < n; ++i)
      NVVM::MBarrierInitOp::create(b, loc, elementPtr(loc, m.getBarriers(), {cst(i)}, 3), count, Value());
    NVVM::FenceMbarrierInitOp::create(b, loc);
  });
  NVVM::Barrier0Op::create(b, loc);
}

void Lowering::lowerTmaCopy(TmaCopyOp c) {
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

void Lowering::fenceAsyncShared(Location loc) {
  NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
                             NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

FailureOr<Value> Lowering::lowerSwizzledStore(StoreOp s) {
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

void Lowering::lowerTmaStore(TmaStoreOp st) {
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

void Lowering::lowerMBarrierWait(MBarrierWaitOp w) {
  Location loc = w.getLoc();
  Value bar = elementPtr(loc, w.getBarriers(), {w.getSlot()}, 3);
  NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, i32(loc, w.getParity()),
                                        arith::ConstantIntOp::create(b, loc, b.getI32Type(), kMBarrierSuspendNs));
}

FailureOr<Value> Lowering::lowerLocalLoad(LoadOp l, const Frag& fr) {
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

}  // namespace strata::tile::nvvm
