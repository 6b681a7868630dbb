//===- LegalizeBf16Storage.cpp - bf16 moves as i16 on the host CPU --------===//
//
// After arith-expand{include-bf16}, bf16 values in the LLVM dialect only
// move between memory and the integer code that widens / narrows them. This
// pass retypes each of them to i16 of the same shape, in place: the ops that
// carry them (loads, stores, shuffles, aggregates, selects, branches) do not
// care about the element type beyond its size, which is the same.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

namespace strata::tile {

#define GEN_PASS_DEF_LEGALIZEBF16STORAGE
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

// `t` with every bf16 (scalar, vector element, array element) replaced by
// i16; null when `t` holds no bf16.
Type withoutBf16(Type t) {
  MLIRContext* ctx = t.getContext();
  if (t.isBF16()) return IntegerType::get(ctx, 16);
  if (auto v = dyn_cast<VectorType>(t))
    if (v.getElementType().isBF16()) return v.clone(IntegerType::get(ctx, 16));
  if (auto a = dyn_cast<LLVM::LLVMArrayType>(t))
    if (Type e = withoutBf16(a.getElementType())) return LLVM::LLVMArrayType::get(e, a.getNumElements());
  return {};
}

// Ops that only move their values: the bits of a bf16 operand or result are
// carried unchanged, so i16 of the same shape works the same way.
bool onlyMoves(Operation* op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::MaskedLoadOp, LLVM::MaskedStoreOp, LLVM::masked_gather,
             LLVM::masked_scatter, LLVM::ExtractValueOp, LLVM::InsertValueOp, LLVM::ExtractElementOp,
             LLVM::InsertElementOp, LLVM::ShuffleVectorOp, LLVM::SelectOp, LLVM::PoisonOp, LLVM::UndefOp,
             LLVM::ZeroOp, LLVM::ConstantOp, LLVM::BitcastOp, LLVM::BrOp, LLVM::CondBrOp>(op);
}

// The i16 form of a bf16 constant: the same bits.
Attribute asBits(Attribute value, Type i16Type) {
  if (auto f = dyn_cast<FloatAttr>(value))
    return IntegerAttr::get(i16Type, f.getValue().bitcastToAPInt());
  if (auto d = dyn_cast<DenseFPElementsAttr>(value)) return d.bitcast(IntegerType::get(value.getContext(), 16));
  return {};
}

struct LegalizeBf16StoragePass : impl::LegalizeBf16StorageBase<LegalizeBf16StoragePass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](Operation* op) {
      bool touches = llvm::any_of(op->getOperandTypes(), [](Type t) { return bool(withoutBf16(t)); }) ||
                     llvm::any_of(op->getResultTypes(), [](Type t) { return bool(withoutBf16(t)); });
      if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op)) {
        auto type = f.getFunctionType();
        touches = withoutBf16(type.getReturnType()) ||
                  llvm::any_of(type.getParams(), [](Type t) { return bool(withoutBf16(t)); });
        if (touches) {
          op->emitOpError("takes or returns bf16 values; kernels take bf16 buffers through pointers");
          failed = true;
        }
        return;
      }
      if (!touches) return;
      if (!onlyMoves(op)) {
        op->emitOpError("computes on bf16 values: expand bf16 arithmetic (arith-expand{include-bf16}) first");
        failed = true;
        return;
      }
      for (Value r : op->getResults())
        if (Type t = withoutBf16(r.getType())) r.setType(t);
      if (auto c = dyn_cast<LLVM::ConstantOp>(op)) {
        Attribute bits = asBits(c.getValue(), getElementTypeOrSelf(c.getType()));
        if (!bits) {
          op->emitOpError("holds a bf16 constant of an unexpected kind");
          failed = true;
          return;
        }
        c.setValueAttr(bits);
      }
    });
    if (failed) return signalPassFailure();
    getOperation().walk([](Block* b) {
      for (BlockArgument a : b->getArguments())
        if (Type t = withoutBf16(a.getType())) a.setType(t);
    });
    // bf16 <-> i16 bitcasts are now i16 -> i16.
    getOperation().walk([](LLVM::BitcastOp c) {
      if (c.getArg().getType() != c.getType()) return;
      c.getResult().replaceAllUsesWith(c.getArg());
      c.erase();
    });
  }
};

}  // namespace

}  // namespace strata::tile
