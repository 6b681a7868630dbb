//===- ConvertTileToXeVM.cpp - Xe lowering of DPAS-sized tile IR ----------===//
//
// Per-sub-group tile IR after match-target-size with an Xe row whose
// sub-group is 16 lanes (xe:pvc, xe:bmg) becomes per-lane code on XeVM ops
// (2D block loads and stores, DPAS), which MLIR's convert-xevm-to-llvm
// turns into calls of the OpenCL built-ins of cl_intel_subgroup_2d_block_io
// and cl_intel_subgroup_matrix_multiply_accumulate.
//
// One layout for every tile: a [R, C] tile (C a multiple of 16) is split
// into C / 16 column blocks of [R, 16]; lane l holds column l of each block,
// so each lane holds a vector of R * C / 16 elements, element b * R + r
// being row r of block b. That is what a 2D block load of R rows x 16
// columns (x C / 16 blocks) leaves in each lane, and what DPAS takes and
// gives on Xe-HPC / Xe2 (sub-group 16): A [8, 16] (lane k holds column k of
// the 8 rows), B [16, 16] (lane n holds column n's 16 K values, which the
// block load's VNNI transform packs in row pairs without changing their
// order in the lane), C [8, 16] (lane n holds column n). Elementwise ops,
// extracts, concats and row broadcasts ([1, C] -> [R, C]) are shuffles or
// vector ops within the lane.
//
// A block pointer is a vector<8xi64>: base address, shape (rows, columns),
// strides, offsets (row, column), element bytes. A load or store takes the
// 2D block instruction when the array meets its rules (unit column stride;
// base address 64-byte aligned; width and pitch at least 32 bytes, width a
// multiple of 4 and pitch of 16 bytes; the column offset a multiple of 4
// bytes; MLIR's XeGPU uArch tables for Xe2 have the same numbers), checked
// at run time (a uniform branch); otherwise each lane moves its own
// elements (loads return zero outside the array, stores skip it), so any
// shape and stride is right and aligned ones are fast. bf16 tiles are held
// as i16 bits (convert widens and rounds them by hand, to nearest even).
//
// A column tile ([R, 1], or [R] with R not a multiple of 16: one value per
// row, a row reduction's result and what is computed from it) is held whole
// by every lane, a vector of R; broadcasting it along a row gives each
// lane's block elements their row's value; it is loaded by every lane and
// stored by lane 0. A reduction along the rows ([R, 16 k] -> [R]) combines
// each row's k elements in the lane, then the sub-group's 16 lanes
// (OpenCL's sub_group_reduce_add / _max), one call a row; down the rows
// (axis 0) it stays in the lane. Across sub-groups it would need shared
// local memory (not yet). iota and mask compute each element's row and
// column from its place in the lane vector and the lane id.
//
// `!tile.ptr<T>` arguments become `!llvm.ptr<1>` (OpenCL global pointers),
// index arguments stay index (i64 after the LLVM lowering); program ids
// are the work-group ids, the warp id the sub-group id. The function keeps
// `tile.num_warps` (a work-group runs 16 x num_warps work-items).
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include <cmath>

#include "codegen/TileLowering.h"
#include "codegen/UArch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/XeVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace strata::tile {

#define GEN_PASS_DEF_CONVERTTILETOXEVM
#include "codegen/Passes.h.inc"

using namespace mlir;

namespace {

constexpr int64_t kLanes = 16;

// Block pointer fields (vector<8xi64>).
enum Field { kBase, kRows, kCols, kStride0, kStride1, kRow, kCol, kElemBytes };

class Lowering {
 public:
  // blockIo: "auto", "always" or "never" (the pass option).
  Lowering(func::FuncOp f, StringRef blockIo)
      : f(f), b(f.getContext()), alwaysBlockIo(blockIo == "always"), neverBlockIo(blockIo == "never") {}

  LogicalResult run() {
    if (f.isExternal()) return success();
    auto target = f->getAttrOfType<StringAttr>("tile.target");
    if (!target) return f.emitError() << "convert-tile-to-xevm needs the function's tile.target: run match-target-size";
    const UArch& u = uarchFor(target.getValue());
    if (u.lanes != kLanes || u.dotM != 8 || u.dotN != 16 || u.dotK != 16)
      return f.emitError() << "convert-tile-to-xevm lowers the sub-group-16 rows (xe:pvc, xe:bmg); " << u.name
                           << " has sub-group " << u.lanes << " and DPAS " << u.dotM << "x" << u.dotN << "x" << u.dotK;
    bool bad = false;
    f.walk([&](Operation* op) {
      if (bad) return;
      for (Type t : op->getResultTypes())
        if (encodingOf(t)) {
          op->emitError() << "tile still has a layout encoding: run distribute-to-warps and match-target-size first";
          bad = true;
          return;
        }
      for (Value v : op->getResults())
        if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && failed(checkTile(op, t))) {
          bad = true;
          return;
        }
      if (auto e = dyn_cast<ExpandDimsOp>(op);
          e && e.getAxis() != 0 && !(isColumn(e.getSrc().getType()) && isColumn(e.getResult().getType()))) {
        op->emitError() << "the xe lowering expands [C] to [1, C] and a column [R] to [R, 1] only";
        bad = true;
      }
      for (Value v : op->getOperands()) operandTypes[op].push_back(v.getType());
      if (isa<AllocOp, BarrierOp, AsyncCopyOp, AsyncCommitOp,
              AsyncWaitOp, MBarrierInitOp, TmaCopyOp, TmaStoreOp, MBarrierWaitOp, ArriveOp, GroupDotWaitOp>(op)) {
        op->emitError() << "'" << op->getName() << "' is not supported by the xe lowering yet";
        bad = true;
      }
    });
    if (bad) return failure();
    // Which loads feed a dot's B operand (directly or through extracts):
    // they take the block load's VNNI transform.
    f.walk([&](DotOp d) {
      Value v = d.getB();
      while (auto e = v.getDefiningOp<ExtractOp>()) v = e.getSrc();
      if (auto l = v.getDefiningOp<LoadOp>()) packedLoads.insert(l);
    });

