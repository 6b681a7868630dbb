#include "codegen/TileLowering.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace strata::tile {

using namespace mlir;

namespace {

// size - delta, folded to a non-negative constant when both are constants
// (a view's static size must not be negative).
OpFoldResult shrunk(OpBuilder& b, Location loc, Value size, Value delta) {
  auto cs = getConstantIntValue(size), cd = getConstantIntValue(delta);
  if (cs && cd) return b.getIndexAttr(std::max<int64_t>(*cs - *cd, 0));
  return Value(arith::SubIOp::create(b, loc, size, delta));
}

// max(size - offset, 0): what is left of the array from the block on.
OpFoldResult remaining(OpBuilder& b, Location loc, Value size, Value offset) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value left = arith::SubIOp::create(b, loc, size, offset);
  return Value(arith::MaxSIOp::create(b, loc, left, zero));
}

}  // namespace

Type memRefTypeOf(Type t) {
  if (auto p = dyn_cast<PtrType>(t)) return MemRefType::get({ShapedType::kDynamic}, p.getElementType());
  if (auto bp = dyn_cast<BlockPtrType>(t)) {
    int64_t rank = bp.getTileType().getRank();
    SmallVector<int64_t> dyn(rank, ShapedType::kDynamic);
    auto layout = StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic, dyn);
    return MemRefType::get(dyn, bp.getTileType().getElementType(), layout);
  }
  return t;
}

Value lowerMakeBlockPtr(OpBuilder& b, MakeBlockPtrOp m, Value base) {
  Location loc = m.getLoc();
  Value off = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<OpFoldResult> sizes, strides;
  for (auto [s, st, o] : llvm::zip(m.getShape(), m.getStrides(), m.getOffsets())) {
    off = arith::AddIOp::create(b, loc, off, arith::MulIOp::create(b, loc, o, st));
    sizes.push_back(remaining(b, loc, s, o));
    strides.push_back(st);
  }
  // Unit strides are kept static in the view's type: innermost, rows are
  // contiguous and load as whole vectors; outermost (a transposed view:
  // K^T, [N, K] weights as [K, N]), columns are (the CPU loads 16-bit
  // blocks of such views as rows plus a transpose in registers).
  auto type = cast<MemRefType>(memRefTypeOf(m.getType()));
  SmallVector<int64_t> st(type.getRank(), ShapedType::kDynamic);
  bool unit = false;
  for (auto [i, stride] : llvm::enumerate(strides))
    if (getConstantIntValue(stride) == 1) {
      st[i] = 1;
      stride = b.getIndexAttr(1);
      unit = true;
    }
  if (unit)
    type = MemRefType::get(type.getShape(), type.getElementType(),
                           StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, st));
  return memref::ReinterpretCastOp::create(b, loc, type, base, OpFoldResult(off), sizes, strides);
}

Value lowerBlockLookup(OpBuilder& b, BlockLookupOp op) {
  Value v = memref::LoadOp::create(b, op.getLoc(), op.getTable(), ValueRange{op.getIndex()});
  return arith::IndexCastOp::create(b, op.getLoc(), b.getIndexType(), v);
}

Value lowerAdvance(OpBuilder& b, AdvanceOp a, Value view) {
  Location loc = a.getLoc();
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, view);
  Value off = md.getOffset();
  SmallVector<OpFoldResult> sizes, strides;
  auto type = cast<MemRefType>(view.getType());
  SmallVector<int64_t> staticStrides = type.getStridesAndOffset().first;
  for (auto [i, s, st, d] : llvm::enumerate(md.getSizes(), md.getStrides(), a.getOffsets())) {
    off = arith::AddIOp::create(b, loc, off, arith::MulIOp::create(b, loc, d, st));
    // No clamp at zero here: a negative extent masks everything just the
    // same (bounds compare signed), and s - d per step is a plain induction
    // variable that LLVM folds away on unmasked paths.
    sizes.push_back(shrunk(b, loc, s, d));
    strides.push_back(ShapedType::isDynamic(staticStrides[i]) ? OpFoldResult(st) : b.getIndexAttr(staticStrides[i]));
  }
  return memref::ReinterpretCastOp::create(b, loc, type, md.getBaseBuffer(), OpFoldResult(off), sizes, strides);
}

Value lowerConvert(OpBuilder& b, Location loc, Value src, VectorType dst) {
  auto from = cast<VectorType>(src.getType());
  if (from.getElementType() == dst.getElementType()) return src;
  if (from.getElementType().isInteger()) return arith::SIToFPOp::create(b, loc, dst, src);  // i8: exact; i32: rounded
  if (dst.getElementType().isInteger())  // f32 -> i8, ties to even (the producer keeps the values in range)
    return arith::FPToSIOp::create(b, loc, dst, math::RoundEvenOp::create(b, loc, src));
  if (from.getElementTypeBitWidth() < dst.getElementTypeBitWidth()) return arith::ExtFOp::create(b, loc, dst, src);
  return arith::TruncFOp::create(b, loc, dst, src);
}

LogicalResult rewriteTileOps(OpBuilder& b, Block* body, function_ref<Type(Value)> retype,
                             function_ref<FailureOr<Value>(Operation*)> lower, function_ref<void(Value, Value)> replaced) {
  LogicalResult status = success();
  SmallVector<Operation*> dead;
  body->walk<WalkOrder::PreOrder>([&](Operation* op) {
    if (auto fo = dyn_cast<scf::ForOp>(op)) {
      for (auto [init, arg, res] : llvm::zip(fo.getInitArgs(), fo.getRegionIterArgs(), fo.getResults())) {
        Type t = isa<MemRefType>(init.getType()) ? init.getType() : retype(arg);
        arg.setType(t);
        res.setType(t);
      }
      return WalkResult::advance();
    }
    b.setInsertionPoint(op);
    FailureOr<Value> repl = lower(op);
    if (failed(repl)) {
      status = failure();
      return WalkResult::interrupt();
    }
    if (*repl) {
      if (replaced) replaced(op->getResult(0), *repl);
      op->getResult(0).replaceAllUsesWith(*repl);
      dead.push_back(op);
    } else if (op->getNumResults() == 0 && isa_and_nonnull<TileDialect>(op->getDialect())) {
      dead.push_back(op);  // stores, prefetches, copies, waits, barriers
    }
    return WalkResult::advance();
  });
  for (Operation* op : llvm::reverse(dead)) op->erase();
  return status;
}

}  // namespace strata::tile
