#include "codegen/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "codegen/TileDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "codegen/TileAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "codegen/TileTypes.cpp.inc"

#define GET_OP_CLASSES
#include "codegen/TileOps.cpp.inc"

namespace strata::tile {

using namespace mlir;

namespace {
// Prints layouts as #blocked, #dot_op, #slice aliases: tile IR is read by people.
struct TileAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream& os) const override {
    if (isa<BlockedEncodingAttr>(attr)) os << "blocked";
    else if (isa<DotOperandEncodingAttr>(attr)) os << "dot_op";
    else if (isa<SliceEncodingAttr>(attr)) os << "slice";
    else return AliasResult::NoAlias;
    return AliasResult::FinalAlias;
  }
};
}  // namespace

void TileDialect::initialize() {
  addInterfaces<TileAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "codegen/TileAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "codegen/TileTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "codegen/TileOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Layout helpers
//===----------------------------------------------------------------------===//

int64_t WarpLayout::numWarps() const {
  int64_t n = 1;
  for (int64_t w : warpsPerCTA) n *= w;
  return n;
}

FailureOr<WarpLayout> equivalentBlocked(Attribute enc, ArrayRef<int64_t> shape) {
  if (auto b = dyn_cast_or_null<BlockedEncodingAttr>(enc))
    return WarpLayout{llvm::to_vector(b.getSizePerWarp()), llvm::to_vector(b.getWarpsPerCTA()),
                      llvm::to_vector(b.getOrder())};
  if (auto d = dyn_cast_or_null<DotOperandEncodingAttr>(enc)) {
    if (shape.size() != 2) return failure();
    auto p = equivalentBlocked(d.getParent(), shape);
    if (failed(p) || p->sizePerWarp.size() != 2) return failure();
    if (d.getOpIdx() == 0) p->sizePerWarp[1] = shape[1];
    else p->sizePerWarp[0] = shape[0];
    return p;
  }
  if (auto s = dyn_cast_or_null<SliceEncodingAttr>(enc)) {
    if (s.getDim() > shape.size()) return failure();
    SmallVector<int64_t> parentShape(shape);
    parentShape.insert(parentShape.begin() + s.getDim(), 1);
    auto p = equivalentBlocked(s.getParent(), parentShape);
    if (failed(p) || s.getDim() >= p->sizePerWarp.size()) return failure();
    p->sizePerWarp.erase(p->sizePerWarp.begin() + s.getDim());
    p->warpsPerCTA.erase(p->warpsPerCTA.begin() + s.getDim());
    // The removed dim leaves the order; later dims shift down by one.
    SmallVector<int64_t> order;
    for (int64_t o : p->order)
      if (o != (int64_t)s.getDim()) order.push_back(o > (int64_t)s.getDim() ? o - 1 : o);
    p->order = order;
    return p;
  }
  return failure();
}

bool isTileValue(Value v) { return isa<RankedTensorType, BlockPtrType>(v.getType()); }

// Every use of `v` (through tile.advance) copies or prefetches.
static bool onlyMovesData(Value v) {
  if (v.use_empty()) return false;
  return llvm::all_of(v.getUsers(), [](Operation* u) {
    if (isa<AsyncCopyOp, TmaCopyOp, TmaStoreOp, PrefetchOp>(u)) return true;
    auto a = dyn_cast<AdvanceOp>(u);
    return a && onlyMovesData(a.getResult());
  });
}

bool isCopyPointer(Value v) {
  if (!isa<BlockPtrType>(v.getType())) return false;
  // Judge the whole advance chain from its root: an advance of a pointer
  // that is also loaded from shares that pointer's layout.
  while (auto a = v.getDefiningOp<AdvanceOp>()) v = a.getPtr();
  return onlyMovesData(v);
}

AllocOp localBufferOf(Value v) {
  for (;;) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
      if (!loop || arg.getArgNumber() == 0) return nullptr;
      v = loop.getInitArgs()[arg.getArgNumber() - 1];
      continue;
    }
    Operation* def = v.getDefiningOp();
    if (auto a = dyn_cast_or_null<AllocOp>(def)) return a;
    if (auto m = dyn_cast_or_null<MakeBlockPtrOp>(def)) v = m.getBase();
    else if (auto a = dyn_cast_or_null<AdvanceOp>(def)) v = a.getPtr();
    else return nullptr;
  }
}

