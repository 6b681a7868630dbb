//===- NVVMDots.cpp - mma and warpgroup dots ----------------------------------===//
//
// Part of convert-tile-to-nvvm: see ConvertTileToNVVM.cpp and NVVMLowering.h.
//===----------------------------------------------------------------------===//
#include "codegen/targets/cuda/NVVMLowering.h"

namespace strata::tile::nvvm {

Value Lowering::descriptorOperand(Location loc, Value orig, GroupOperand g) {
  g.cols = cast<RankedTensorType>(orig.getType()).getDimSize(1);
  auto vt = cast<VectorType>(laneType(orig));
  Value v = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getZeroAttr(vt.getElementType())));
  groupOperands[v] = g;
  return v;
}

Value Lowering::matrixDescriptor(Location loc, Value ptr) {
  Type i64 = b.getI64Type();
  auto c64 = [&](uint64_t v) { return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(int64_t(v))); };
  Value addr = LLVM::PtrToIntOp::create(b, loc, i64, ptr);
  Value start = LLVM::LShrOp::create(b, loc, LLVM::AndOp::create(b, loc, addr, c64(0x3FFFF)), c64(4));
  uint64_t fixed = (uint64_t(1) << 16) | (uint64_t(kSwizzleAtomBytes / 16) << 32) | (uint64_t(1) << 62);
  return LLVM::OrOp::create(b, loc, start, c64(fixed));
}

FailureOr<Value> Lowering::lowerGroupDot(DotOp d) {
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

Value Lowering::registerAGroupDot(Location loc, Value aFrag, Value descB, Value acc, Type st, int64_t n, Type et, bool nMajor) {
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

FailureOr<Value> Lowering::lowerDot(DotOp d) {
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

void Lowering::lowerGroupDotWait(GroupDotWaitOp w) {
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

}  // namespace strata::tile::nvvm