    Block& entry = f.getBody().front();
    auto gptr = LLVM::LLVMPointerType::get(f.getContext(), 1);
    for (BlockArgument a : entry.getArguments())
      if (isa<PtrType>(a.getType())) a.setType(gptr);
    f.setType(FunctionType::get(f.getContext(), entry.getArgumentTypes(), f.getResultTypes()));
    b.setInsertionPointToStart(&entry);
    lane = arith::IndexCastOp::create(b, f.getLoc(), b.getIndexType(),
                                      xevm::LaneIdOp::create(b, f.getLoc(), b.getI32Type(), LLVM::ConstantRangeAttr()));
    return rewriteTileOps(
        b, &entry, [&](Value v) { return convertType(v.getType()); }, [&](Operation* op) { return lower(op); });
  }

 private:
  func::FuncOp f;
  OpBuilder b;
  bool alwaysBlockIo, neverBlockIo;
  Value lane;
  DenseSet<Operation*> packedLoads;
  // Each op's operand types before the rewrite (operands are lowered first).
  DenseMap<Operation*, SmallVector<Type>> operandTypes;
  Type operandType(Operation* op, unsigned i) { return operandTypes.lookup(op)[i]; }
  template <typename T>
  T operandType(Operation* op, unsigned i) { return cast<T>(operandType(op, i)); }
  // Rows of a tile as the layout counts them ([C] is one row).
  static int64_t rowsOf(RankedTensorType t) {
    return t.getRank() == 2 || isColumn(t) ? t.getDimSize(0) : 1;
  }

  LogicalResult checkTile(Operation* op, RankedTensorType t) {
    if (t.getRank() > 2 || (t.getShape().back() % kLanes && !isColumn(t)))
      return op->emitError() << "the xe lowering holds [R, 16 k] and [16 k] tiles (a column per lane) and [R, 1] / [1] "
                                "column tiles; got "
                             << t;
    return success();
  }

  // A column tile: one value per row, every lane holding all of them:
  // [R, 1], and [R] unless R is a multiple of 16 (then a row, [1, R]). A
  // reduction of R rows gives [R], so it takes R not a multiple of 16.
  static bool isColumn(Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    if (!r || r.getRank() < 1) return false;
    if (r.getRank() == 1) return r.getDimSize(0) % kLanes != 0;
    return r.getShape().back() == 1;
  }
  // bf16 is held as its bits.
  static Type laneElem(Type e) { return e.isBF16() ? IntegerType::get(e.getContext(), 16) : e; }
  static VectorType laneType(RankedTensorType t) {
    if (isColumn(t)) return VectorType::get({t.getDimSize(0)}, laneElem(t.getElementType()));
    return VectorType::get({t.getNumElements() / kLanes}, laneElem(t.getElementType()));
  }
  Type convertType(Type t) {
    if (auto r = dyn_cast<RankedTensorType>(t)) return laneType(r);
    if (isa<BlockPtrType>(t)) return VectorType::get({8}, b.getI64Type());
    return t;
  }