bool isLocalPointer(Value v) { return localBufferOf(v) != nullptr; }

bool isSwizzledLocalPointer(Value v) {
  AllocOp a = localBufferOf(v);
  return a && a.getSwizzle();
}

bool isGroupDotOperand(Value v) {
  auto l = v.getDefiningOp<LoadOp>();
  return l && isSwizzledLocalPointer(l.getPtr());
}

RankedTensorType tileTypeOf(Value v) {
  if (auto b = dyn_cast<BlockPtrType>(v.getType())) return b.getTileType();
  return cast<RankedTensorType>(v.getType());
}

Attribute encodingOf(Type t) {
  if (auto b = dyn_cast<BlockPtrType>(t)) t = b.getTileType();
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt ? rt.getEncoding() : Attribute();
}

// Rebuilds a tile type (or a block pointer's tile) with `make`.
static Type rebuildTile(Type t, function_ref<RankedTensorType(RankedTensorType)> make) {
  if (auto b = dyn_cast<BlockPtrType>(t)) return BlockPtrType::get(t.getContext(), make(b.getTileType()));
  if (auto rt = dyn_cast<RankedTensorType>(t)) return make(rt);
  return t;
}

Type withEncoding(Type t, Attribute enc) {
  return rebuildTile(t, [&](RankedTensorType rt) { return RankedTensorType::get(rt.getShape(), rt.getElementType(), enc); });
}

Type withShape(Type t, ArrayRef<int64_t> shape) {
  return rebuildTile(t, [&](RankedTensorType rt) { return RankedTensorType::get(shape, rt.getElementType(), rt.getEncoding()); });
}

// Checks a layout against a tile shape: per dim, the tile is split over the
// warps of that dim or replicated in each of them (size-1 dims always are).
static LogicalResult verifyLayoutOnShape(const WarpLayout& l, ArrayRef<int64_t> shape,
                                         function_ref<InFlightDiagnostic()> emitError) {
  if (l.sizePerWarp.size() != shape.size())
    return emitError() << "layout has rank " << l.sizePerWarp.size() << " but the tile has rank " << shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i], p = l.sizePerWarp[i], w = l.warpsPerCTA[i];
    if (ShapedType::isDynamic(s)) return emitError() << "tiles have static shapes";
    if (s != p && s != p * w && s != 1)
      return emitError() << "dim " << i << " of size " << s << " is neither split over " << w
                         << " warps of " << p << " nor one block of " << p << " per warp";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Attribute syntax: #tile.<mnemonic><{key = value, ...}>
//===----------------------------------------------------------------------===//

static DictionaryAttr parseDict(AsmParser& p) {
  DictionaryAttr d;
  if (p.parseLess() || p.parseAttribute(d) || p.parseGreater()) return {};
  return d;
}

static std::optional<SmallVector<int64_t>> intList(AsmParser& p, DictionaryAttr d, StringRef key) {
  auto arr = dyn_cast_or_null<ArrayAttr>(d.get(key));
  if (!arr) {
    p.emitError(p.getCurrentLocation(), "expected '") << key << "' as a list of integers";
    return std::nullopt;
  }
  SmallVector<int64_t> out;
  for (Attribute a : arr) {
    auto i = dyn_cast<IntegerAttr>(a);
    if (!i) {
      p.emitError(p.getCurrentLocation(), "'") << key << "' must list integers";
      return std::nullopt;
    }
    out.push_back(i.getInt());
  }
  return out;
}

