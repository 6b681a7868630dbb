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

// The i16 form of a bf16 constant (a float or dense float attribute, which
// the checks made sure of): the same bits.
Attribute asBits(Attribute value) {
  auto i16 = IntegerType::get(value.getContext(), 16);
  if (auto f = dyn_cast<FloatAttr>(value)) return IntegerAttr::get(i16, f.getValue().bitcastToAPInt());
  return cast<DenseFPElementsAttr>(value).bitcast(i16);
}

bool holdsBf16(TypeRange types) {
  return llvm::any_of(types, [](Type t) { return bool(withoutBf16(t)); });
}

struct LegalizeBf16StoragePass : impl::LegalizeBf16StorageBase<LegalizeBf16StoragePass> {
  void runOnOperation() override {
    // Check every op on the original types first: once a producer is
    // retyped, its users no longer show that they took bf16.
    bool failed = false;
    getOperation().walk([&](Operation* op) {
      if (auto f = dyn_cast<LLVM::LLVMFuncOp>(op)) {
        auto type = f.getFunctionType();
        if (withoutBf16(type.getReturnType()) || holdsBf16(type.getParams())) {
          op->emitOpError("takes or returns bf16 values; kernels take bf16 buffers through pointers");
          failed = true;
        }
        return;
      }
      if (!holdsBf16(op->getOperandTypes()) && !holdsBf16(op->getResultTypes())) return;
      if (!onlyMoves(op)) {
        op->emitOpError("computes on bf16 values: expand bf16 arithmetic (arith-expand{include-bf16}) first");
        failed = true;
      } else if (isa<LLVM::ConstantOp>(op) &&
                 !isa<FloatAttr, DenseFPElementsAttr>(cast<LLVM::ConstantOp>(op).getValue())) {
        op->emitOpError("holds a bf16 constant of an unexpected kind");
        failed = true;
      }
    });
    if (failed) return signalPassFailure();
    getOperation().walk([](Operation* op) {
      if (auto c = dyn_cast<LLVM::ConstantOp>(op); c && withoutBf16(c.getType())) {
        c.getResult().setType(withoutBf16(c.getType()));
        c.setValueAttr(asBits(c.getValue()));
        return;
      }
      for (Value r : op->getResults())
        if (Type t = withoutBf16(r.getType())) r.setType(t);
    });
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