  Value cst(Location loc, int64_t v, Type t) { return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v)); }
  Value i64(Location loc, int64_t v) { return cst(loc, v, b.getI64Type()); }
  Value i32(Location loc, int64_t v) { return cst(loc, v, b.getI32Type()); }
  Value idx(Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value toI64(Location loc, Value v) { return arith::IndexCastOp::create(b, loc, b.getI64Type(), v); }
  Value toI32(Location loc, Value v) { return arith::TruncIOp::create(b, loc, b.getI32Type(), v); }
  Value field(Location loc, Value ptr, Field fld) { return vector::ExtractOp::create(b, loc, ptr, int64_t(fld)); }
  Value andAll(Location loc, ArrayRef<Value> cs) {
    Value r = cs[0];
    for (Value c : cs.drop_front()) r = arith::AndIOp::create(b, loc, r, c);
    return r;
  }
  Value cmp(Location loc, arith::CmpIPredicate p, Value x, Value y) { return arith::CmpIOp::create(b, loc, p, x, y); }
  Value rem0(Location loc, Value x, int64_t m) {
    return cmp(loc, arith::CmpIPredicate::eq, arith::RemUIOp::create(b, loc, x, i64(loc, m)), i64(loc, 0));
  }

  // Element (block, row) of lane vectors: the permutation of `src` that
  // puts source element idx(i) at result element i.
  Value shuffle(Location loc, Value src, ArrayRef<int64_t> idx) {
    return vector::ShuffleOp::create(b, loc, src, src, idx);
  }
  Value join(Location loc, ArrayRef<Value> parts) {
    Value r = parts[0];
    for (Value p : parts.drop_front()) {
      int64_t n = cast<VectorType>(r.getType()).getNumElements(), m = cast<VectorType>(p.getType()).getNumElements();
      SmallVector<int64_t> all;
      for (int64_t i = 0; i < n + m; ++i) all.push_back(i);
      r = vector::ShuffleOp::create(b, loc, r, p, all);
    }
    return r;
  }

  // The 2D surface a block instruction addresses for `ptr`'s array: the
  // array itself, or for a transposed view (unit row stride: [K, N] over
  // [N, K] storage) its storage, whose rows are the view's columns. Width
  // and pitch in bytes, height in rows; x and y are the view's offsets
  // along the surface's columns and rows (elements).
  struct Surface {
    Value base, width, height, pitch, unitStride, x, y;
  };
  Surface surface(Location loc, Value ptr, bool transposed) {
    Value es = field(loc, ptr, kElemBytes);
    auto bytes = [&](Field f) { return Value(arith::MulIOp::create(b, loc, field(loc, ptr, f), es)); };
    if (transposed)
      return {field(loc, ptr, kBase), bytes(kRows), field(loc, ptr, kCols), bytes(kStride1), field(loc, ptr, kStride0),
              field(loc, ptr, kRow), field(loc, ptr, kCol)};
    return {field(loc, ptr, kBase), bytes(kCols), field(loc, ptr, kRows), bytes(kStride0), field(loc, ptr, kStride1),
            field(loc, ptr, kCol), field(loc, ptr, kRow)};
  }

  // Whether the 2D block instructions may address the surface (uniform:
  // every lane computes the same): unit column stride; base 64-byte aligned;
  // width and pitch at least 32 bytes, width a multiple of 4 and pitch of 16
  // and at least the width; the column offset a multiple of 4 bytes; sizes
  // and offsets within the instructions' 24 bits.
  Value blockIoLegal(Location loc, Value ptr, bool transposed) {
    Surface sf = surface(loc, ptr, transposed);
    Value xBytes = arith::MulIOp::create(b, loc, sf.x, field(loc, ptr, kElemBytes));
    Value limit = i64(loc, int64_t(1) << 24), zero = i64(loc, 0);
    using P = arith::CmpIPredicate;
    return andAll(loc, {cmp(loc, P::eq, sf.unitStride, i64(loc, 1)), rem0(loc, sf.base, 64),
                        cmp(loc, P::sge, sf.width, i64(loc, 32)), rem0(loc, sf.width, 4), cmp(loc, P::sge, sf.pitch, sf.width),
                        rem0(loc, sf.pitch, 16), rem0(loc, xBytes, 4), cmp(loc, P::slt, sf.pitch, limit),
                        cmp(loc, P::slt, sf.height, limit), cmp(loc, P::sge, sf.y, zero), cmp(loc, P::slt, sf.y, limit),
                        cmp(loc, P::sge, xBytes, zero), cmp(loc, P::slt, xBytes, limit)});
  }

  // The block instructions' surface operands: base pointer, and width,
  // height and pitch as i32.
  struct SurfaceArgs {
    Value base, width, height, pitch;
  };
  SurfaceArgs surfaceArgs(Location loc, Value ptr, bool transposed) {
    Surface sf = surface(loc, ptr, transposed);
    return {LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), sf.base),
            toI32(loc, sf.width), toI32(loc, sf.height), toI32(loc, sf.pitch)};
  }

  struct Elem {
    Value inside, addr;
  };
  // Which elements a lane holds: its column of each block (Lanes), or all
  // of a column tile's, the same in every lane: [R, 1] down its rows
  // (Down), [R] along the 1-D array (Along).
  enum class Held { Lanes, Down, Along };
  static Held heldOf(RankedTensorType t) {
    if (!isColumn(t)) return Held::Lanes;
    return t.getRank() == 1 ? Held::Along : Held::Down;
  }
  // This lane's element i (i64) of a tile of R rows: block i / R, row i % R
  // (of a column tile: its element i). Its array coordinates, whether they
  // lie inside the array, and its address (the array's base where not, so
  // a load there is harmless).
  Elem elem(Location loc, Value ptr, Value i, int64_t R, Held held = Held::Lanes) {
    Value row = field(loc, ptr, kRow), col = field(loc, ptr, kCol);
    if (held == Held::Down) {
      row = arith::AddIOp::create(b, loc, row, i);
    } else if (held == Held::Along) {
      col = arith::AddIOp::create(b, loc, col, i);
    } else {
      Value bl = arith::DivUIOp::create(b, loc, i, i64(loc, R)), r = arith::RemUIOp::create(b, loc, i, i64(loc, R));
      row = arith::AddIOp::create(b, loc, row, r);
      col = arith::AddIOp::create(b, loc, col,
                                  arith::AddIOp::create(b, loc, toI64(loc, lane), arith::MulIOp::create(b, loc, bl, i64(loc, kLanes))));
    }
    using P = arith::CmpIPredicate;
    Value inside = andAll(loc, {cmp(loc, P::ult, row, field(loc, ptr, kRows)), cmp(loc, P::ult, col, field(loc, ptr, kCols))});
    Value off = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, row, field(loc, ptr, kStride0)),
                                      arith::MulIOp::create(b, loc, col, field(loc, ptr, kStride1)));
    off = arith::SelectOp::create(b, loc, inside, off, i64(loc, 0));
    Value bytes = arith::MulIOp::create(b, loc, off, field(loc, ptr, kElemBytes));
    Value addr = arith::AddIOp::create(b, loc, field(loc, ptr, kBase), bytes);
    return {inside, LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), addr)};
  }

  // A private array of the lane's n elements (allocated once, at entry).
  Value laneArray(Location loc, VectorType vt) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&f.getBody().front());
    auto arr = LLVM::LLVMArrayType::get(vt.getElementType(), vt.getNumElements());
    return LLVM::AllocaOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), arr, i32(loc, 1));
  }
  Value slot(Location loc, Value arr, VectorType vt, Value i) {
    auto arrT = LLVM::LLVMArrayType::get(vt.getElementType(), vt.getNumElements());
    return LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), arrT, arr,
                               ArrayRef<LLVM::GEPArg>{0, i});
  }

  // A loop over the lane's elements (a loop, not unrolled code: the per-lane
  // path is the rare one, and unrolled it made kernels too large to build).
  template <typename Body>
  void forEachElement(Location loc, VectorType vt, Body body) {
    auto loop = scf::ForOp::create(b, loc, idx(loc, 0), idx(loc, vt.getNumElements()), idx(loc, 1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(toI64(loc, loop.getInductionVar()));
  }

  // A [R, 16 k] tile, each lane loading its own elements (zero outside); a
  // column tile, every lane loading all of them.
  Value gatherLoad(Location loc, Value ptr, VectorType vt, int64_t R, Held held = Held::Lanes) {
    Type e = vt.getElementType();
    Value arr = laneArray(loc, vt);
    forEachElement(loc, vt, [&](Value i) {
      Elem el = elem(loc, ptr, i, R, held);
      Value v = LLVM::LoadOp::create(b, loc, e, el.addr);
      v = arith::SelectOp::create(b, loc, el.inside, v, arith::ConstantOp::create(b, loc, b.getZeroAttr(e)));
      LLVM::StoreOp::create(b, loc, v, slot(loc, arr, vt, i));
    });
    return LLVM::LoadOp::create(b, loc, vt, arr);
  }

  // The same through 2D block loads: one per 16-column block and 32 rows.
  Value blockLoad(Location loc, Value ptr, VectorType vt, int64_t R, bool packed) {
    Type e = vt.getElementType();
    int64_t bits = e.getIntOrFloatBitWidth();
    auto bitsT = b.getIntegerType(bits);
    SurfaceArgs sa = surfaceArgs(loc, ptr, /*transposed=*/false);
    SmallVector<Value> parts;
    for (int64_t bl = 0; bl < vt.getNumElements() / R; ++bl)
      for (int64_t r0 = 0; r0 < R; r0 += 32) {
        int64_t rows = std::min<int64_t>(32, R - r0);
        Value x = toI32(loc, arith::AddIOp::create(b, loc, field(loc, ptr, kCol), i64(loc, kLanes * bl)));
        Value y = toI32(loc, arith::AddIOp::create(b, loc, field(loc, ptr, kRow), i64(loc, r0)));
        bool pack = packed && bits == 16 && (rows == 16 || rows == 32);  // the VNNI forms cl_intel_subgroup_2d_block_io has
        auto partT = pack ? VectorType::get({rows / 2}, b.getI32Type()) : VectorType::get({rows}, bitsT);
        Value v = xevm::BlockLoad2dOp::create(b, loc, partT, sa.base, sa.width, sa.height, sa.pitch, x, y, uint32_t(bits),
                                              uint32_t(kLanes), uint32_t(rows), /*v_blocks=*/1u, /*transpose=*/false,
                                              pack, /*cache_control=*/xevm::LoadCacheControlAttr());
        parts.push_back(vector::BitCastOp::create(b, loc, VectorType::get({rows}, e), v));
      }
    return join(loc, parts);
  }

  // A 16-bit dot B operand [R, 16 k] from a transposed view: per 16 columns
  // (N) and 16 rows (K), one transposed load of 16 rows of the storage x 8
  // 32-bit pairs of K; lane n receives row n's 8 pairs, which is the VNNI
  // form (and the lane's K values in order).
  Value transposedLoad(Location loc, Value ptr, VectorType vt, int64_t R) {
    SurfaceArgs sa = surfaceArgs(loc, ptr, /*transposed=*/true);
    SmallVector<Value> parts;
    for (int64_t bl = 0; bl < vt.getNumElements() / R; ++bl)
      for (int64_t k0 = 0; k0 < R; k0 += 16) {
        Value kPair = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, field(loc, ptr, kRow), i64(loc, k0)), i64(loc, 2));
        Value y = toI32(loc, arith::AddIOp::create(b, loc, field(loc, ptr, kCol), i64(loc, kLanes * bl)));
        Value v = xevm::BlockLoad2dOp::create(b, loc, VectorType::get({8}, b.getI32Type()), sa.base, sa.width, sa.height, sa.pitch,
                                              toI32(loc, kPair), y, 32u, 8u, 16u, /*v_blocks=*/1u, /*transpose=*/true,
                                              /*pack_register=*/false, xevm::LoadCacheControlAttr());
        parts.push_back(vector::BitCastOp::create(b, loc, VectorType::get({16}, vt.getElementType()), v));
      }
    return join(loc, parts);
  }

  // `thenValue` where `cond`, else `elseValue` (each built in its branch).
  template <typename Then, typename Else>
  Value branch(Location loc, VectorType vt, Value cond, Then thenValue, Else elseValue) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{vt}, cond, /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loc, thenValue());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, elseValue());
    return ifOp.getResult(0);
  }

  Value lowerLoad(LoadOp l) {
    Location loc = l.getLoc();
    auto t = cast<RankedTensorType>(l.getType());
    VectorType vt = laneType(t);
    int64_t R = rowsOf(t), bits = vt.getElementType().getIntOrFloatBitWidth();
    Value ptr = l.getPtr();
    if (isColumn(t)) return gatherLoad(loc, ptr, vt, R, heldOf(t));
    const bool packed = packedLoads.contains(l);
    bool blockShape = (bits == 16 || bits == 32) && (R <= 32 ? llvm::isPowerOf2_64(R) : R % 32 == 0);
    if (!blockShape || neverBlockIo) return gatherLoad(loc, ptr, vt, R);
    // The untransposed path: the block load where legal (always, with
    // block-io=always), else per lane.
    auto plain = [&] {
      if (alwaysBlockIo) return blockLoad(loc, ptr, vt, R, packed);
      return branch(loc, vt, blockIoLegal(loc, ptr, /*transposed=*/false), [&] { return blockLoad(loc, ptr, vt, R, packed); },
                    [&] { return gatherLoad(loc, ptr, vt, R); });
    };
    if (!(packed && bits == 16 && R % 16 == 0 && t.getRank() == 2)) return plain();
    // A dot's B operand may be a transposed view of [N, K] weights.
    Value cond = alwaysBlockIo ? cmp(loc, arith::CmpIPredicate::eq, field(loc, ptr, kStride0), i64(loc, 1))
                               : blockIoLegal(loc, ptr, /*transposed=*/true);
    return branch(loc, vt, cond, [&] { return transposedLoad(loc, ptr, vt, R); }, plain);
  }


  // Each lane stores its own elements inside the array; a column tile (the
  // same in every lane) is stored by lane 0.
  void scatterStore(Location loc, Value ptr, Value v, int64_t R, Held held = Held::Lanes) {
    auto vt = cast<VectorType>(v.getType());
    Value arr = laneArray(loc, vt);
    LLVM::StoreOp::create(b, loc, v, arr);
    forEachElement(loc, vt, [&](Value i) {
      Elem el = elem(loc, ptr, i, R, held);
      Value store = el.inside;
      if (held != Held::Lanes)
        store = arith::AndIOp::create(b, loc, store, cmp(loc, arith::CmpIPredicate::eq, toI64(loc, lane), i64(loc, 0)));
      auto ifOp = scf::IfOp::create(b, loc, store, /*withElse=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      LLVM::StoreOp::create(b, loc, LLVM::LoadOp::create(b, loc, vt.getElementType(), slot(loc, arr, vt, i)), el.addr);
    });
  }

  // 2D block stores: one per 16-column block and 8 rows.
  void blockStore(Location loc, Value ptr, Value v, int64_t R) {
    auto vt = cast<VectorType>(v.getType());
    int64_t bits = vt.getElementType().getIntOrFloatBitWidth();
    SurfaceArgs sa = surfaceArgs(loc, ptr, /*transposed=*/false);
    for (int64_t bl = 0; bl < vt.getNumElements() / R; ++bl)
      for (int64_t r0 = 0; r0 < R; r0 += 8) {
        int64_t rows = std::min<int64_t>(8, R - r0);
        SmallVector<int64_t> idx;
        for (int64_t r = 0; r < rows; ++r) idx.push_back(bl * R + r0 + r);
        Value part = shuffle(loc, v, idx);
        part = vector::BitCastOp::create(b, loc, VectorType::get({rows}, b.getIntegerType(bits)), part);
        Value x = toI32(loc, arith::AddIOp::create(b, loc, field(loc, ptr, kCol), i64(loc, kLanes * bl)));
        Value y = toI32(loc, arith::AddIOp::create(b, loc, field(loc, ptr, kRow), i64(loc, r0)));
        xevm::BlockStore2dOp::create(b, loc, sa.base, sa.width, sa.height, sa.pitch, x, y, uint32_t(bits), uint32_t(kLanes),
                                     uint32_t(rows), part, /*cache_control=*/xevm::StoreCacheControlAttr());
      }
  }

  void lowerStore(StoreOp s) {
    Location loc = s.getLoc();
    auto t = cast<RankedTensorType>(operandType<BlockPtrType>(s, 0).getTileType());
    int64_t R = rowsOf(t);
    Value v = s.getValue();
    if (isColumn(t)) return scatterStore(loc, s.getPtr(), v, R, heldOf(t));
    int64_t bits = cast<VectorType>(v.getType()).getElementType().getIntOrFloatBitWidth();
    bool blockShape = (bits == 16 || bits == 32) && (R <= 8 ? llvm::isPowerOf2_64(R) : R % 8 == 0);
    if (!blockShape || neverBlockIo) return scatterStore(loc, s.getPtr(), v, R);
    if (alwaysBlockIo) return blockStore(loc, s.getPtr(), v, R);
    auto ifOp = scf::IfOp::create(b, loc, blockIoLegal(loc, s.getPtr(), /*transposed=*/false), /*withElse=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    blockStore(loc, s.getPtr(), v, R);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scatterStore(loc, s.getPtr(), v, R);
  }

  Value makeBlockPtr(MakeBlockPtrOp m) {
    Location loc = m.getLoc();
    auto t = cast<RankedTensorType>(m.getType().getTileType());
    Type e = t.getElementType();
    Value base = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), m.getBase());
    SmallVector<Value> fields{base};
    if (m.getShape().size() == 1) {  // one row: [1, shape], pitch = the row
      Value n = toI64(loc, m.getShape()[0]);
      fields.append({i64(loc, 1), n, n, toI64(loc, m.getStrides()[0]), i64(loc, 0), toI64(loc, m.getOffsets()[0]),
                     i64(loc, e.getIntOrFloatBitWidth() / 8)});
      return vector::FromElementsOp::create(b, loc, VectorType::get({8}, b.getI64Type()), fields);
    }
    if (m.getShape().size() != 2) return nullptr;
    for (Value v : m.getShape()) fields.push_back(toI64(loc, v));
    for (Value v : m.getStrides()) fields.push_back(toI64(loc, v));
    for (Value v : m.getOffsets()) fields.push_back(toI64(loc, v));
    fields.push_back(i64(loc, e.getIntOrFloatBitWidth() / 8));
    return vector::FromElementsOp::create(b, loc, VectorType::get({8}, b.getI64Type()), fields);
  }

  Value advance(AdvanceOp a) {
    Location loc = a.getLoc();
    Value p = a.getPtr();
    const bool oneD = a.getOffsets().size() == 1;
    for (auto [i, off] : llvm::enumerate(a.getOffsets())) {
      int64_t fld = i == 0 && !oneD ? kRow : kCol;
      Value moved = arith::AddIOp::create(b, loc, field(loc, p, Field(fld)), toI64(loc, off));
      p = vector::InsertOp::create(b, loc, moved, p, fld);
    }
    return p;
  }

  Value dot(DotOp d) {
    Location loc = d.getLoc();
    auto at = operandType<RankedTensorType>(d, 0), bt = operandType<RankedTensorType>(d, 1);
    if (at.getDimSize(0) != 8 || at.getDimSize(1) != 16 || bt.getDimSize(1) != 16) {
      d.emitError() << "the xe lowering's dots are 8x16x16 (run match-target-size with an xe row); got " << at << " * " << bt;
      return nullptr;
    }
    Type ae = at.getElementType();
    if (!ae.isF16() && !ae.isBF16()) {
      d.emitError() << "xe dots take f16 or bf16 operands; got " << ae;
      return nullptr;
    }
    auto et = ae.isF16() ? xevm::ElemType::F16 : xevm::ElemType::BF16;
    Value a = vector::BitCastOp::create(b, loc, VectorType::get({8}, b.getI16Type()), d.getA());
    Value bv = vector::BitCastOp::create(b, loc, VectorType::get({8}, b.getI32Type()), d.getB());
    auto shape = xevm::MMAShapeAttr::get(b.getContext(), 8, 16, 16);
    auto types = xevm::MMATypesAttr::get(b.getContext(), xevm::ElemType::F32, et, et, xevm::ElemType::F32);
    return xevm::MMAOp::create(b, loc, d.getC().getType(), a, bv, d.getC(), shape, types);
  }

  // The OpenCL C sub-group reduction of one f32 a lane (every lane gets the
  // result), by its Itanium-mangled name (what the SPIR-V backend
  // recognizes), convergent: every lane of the sub-group calls it.
  enum class Combine { Add, Max, Min };
  Value subGroupReduce(Location loc, Combine c, Value v) {
    const char* name = c == Combine::Max   ? "_Z20sub_group_reduce_maxf"
                       : c == Combine::Min ? "_Z20sub_group_reduce_minf"
                                           : "_Z20sub_group_reduce_addf";
    auto module = f->getParentOfType<ModuleOp>();
    auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!fn) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      fn = LLVM::LLVMFuncOp::create(b, loc, name, LLVM::LLVMFunctionType::get(b.getF32Type(), {b.getF32Type()}));
      fn.setConvergent(true);
    }
    auto call = LLVM::CallOp::create(b, loc, fn, ValueRange{v});
    call.setConvergent(true);
    return call.getResult();
  }

  // Reductions (sum or max, f32), by where the reduced elements are:
  // along the rows of a [R, 16 k] tile (-> [R], a column: R not a multiple
  // of 16), each row's k elements in the lane, then the sub-group's lanes;
  // down its rows (axis 0 -> [16 k]), within each lane; a column tile's
  // values (axis 0), within the lane, which holds them all.
  FailureOr<Value> reduce(ReduceOp r) {
    Location loc = r.getLoc();
    auto st = operandType<RankedTensorType>(r, 0);
    auto rt = cast<RankedTensorType>(r.getType());
    if (r.getCrossWarp())
      return r.emitError() << "the xe lowering reduces within a sub-group; across sub-groups needs shared local "
                              "memory (not yet)",
             failure();
    if (!r.getAxis() || !st.getElementType().isF32())
      return r.emitError() << "the xe lowering reduces f32 tiles along an axis; got " << r.getKind() << " of " << st,
             failure();
    if (r.getKind() == "argmax") return argmax(r, st, rt);
    const bool isMax = r.getKind() == "max";
    const int64_t axis = *r.getAxis();
    Value src = r.getSrc();
    const int64_t n = cast<VectorType>(src.getType()).getNumElements();
    auto combine = [&](Value x, Value y) {
      return isMax ? Value(arith::MaximumFOp::create(b, loc, x, y)) : Value(arith::AddFOp::create(b, loc, x, y));
    };
    auto element = [&](int64_t i) { return Value(vector::ExtractOp::create(b, loc, src, i)); };
    // Combines elements first, first + step, ... (count of them).
    auto fold = [&](int64_t first, int64_t step, int64_t count) {
      Value acc = element(first);
      for (int64_t j = 1; j < count; ++j) acc = combine(acc, element(first + j * step));
      return acc;
    };
    auto vectorOf = [&](ArrayRef<Value> vs) {
      return Value(vector::FromElementsOp::create(b, loc, VectorType::get({int64_t(vs.size())}, b.getF32Type()), vs));
    };
    if (isColumn(st)) {
      if (st.getRank() == 2 && axis == 1) return src;  // [R, 1] -> [R]: the same values
      return vectorOf({fold(0, 1, n)});
    }
    const int64_t R = rowsOf(st), blocks = n / R;
    if (st.getRank() == 2 && axis == 0) {
      SmallVector<Value> cols;
      for (int64_t bl = 0; bl < blocks; ++bl) cols.push_back(fold(bl * R, 1, R));
      return vectorOf(cols);
    }
    if (!isColumn(rt))
      return r.emitError() << "the xe lowering reduces along the rows of [R, 16 k] tiles with R not a multiple of 16 "
                              "(the result is a column); got "
                           << st,
             failure();
    SmallVector<Value> rows;
    for (int64_t i = 0; i < R; ++i)
      rows.push_back(subGroupReduce(loc, isMax ? Combine::Max : Combine::Add, fold(i, R, blocks)));
    return vectorOf(rows);
  }

  // argmax along the rows of [R, 16 k] (-> [R], f32 column indices): each
  // lane keeps its best element (the larger, or the lower column of equal
  // ones; NaN never compares true, so never wins) and its column 16 b +
  // lane, then the sub-group takes the largest value and, among the lanes
  // holding it, the lowest column. A row of -inf gives column 0.
  FailureOr<Value> argmax(ReduceOp r, RankedTensorType st, RankedTensorType rt) {
    Location loc = r.getLoc();
    if (isColumn(st) || *r.getAxis() != st.getRank() - 1 || !isColumn(rt))
      return r.emitError() << "the xe lowering's argmax runs along the rows of [R, 16 k] tiles with R not a multiple of "
                              "16; got "
                           << st,
             failure();
    Value src = r.getSrc();
    const int64_t n = cast<VectorType>(src.getType()).getNumElements(), R = rowsOf(st), blocks = n / R;
    auto f32 = [&](double v) { return Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)))); };
    Value laneF = arith::UIToFPOp::create(b, loc, b.getF32Type(), toI32(loc, toI64(loc, lane)));
    using P = arith::CmpFPredicate;
    SmallVector<Value> rows;
    for (int64_t i = 0; i < R; ++i) {
      Value best = f32(-INFINITY), at = f32(INFINITY);
      for (int64_t bl = 0; bl < blocks; ++bl) {
        Value v = vector::ExtractOp::create(b, loc, src, bl * R + i);
        Value col = arith::AddFOp::create(b, loc, laneF, f32(double(kLanes * bl)));
        Value better = arith::CmpFOp::create(b, loc, P::OGT, v, best);
        Value tie = arith::AndIOp::create(b, loc, arith::CmpFOp::create(b, loc, P::OEQ, v, best),
                                          arith::CmpFOp::create(b, loc, P::OLT, col, at));
        Value take = arith::OrIOp::create(b, loc, better, tie);
        best = arith::SelectOp::create(b, loc, take, v, best);
        at = arith::SelectOp::create(b, loc, take, col, at);
      }
      Value top = subGroupReduce(loc, Combine::Max, best);
      Value mine = arith::SelectOp::create(b, loc, arith::CmpFOp::create(b, loc, P::OEQ, best, top), at, f32(INFINITY));
      Value first = subGroupReduce(loc, Combine::Min, mine);
      // No lane held a comparable value (every element NaN): column 0.
      rows.push_back(arith::SelectOp::create(b, loc, arith::CmpFOp::create(b, loc, P::OLT, first, f32(INFINITY)), first,
                                             f32(0)));
    }
    return Value(vector::FromElementsOp::create(b, loc, VectorType::get({R}, b.getF32Type()), rows));
  }

  // Each lane element's row and column in the tile (i64 vectors): element
  // i of a [R, 16 k] tile is row i % R, column 16 (i / R) + lane; of a
  // column tile [R, 1] row i, column 0; of a 1-D column [R] column i.
  std::pair<Value, Value> coordinates(Location loc, RankedTensorType t) {
    const int64_t n = laneType(t).getNumElements(), R = rowsOf(t);
    const Held held = heldOf(t);
    SmallVector<int64_t> rows(n), cols(n);
    for (int64_t i = 0; i < n; ++i) {
      rows[i] = held == Held::Down ? i : held == Held::Along ? 0 : i % R;
      cols[i] = held == Held::Along ? i : held == Held::Down ? 0 : kLanes * (i / R);
    }
    auto vt = VectorType::get({n}, b.getI64Type());
    auto constant = [&](ArrayRef<int64_t> v) {
      return Value(arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, v)));
    };
    Value col = constant(cols);
    if (held == Held::Lanes)
      col = arith::AddIOp::create(b, loc, col, vector::BroadcastOp::create(b, loc, vt, toI64(loc, lane)));
    return {constant(rows), col};
  }
  Value splat64(Location loc, Value index, int64_t n) {
    return vector::BroadcastOp::create(b, loc, VectorType::get({n}, b.getI64Type()), toI64(loc, index));
  }

  // base + the element's index along `axis`, as a float.
  FailureOr<Value> iota(IotaOp o) {
    Location loc = o.getLoc();
    auto t = cast<RankedTensorType>(o.getType());
    VectorType vt = laneType(t);
    if (!isa<Float32Type, Float16Type>(vt.getElementType()))
      return o.emitError() << "the xe lowering's iota is f32 or f16; got " << t, failure();
    auto [row, col] = coordinates(loc, t);
    Value at = t.getRank() == 2 && o.getAxis() == 0 ? row : col;
    at = arith::AddIOp::create(b, loc, at, splat64(loc, o.getBase(), vt.getNumElements()));
    return Value(arith::UIToFPOp::create(b, loc, vt, at));
  }

  // -inf where the element's column is at or past `limit` or, causal,
  // past its row.
  FailureOr<Value> mask(MaskOp m) {
    Location loc = m.getLoc();
    auto t = cast<RankedTensorType>(m.getType());
    VectorType vt = laneType(t);
    if (t.getRank() != 2 || !isa<Float32Type, Float16Type>(vt.getElementType()))
      return m.emitError() << "the xe lowering masks 2-D f32 or f16 tiles; got " << t, failure();
    const int64_t n = vt.getNumElements();
    auto [row, col] = coordinates(loc, t);
    row = arith::AddIOp::create(b, loc, row, splat64(loc, m.getRowBase(), n));
    col = arith::AddIOp::create(b, loc, col, splat64(loc, m.getColBase(), n));
    using P = arith::CmpIPredicate;
    Value keep = cmp(loc, P::slt, col, splat64(loc, m.getLimit(), n));
    if (m.getCausal()) keep = arith::AndIOp::create(b, loc, keep, cmp(loc, P::sle, col, row));
    auto ninf = APFloat::getInf(cast<FloatType>(vt.getElementType()).getFloatSemantics(), /*Negative=*/true);
    Value minus = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), ninf)));
    return Value(arith::SelectOp::create(b, loc, keep, m.getSrc(), minus));
  }

  // tile.convert on lane vectors; bf16 (i16 bits) by hand.
  Value convert(Location loc, Value src, RankedTensorType from, RankedTensorType to) {
    VectorType vt = laneType(to);
    Type fe = from.getElementType(), te = to.getElementType();
    int64_t n = vt.getNumElements();
    auto i32v = VectorType::get({n}, b.getI32Type());
    auto splat = [&](int64_t c) {
      return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(i32v, b.getI32IntegerAttr(int32_t(c))));
    };
    if (fe.isBF16()) {  // bits << 16 is the f32
      Value w = arith::ExtUIOp::create(b, loc, i32v, src);
      Value f32 = arith::BitcastOp::create(b, loc, VectorType::get({n}, b.getF32Type()),
                                           arith::ShLIOp::create(b, loc, w, splat(16)));
      return lowerConvert(b, loc, f32, vt.getElementType().isInteger() ? VectorType::get({n}, b.getF32Type()) : vt);
    }
    if (te.isBF16()) {  // round to nearest even; NaN stays a quiet NaN
      Value f32 = lowerConvert(b, loc, src, VectorType::get({n}, b.getF32Type()));
      Value bits = arith::BitcastOp::create(b, loc, i32v, f32);
      Value lsb = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, splat(16)), splat(1));
      Value rounded = arith::AddIOp::create(b, loc, bits, arith::AddIOp::create(b, loc, lsb, splat(0x7fff)));
      Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, f32, f32);
      Value hi = arith::ShRUIOp::create(b, loc, rounded, splat(16));
      hi = arith::SelectOp::create(b, loc, nan, splat(0x7fc0), hi);
      return arith::TruncIOp::create(b, loc, vt, hi);
    }
    return lowerConvert(b, loc, src, vt);
  }

  FailureOr<Value> lower(Operation* op) {
    Location loc = op->getLoc();
    if (auto p = dyn_cast<ProgramIdOp>(op)) {
      Value id;
      if (p.getAxis() == 0) id = xevm::WorkgroupIdXOp::create(b, loc, b.getI32Type(), LLVM::ConstantRangeAttr());
      else if (p.getAxis() == 1) id = xevm::WorkgroupIdYOp::create(b, loc, b.getI32Type(), LLVM::ConstantRangeAttr());
      else id = xevm::WorkgroupIdZOp::create(b, loc, b.getI32Type(), LLVM::ConstantRangeAttr());
      return Value(arith::IndexCastUIOp::create(b, loc, b.getIndexType(), id));
    }
    if (isa<WarpIdOp>(op))
      return Value(arith::IndexCastUIOp::create(b, loc, b.getIndexType(), xevm::SubgroupIdOp::create(b, loc, b.getI32Type(), LLVM::ConstantRangeAttr())));
    if (auto m = dyn_cast<MakeBlockPtrOp>(op)) {
      Value v = makeBlockPtr(m);
      if (!v) return m.emitError() << "the xe lowering takes 2-D block pointers", failure();
      return v;
    }
    if (auto a = dyn_cast<AdvanceOp>(op)) return advance(a);
    if (auto l = dyn_cast<LoadOp>(op)) return lowerLoad(l);
    if (auto s = dyn_cast<StoreOp>(op)) return lowerStore(s), Value();
    if (isa<PrefetchOp>(op)) return Value();  // a hint; 2D block prefetch is a later step
    if (auto d = dyn_cast<DotOp>(op)) {
      Value v = dot(d);
      if (!v) return failure();
      return v;
    }
    if (auto e = dyn_cast<ExtractOp>(op)) {
      auto st = operandType<RankedTensorType>(e, 0), rt = cast<RankedTensorType>(e.getType());
      if (st.getRank() != 2 || rt.getRank() != 2)
        return e.emitError() << "the xe lowering extracts from 2-D tiles", failure();
      int64_t R = st.getDimSize(0), r = rt.getDimSize(0), gridCols = st.getDimSize(1) / rt.getDimSize(1);
      int64_t bi = e.getIndex() / gridCols, bj = e.getIndex() % gridCols, blocks = rt.getDimSize(1) / kLanes;
      SmallVector<int64_t> idx;
      for (int64_t bl = 0; bl < blocks; ++bl)
        for (int64_t i = 0; i < r; ++i) idx.push_back((bj * blocks + bl) * R + bi * r + i);
      return shuffle(loc, e.getSrc(), idx);
    }
    if (auto c = dyn_cast<ConcatOp>(op)) {
      auto rt = cast<RankedTensorType>(c.getType());
      auto pt = operandType<RankedTensorType>(c, 0);
      if (pt.getRank() != 2) return c.emitError() << "the xe lowering concatenates 2-D tiles", failure();
      if (c.getAxis() == 1) return join(loc, SmallVector<Value>(c.getSrcs()));  // blocks are column-major
      // Rows: interleave each block's rows from every part.
      Value all = join(loc, SmallVector<Value>(c.getSrcs()));
      int64_t r = pt.getDimSize(0), blocks = rt.getDimSize(1) / kLanes, perPart = r * blocks;
      SmallVector<int64_t> idx;
      for (int64_t bl = 0; bl < blocks; ++bl)
        for (size_t p = 0; p < c.getSrcs().size(); ++p)
          for (int64_t i = 0; i < r; ++i) idx.push_back(int64_t(p) * perPart + bl * r + i);
      return shuffle(loc, all, idx);
    }
    if (auto bc = dyn_cast<BroadcastOp>(op)) {
      auto st = operandType<RankedTensorType>(bc, 0), rt = cast<RankedTensorType>(bc.getType());
      if (st.getRank() == 2 && rt.getRank() == 2 && isColumn(st) && st.getDimSize(0) == rt.getDimSize(0) &&
          !isColumn(rt)) {
        // Block b's row r takes the column's value r.
        SmallVector<int64_t> idx;
        for (int64_t bl = 0; bl < rt.getDimSize(1) / kLanes; ++bl)
          for (int64_t i = 0; i < rt.getDimSize(0); ++i) idx.push_back(i);
        return shuffle(loc, bc.getSrc(), idx);
      }
      if (st.getRank() != 2 || rt.getRank() != 2 || st.getDimSize(0) != 1 || st.getDimSize(1) != rt.getDimSize(1))
        return bc.emitError() << "the xe lowering broadcasts [1, C] rows only; got " << st << " -> " << rt, failure();
      SmallVector<int64_t> idx;
      for (int64_t bl = 0; bl < rt.getDimSize(1) / kLanes; ++bl)
        for (int64_t i = 0; i < rt.getDimSize(0); ++i) idx.push_back(bl);
      return shuffle(loc, bc.getSrc(), idx);
    }
    if (auto s = dyn_cast<SplatOp>(op)) {
      auto vt = laneType(cast<RankedTensorType>(s.getType()));
      if (s.getValue().getType() != vt.getElementType())
        return s.emitError() << "the xe lowering splats a value of the tile's element type", failure();
      return Value(vector::BroadcastOp::create(b, loc, vt, s.getValue()));
    }
    if (auto c = dyn_cast<ConvertOp>(op))
      return convert(loc, c.getSrc(), operandType<RankedTensorType>(c, 0), cast<RankedTensorType>(c.getType()));
    if (auto e = dyn_cast<ExpandDimsOp>(op)) return e.getSrc();  // [C] -> [1, C], [R] -> [R, 1]: the same lane vector
    if (auto r = dyn_cast<ReduceOp>(op)) return reduce(r);
    if (auto o = dyn_cast<IotaOp>(op)) return iota(o);
    if (auto m = dyn_cast<MaskOp>(op)) return mask(m);
    if (auto bl = dyn_cast<BlockLookupOp>(op)) {
      // Entry `index` of an integer table in global memory (positions, block
      // tables): every lane reads the same one.
      Type e = operandType<PtrType>(bl, 0).getElementType();
      Value at = LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), e, bl.getTable(),
                                     ArrayRef<LLVM::GEPArg>{toI64(loc, bl.getIndex())});
      Value v = LLVM::LoadOp::create(b, loc, e, at);
      return Value(arith::IndexCastOp::create(b, loc, b.getIndexType(), v));
    }
    if (auto s = dyn_cast<SiluOp>(op)) {  // x / (1 + exp(-x))
      Value x = s.getSrc();
      auto vt = cast<VectorType>(x.getType());
      Value one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, b.getFloatAttr(vt.getElementType(), 1.0)));
      Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
      return Value(arith::DivFOp::create(b, loc, x, arith::AddFOp::create(b, loc, one, e)));
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto t = dyn_cast<RankedTensorType>(c.getType());
      if (!t) return Value();
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense || !dense.isSplat())
        return c.emitError() << "the xe lowering takes splat tile constants", failure();
      VectorType vt = laneType(t);
      Attribute v = dense.getSplatValue<Attribute>();
      if (t.getElementType().isBF16())
        v = b.getIntegerAttr(b.getI16Type(), cast<FloatAttr>(v).getValue().bitcastToAPInt().getZExtValue());
      return Value(arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, v)));
    }
    if (isa<scf::IfOp, scf::YieldOp>(op) || isa<arith::ArithDialect, math::MathDialect>(op->getDialect())) {
      for (Value r : op->getResults())
        if (auto t = dyn_cast<RankedTensorType>(r.getType())) {
          if (t.getElementType().isBF16() && !isa<scf::IfOp>(op))
            return op->emitError() << "the xe lowering computes in f16 or f32; convert bf16 tiles first", failure();
          r.setType(laneType(t));
        } else if (isa<BlockPtrType>(r.getType())) {
          r.setType(convertType(r.getType()));
        }
      return Value();
    }
    if (op->getNumResults() && llvm::any_of(op->getResultTypes(), [](Type t) { return isa<RankedTensorType, BlockPtrType>(t); }))
      return op->emitError() << "'" << op->getName() << "' is not supported by the xe lowering", failure();
    return Value();
  }
};

struct ConvertTileToXeVMPass : impl::ConvertTileToXeVMBase<ConvertTileToXeVMPass> {
  using Base::Base;
  void runOnOperation() override {
    if (blockIo != "auto" && blockIo != "always" && blockIo != "never") {
      getOperation().emitError() << "convert-tile-to-xevm: block-io is auto, always or never, not '" << blockIo << "'";
      return signalPassFailure();
    }
    // A module pass: the lowering declares the OpenCL built-ins it calls
    // (sub-group reductions) in the module.
    SmallVector<func::FuncOp> kernels(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp f : kernels)
      if (failed(Lowering(f, blockIo).run())) return signalPassFailure();
  }
};

}  // namespace

}  // namespace strata::tile