static void printList(AsmPrinter& p, ArrayRef<int64_t> v) {
  p << "[";
  llvm::interleaveComma(v, p);
  p << "]";
}

Attribute BlockedEncodingAttr::parse(AsmParser& p, Type) {
  DictionaryAttr d = parseDict(p);
  if (!d) return {};
  auto s = intList(p, d, "sizePerWarp"), w = intList(p, d, "warpsPerCTA"), o = intList(p, d, "order");
  if (!s || !w || !o) return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), *s, *w, *o);
}

void BlockedEncodingAttr::print(AsmPrinter& p) const {
  p << "<{sizePerWarp = ";
  printList(p, getSizePerWarp());
  p << ", warpsPerCTA = ";
  printList(p, getWarpsPerCTA());
  p << ", order = ";
  printList(p, getOrder());
  p << "}>";
}

LogicalResult BlockedEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> size,
                                          ArrayRef<int64_t> warps, ArrayRef<int64_t> order) {
  if (size.size() != warps.size() || size.size() != order.size())
    return emitError() << "sizePerWarp, warpsPerCTA and order must have one entry per dim";
  SmallVector<bool> seen(order.size(), false);
  for (int64_t o : order) {
    if (o < 0 || o >= (int64_t)order.size() || seen[o])
      return emitError() << "order must be a permutation of the dims";
    seen[o] = true;
  }
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] <= 0 || warps[i] <= 0) return emitError() << "sizePerWarp and warpsPerCTA must be positive";
  return success();
}

LogicalResult BlockedEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                  function_ref<InFlightDiagnostic()> emitError) const {
  return verifyLayoutOnShape(*equivalentBlocked(*this, shape), shape, emitError);
}

static Attribute parseWithParent(AsmParser& p, StringRef key, unsigned& value, Attribute& parent) {
  DictionaryAttr d = parseDict(p);
  if (!d) return {};
  auto i = dyn_cast_or_null<IntegerAttr>(d.get(key));
  parent = d.get("parent");
  if (!i || !parent) {
    p.emitError(p.getNameLoc(), "expected '") << key << "' (integer) and 'parent' (an encoding)";
    return {};
  }
  value = (unsigned)i.getInt();
  return parent;
}

Attribute DotOperandEncodingAttr::parse(AsmParser& p, Type) {
  unsigned idx;
  Attribute parent;
  if (!parseWithParent(p, "opIdx", idx, parent)) return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), idx, parent);
}

void DotOperandEncodingAttr::print(AsmPrinter& p) const {
  p << "<{opIdx = " << getOpIdx() << ", parent = ";
  p.printAttribute(getParent());
  p << "}>";
}

static bool isEncoding(Attribute a) {
  return isa<BlockedEncodingAttr, DotOperandEncodingAttr, SliceEncodingAttr>(a);
}

LogicalResult DotOperandEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned opIdx,
                                             Attribute parent) {
  if (opIdx > 1) return emitError() << "opIdx must be 0 (A) or 1 (B), got " << opIdx;
  if (!isEncoding(parent)) return emitError() << "parent must be a tile layout encoding, got " << parent;
  return success();
}

LogicalResult DotOperandEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                     function_ref<InFlightDiagnostic()> emitError) const {
  if (shape.size() != 2) return emitError() << "dot operands are rank 2, got rank " << shape.size();
  auto l = equivalentBlocked(*this, shape);
  if (failed(l)) return emitError() << "the parent of a dot operand must be a rank-2 layout";
  return verifyLayoutOnShape(*l, shape, emitError);
}

Attribute SliceEncodingAttr::parse(AsmParser& p, Type) {
  unsigned dim;
  Attribute parent;
  if (!parseWithParent(p, "dim", dim, parent)) return {};
  return getChecked([&] { return p.emitError(p.getNameLoc()); }, p.getContext(), dim, parent);
}

void SliceEncodingAttr::print(AsmPrinter& p) const {
  p << "<{dim = " << getDim() << ", parent = ";
  p.printAttribute(getParent());
  p << "}>";
}

LogicalResult SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError, unsigned,
                                        Attribute parent) {
  if (!isEncoding(parent)) return emitError() << "parent must be a tile layout encoding, got " << parent;
  return success();
}

LogicalResult SliceEncodingAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                                function_ref<InFlightDiagnostic()> emitError) const {
  auto l = equivalentBlocked(*this, shape);
  if (failed(l)) return emitError() << "slice dim " << getDim() << " is not a dim of the parent layout";
  return verifyLayoutOnShape(*l, shape, emitError);
}

LogicalResult BlockPtrType::verify(function_ref<InFlightDiagnostic()> emitError, RankedTensorType t) {
  if (!t.hasStaticShape()) return emitError() << "block pointers point to static-shaped blocks, got " << t;
  return success();
}

//===----------------------------------------------------------------------===//
// Op verifiers
//===----------------------------------------------------------------------===//

static RankedTensorType tileOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult MakeBlockPtrOp::verify() {
  RankedTensorType t = getResult().getType().getTileType();
  size_t rank = t.getRank();
  if (getShape().size() != rank || getStrides().size() != rank || getOffsets().size() != rank)
    return emitOpError() << "needs " << rank << " shape, stride and offset values for a rank-" << rank
                         << " block, got " << getShape().size() << ", " << getStrides().size() << ", "
                         << getOffsets().size();
  if (getBase().getType().getElementType() != t.getElementType())
    return emitOpError() << "base holds " << getBase().getType().getElementType() << " but the block is "
                         << t.getElementType();
  return success();
}

LogicalResult AdvanceOp::verify() {
  if ((int64_t)getOffsets().size() != getPtr().getType().getTileType().getRank())
    return emitOpError() << "needs one offset per dim of the block";
  return success();
}

// tile.load's and tile.store's promise of aligned runs (`contiguous`, `run`).
// A load may promise runs without in_bounds (each run wholly inside or
// outside the array); a store may not.
static LogicalResult verifyRuns(Operation* op, bool inBounds, std::optional<uint64_t> c, std::optional<uint64_t> r,
                                int64_t rank, bool maskedRuns = false) {
  if (r) {
    if (!c) return op->emitOpError("run needs contiguous (it sizes the contiguous runs)");
    if (*r < 2 || (*r & (*r - 1))) return op->emitOpError() << "run " << *r << " is not a power of two of at least 2";
  }
  if (!c) return success();
  if (!inBounds && !maskedRuns)
    return op->emitOpError("contiguous needs in_bounds (it promises more about the same block)");
  if (int64_t(*c) >= rank)
    return op->emitOpError() << "contiguous dim " << *c << " is not a dim of the rank-" << rank << " tile";
  return success();
}

LogicalResult LoadOp::verify() {
  return verifyRuns(*this, getInBounds(), getContiguous(), getRun(),
                    cast<RankedTensorType>(getResult().getType()).getRank(), /*maskedRuns=*/true);
}

LogicalResult StoreOp::verify() {
  return verifyRuns(*this, getInBounds(), getContiguous(), getRun(),
                    cast<RankedTensorType>(getValue().getType()).getRank());
}

LogicalResult AllocOp::verify() {
  if (std::optional<int64_t> s = getSwizzle()) {
    if (*s != 128) return emitOpError() << "swizzle must be 128 (bytes per swizzled row), got " << *s;
    if (getType().getElementType().getIntOrFloatBitWidth() != 16)
      return emitOpError() << "a swizzled buffer holds 16-bit elements (got " << getType().getElementType() << ")";
    if (getSize() % 512 != 0)
      return emitOpError() << "a swizzled buffer holds whole 8-row swizzle atoms (a multiple of 512 elements, got "
                           << getSize() << ")";
  }
  return success();
}

LogicalResult AsyncCopyOp::verify() {
  RankedTensorType t = getDst().getType().getTileType();
  int64_t d = getContiguous();
  if (d < 0 || d >= t.getRank()) return emitOpError() << "contiguous dim " << d << " is not a dim of the rank-" << t.getRank() << " block";
  if (t.getElementTypeBitWidth() != 16)
    return emitOpError() << "copies blocks of 16-bit elements (got " << t.getElementType() << ")";
  if (t.getDimSize(d) % 8 != 0)
    return emitOpError() << "the block's size along its contiguous dim " << d << " must be a multiple of 8 (got " << t.getDimSize(d) << ")";
  return success();
}

static bool isI64Buffer(PtrType t) { return t.getElementType().isInteger(64); }

LogicalResult MBarrierInitOp::verify() {
  if (!isI64Buffer(getBarriers().getType()))
    return emitOpError() << "mbarriers are i64 elements (got " << getBarriers().getType() << ")";
  if (!getBarriers().getDefiningOp<AllocOp>()) return emitOpError("initializes a tile.alloc buffer");
  return success();
}

LogicalResult TmaCopyOp::verify() {
  RankedTensorType t = getDst().getType().getTileType();
  if (t.getRank() != 2 || t.getElementTypeBitWidth() != 16)
    return emitOpError() << "copies 2-D blocks of 16-bit elements (got " << t << ")";
  if (getCoords().size() != 2 && getCoords().size() != 3)
    return emitOpError() << "takes 2 coordinates, or 3 for a map with a plane dim (got " << getCoords().size() << ")";
  if (!getMap().getType().getElementType().isInteger(8))
    return emitOpError() << "the tensor map is a !tile.ptr<i8> (got " << getMap().getType() << ")";
  if (!isI64Buffer(getBarriers().getType()))
    return emitOpError() << "mbarriers are i64 elements (got " << getBarriers().getType() << ")";
  return success();
}

LogicalResult TmaStoreOp::verify() {
  RankedTensorType t = getSrc().getType().getTileType();
  if (t.getRank() != 2 || t.getElementTypeBitWidth() != 16)
    return emitOpError() << "stores 2-D blocks of 16-bit elements (got " << t << ")";
  if (getCoords().size() != 2) return emitOpError() << "takes 2 coordinates (got " << getCoords().size() << ")";
  if (!getMap().getType().getElementType().isInteger(8))
    return emitOpError() << "the tensor map is a !tile.ptr<i8> (got " << getMap().getType() << ")";
  if (!isSwizzledLocalPointer(getSrc()))
    return emitOpError() << "stores from a view of a swizzled tile.alloc buffer (the map's 128-byte swizzle)";
  if (t.getDimSize(1) % 64 || t.getDimSize(1) / 64 > 256 || t.getDimSize(0) > 256)
    return emitOpError() << "stores blocks of up to 256 rows of whole 64-column panels (got " << t << ")";
  return success();
}

LogicalResult MBarrierWaitOp::verify() {
  if (!isI64Buffer(getBarriers().getType()))
    return emitOpError() << "mbarriers are i64 elements (got " << getBarriers().getType() << ")";
  return success();
}

LogicalResult DotOp::verify() {
  auto a = tileOf(getA()), b = tileOf(getB()), c = tileOf(getC());
  if (a.getRank() != 2 || b.getRank() != 2 || c.getRank() != 2) return emitOpError() << "operands must be rank 2";
  if (a.getElementType().isInteger()) {
    // Integer dots: i16 x (i8 | i16 | i32 holding i16 pairs) -> i32, B in
    // K pairs.
    if (!a.getElementType().isInteger(16) ||
        !(b.getElementType().isInteger(8) || b.getElementType().isInteger(16) || b.getElementType().isInteger(32)) ||
        !c.getElementType().isInteger(32))
      return emitOpError() << "integer dots take i16 a, i8, i16 or i32 (i16 pairs) b and accumulate in i32, got " << a
                           << " * " << b << " -> " << c;
    if (!getBPairs()) return emitOpError() << "integer dots take b in K pairs (b_pairs)";
  } else {
    if (getBPairs()) return emitOpError() << "b_pairs is for integer dots";
    if (!isa<FloatType>(b.getElementType()) || a.getElementType() != b.getElementType())
      return emitOpError() << "a and b must have the same element type";
    if (!c.getElementType().isF32()) return emitOpError() << "accumulates in f32, got " << c.getElementType();
  }
  const int64_t pk = getBPairs() ? 2 : 1;  // B's [K / 2, 2 N] with pairs
  if (a.getDimSize(1) != b.getDimSize(0) * pk || a.getDimSize(0) != c.getDimSize(0) ||
      b.getDimSize(1) != c.getDimSize(1) * bColumnsPerN())
    return emitOpError() << "shapes do not compose: " << a << " * " << b << (getBPairs() ? " (K pairs)" : "") << " -> "
                         << c;
  if (auto t = getTiling(); t && *t != "horizontal" && *t != "vertical" && *t != "square" && *t != "split_k")
    return emitOpError() << "tiling must be horizontal, vertical, square or split_k, got '" << *t << "'";
  return success();
}

LogicalResult ReduceOp::verify() {
  if (getKind() != "max" && getKind() != "sum" && getKind() != "argmax")
    return emitOpError() << "kind must be max, sum or argmax";
  if (getReassoc() && getKind() != "sum") return emitOpError() << "reassoc is for sums";
  if (getKind() == "argmax" && (!getAxis() || getCrossWarp()))
    return emitOpError() << "argmax needs an axis and stays within a warp (no cross_warp)";
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  SmallVector<int64_t> want(s.getShape());
  if (auto axis = getAxis()) {
    if (*axis < 0 || *axis >= s.getRank()) return emitOpError() << "axis " << *axis << " out of range";
    want.erase(want.begin() + *axis);
  } else if (!getCrossWarp()) {
    return emitOpError() << "needs an axis (or cross_warp to combine whole tiles across warps)";
  }
  if (r.getShape() != ArrayRef<int64_t>(want) || r.getElementType() != s.getElementType())
    return emitOpError() << "result must be the source without the reduced dim";
  if (getDstWarps() && !getCrossWarp()) return emitOpError() << "dst_warps needs cross_warp";
  return success();
}

LogicalResult ExpandDimsOp::verify() {
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  int64_t axis = getAxis();
  if (axis < 0 || axis > s.getRank()) return emitOpError() << "axis " << axis << " out of range";
  SmallVector<int64_t> want(s.getShape());
  want.insert(want.begin() + axis, 1);
  if (r.getShape() != ArrayRef<int64_t>(want) || r.getElementType() != s.getElementType())
    return emitOpError() << "result must be the source with a unit dim at " << axis;
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  if (s.getRank() != r.getRank() || s.getElementType() != r.getElementType())
    return emitOpError() << "source and result must have the same rank and element type";
  for (int64_t i = 0; i < s.getRank(); ++i)
    if (s.getDimSize(i) != 1 && s.getDimSize(i) != r.getDimSize(i))
      return emitOpError() << "dim " << i << " of size " << s.getDimSize(i) << " cannot broadcast to "
                           << r.getDimSize(i);
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  if (s.getElementType() != r.getElementType()) return emitOpError() << "keeps the element type";
  if (s.getNumElements() != r.getNumElements())
    return emitOpError() << "keeps the number of elements (" << s.getNumElements() << " -> " << r.getNumElements()
                         << ")";
  return success();
}

LogicalResult ConvertOp::verify() {
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  if (s.getShape() != r.getShape()) return emitOpError() << "changes the element type only";
  Type from = s.getElementType(), to = r.getElementType();
  if (to.isInteger(8) ? !from.isF32() : !isa<FloatType>(to))
    return emitOpError() << "converts floats to floats, f32 to i8 and i8 or i32 to floats, not " << from << " to " << to;
  return success();
}

LogicalResult SegmentDotOp::verify() {
  auto a = tileOf(getA()), b = tileOf(getB()), c = tileOf(getC());
  if (a != b || a.getRank() != 2 || !a.getElementType().isInteger(8))
    return emitOpError() << "a and b must be i8 tiles of one rank-2 shape, got " << a << " and " << b;
  if (c.getRank() != 2 || !c.getElementType().isInteger(32) || c.getDimSize(0) != a.getDimSize(0) ||
      c.getDimSize(1) <= 0 || a.getDimSize(1) % c.getDimSize(1) || (a.getDimSize(1) / c.getDimSize(1)) % 4)
    return emitOpError() << "c must be i32 [R, C / G] for a [R, C] and segments G a multiple of 4, got " << c
                         << " for " << a;
  return success();
}

LogicalResult ExtractOp::verify() {
  auto s = tileOf(getSrc()), r = tileOf(getResult());
  if (s.getRank() != r.getRank() || s.getElementType() != r.getElementType())
    return emitOpError() << "sub-block must have the source's rank and element type";
  int64_t count = 1;
  for (int64_t i = 0; i < s.getRank(); ++i) {
    if (r.getDimSize(i) <= 0 || s.getDimSize(i) % r.getDimSize(i) != 0)
      return emitOpError() << "sub-block " << r << " does not tile " << s;
    count *= s.getDimSize(i) / r.getDimSize(i);
  }
  if (getIndex() < 0 || getIndex() >= count)
    return emitOpError() << "index " << getIndex() << " out of range: " << s << " has " << count << " sub-blocks";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getSrcs().size() < 2) return emitOpError() << "joins at least two tiles";
  auto s = tileOf(getSrcs().front()), r = tileOf(getResult());
  for (Value v : getSrcs())
    if (v.getType() != getSrcs().front().getType()) return emitOpError() << "joins tiles of one type";
  int64_t axis = getAxis();
  if (axis < 0 || axis >= s.getRank()) return emitOpError() << "axis " << axis << " out of range for " << s;
  if (r.getRank() != s.getRank() || r.getElementType() != s.getElementType())
    return emitOpError() << "result must have the operands' rank and element type";
  for (int64_t i = 0; i < s.getRank(); ++i) {
    int64_t want = i == axis ? s.getDimSize(i) * int64_t(getSrcs().size()) : s.getDimSize(i);
    if (r.getDimSize(i) != want)
      return emitOpError() << "joining " << getSrcs().size() << " x " << s << " along " << axis << " gives dim " << i
                           << " = " << want << ", not " << r.getDimSize(i);
  }
  return success();
}

LogicalResult MaskOp::verify() {
  if (getSrc().getType().getRank() != 2) return emitOpError() << "masks 2-D score tiles, got " << getSrc().getType();
  return success();
}

LogicalResult IotaOp::verify() {
  auto t = cast<RankedTensorType>(getType());
  if (getAxis() < 0 || getAxis() >= t.getRank())
    return emitOpError() << "axis " << getAxis() << " is outside a rank-" << t.getRank() << " tile";
  if (!t.getElementType().isF32()) return emitOpError() << "gives f32 indices, got " << t;
  return success();
}

LogicalResult BlockLookupOp::verify() {
  Type e = getTable().getType().getElementType();
  if (!e.isInteger(32) && !e.isInteger(64)) return emitOpError() << "block tables hold i32 or i64, got " << e;
  return success();
}

LogicalResult ArriveOp::verify() {
  Type e = getCounters().getType().getElementType();
  if (!e.isInteger(32)) return emitOpError() << "counters are i32, got " << e;
  return success();
}

}  // namespace strata::tile
