// The sm_90 lowering's inside (convert-tile-to-nvvm,
// codegen/targets/cuda/ConvertTileToNVVM.cpp has the whole contract): the
// fragment each tile takes (FragAnalysis, NVVMFragments.cpp), what the
// kernel keeps in workgroup-local memory, and the rewrite (Lowering), whose
// members live by concept: lane-held tiles, reductions and masks
// (NVVMLanes.cpp), shared memory, async copies, TMA and barriers
// (NVVMMemory.cpp), mma and warpgroup dots (NVVMDots.cpp), and the op
// dispatch (ConvertTileToNVVM.cpp). Not a public header.
#pragma once
#include "codegen/TileLowering.h"
#include "codegen/Passes.h"
#include "codegen/UArch.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace strata::tile::nvvm {

using namespace mlir;

// The lane layout of one tile (see the file comment).
struct Frag {
  // Lane: a tile of a kernel without dots, `numel` elements spread over the
  // lanes round-robin (element i of lane l is linear index 32 i + l, so a
  // warp's access i is contiguous), or, for a single element, held by every
  // lane.
  // Desc: a warpgroup dot's operand, left in local memory (no registers).
  enum Kind { A, B, C, Lane, Desc } kind = C;
  int64_t cols = 8;            // B: 8 or 16 columns (an unsplit [16, 16] B load); C: 8 or a warpgroup dot's N
  bool collapseRows = false;   // a [1, n] broadcast source: row coordinate 0
  bool collapseCols = false;   // a [m, 1] broadcast source: column coordinate 0
  int64_t droppedAxis = -1;    // a 1-D tile (expand_dims source): this axis is gone
  int64_t numel = 0;           // Lane: elements of the tile
  // Lane: contiguous elements a lane holds per round (laneLinear); more
  // than 1 only on whole rounds (numel a multiple of 32 vec) whose rows
  // are whole vectors.
  int64_t vec = 1;
  bool permuteK = true;        // A, B: K permuted (else the ISA's order)
  SmallVector<int64_t, 2> shape;  // Lane: the tile's shape

  // `vec`: the kernel's tile.lane_vector, taken where the tile allows it.
  static Frag lane(RankedTensorType t, int64_t vec = 1) {
    Frag f{Lane};
    f.numel = t.getNumElements();
    f.shape.assign(t.getShape().begin(), t.getShape().end());
    if (vec > 1 && f.numel % (32 * vec) == 0 && f.shape.back() % vec == 0) f.vec = vec;
    return f;
  }

  int64_t size() const {
    if (kind == Lane) return numel == 1 ? 1 : (numel + 31) / 32;
    if (kind == Desc) return 1;
    return kind == A ? 8 : 4 * cols / 8;
  }
  bool operator==(const Frag& o) const {
    return kind == o.kind && numel == o.numel && vec == o.vec && shape == o.shape && cols == o.cols &&
           permuteK == o.permuteK &&
           collapseRows == o.collapseRows &&
           collapseCols == o.collapseCols && droppedAxis == o.droppedAxis;
  }
  // Offsets of element i from the lane's base coordinates (see the file
  // comment: K, A's columns and B's rows, permuted or in the ISA's order).
  int64_t kStep() const { return permuteK ? 2 : 8; }
  int64_t rowOff(int64_t i) const {
    return kind == A ? 8 * ((i >> 1) & 1) : kind == B ? (i & 1) + kStep() * ((i >> 1) & 1) : 8 * ((i >> 1) & 1);
  }
  // The lane's base row is g (A, C) or the K base (B); the base column the
  // K base (A), g (B) or 2t (C); the K base is 4t permuted, else 2t: see
  // Lowering::coords.
  int64_t colOff(int64_t i) const {
    return kind == A ? (i & 1) + kStep() * (i >> 2) : kind == B ? 8 * (i >> 2) : 8 * (i >> 2) + (i & 1);
  }
  std::string str() const {
    if (kind == Lane)
      return "lane-linear [" + std::to_string(numel) + "]" + (vec > 1 ? " x" + std::to_string(vec) : std::string());
    const char* k[] = {"A", "B", "C", "", "warpgroup operand"};
    std::string wide = kind == C && cols != 8 ? " [16, " + std::to_string(cols) + "]" : "";
    return k[kind] + wide + (collapseRows ? " (row broadcast)" : "") + (collapseCols ? " (column broadcast)" : "");
  }
};

// A column broadcast ([R, 1] -> [R, C]) whose lanes already hold the
// result's rows whole (a lane vector of C) and the source's rows one a
// round: a repeat inside each lane.
inline bool repeatsInLane(const Frag& src, const Frag& res) {
  return src.kind == Frag::Lane && res.kind == Frag::Lane && src.vec == 1 && !src.collapseCols && src.shape.size() == 2 &&
         src.shape[1] == 1 && res.shape.size() == 2 && res.vec == res.shape[1] && res.numel == src.numel * res.vec &&
         src.numel % 32 == 0;
}

inline bool isElementwise(Operation* op) {
  if (isa<ConvertOp, SiluOp, MaskOp, arith::SelectOp>(op)) return true;
  Dialect* d = op->getDialect();
  return d && (isa<arith::ArithDialect, math::MathDialect>(d)) && op->getNumResults() == 1 &&
         isa<RankedTensorType>(op->getResult(0).getType()) && !isa<arith::ConstantOp>(op);
}

// The local load a warpgroup dot operand comes from (through the extracts
// and concats match-target-size put between), or null.
inline LoadOp groupOperandLoad(Value v) {
  for (;;) {
    if (auto e = v.getDefiningOp<ExtractOp>()) v = e.getSrc();
    else if (auto c = v.getDefiningOp<ConcatOp>()) v = c.getSrcs().front();
    else break;
  }
  return isGroupDotOperand(v) ? v.getDefiningOp<LoadOp>() : LoadOp();
}
// A warpgroup dot: B from a swizzled buffer (A from one or from registers).
inline bool isGroupDot(DotOp d) { return bool(groupOperandLoad(d.getB())); }

// Decides every tile value's fragment; reports the first conflict.
class FragAnalysis {
 public:
  // `permuteK`: A and B fragments take the permuted K order (else the ISA's).
  LogicalResult run(func::FuncOp f, bool hasDot, bool permuteK);
  const Frag& of(Value v) const { return frags.find(v)->second; }
  // `to` replaces `from` in the rewrite: it holds the same fragment.
  void replaced(Value from, Value to);

 private:
  bool set(Value v, const Frag& f, Operation* at);
  std::optional<Frag> get(Value v) const;
  // All of `vals` take one fragment (the first one known).
  bool unify(ArrayRef<Value> vals, Operation* at);

  bool visit(Operation* op);

  void checkShape(Value v, RankedTensorType t, Operation* at);

  DenseMap<Value, Frag> frags;
  bool ok = true, permuteK = true;
};

// What the rewrite needs to know about workgroup-local memory, gathered
// from the tile IR before it (the ops' operands are views by the time each
// op is lowered).
struct LocalMemory {
  memref::GlobalOp dynamic;                           // the kernel's dynamic shared memory (bytes)
  DenseMap<Operation*, int64_t> allocs;               // tile.alloc -> its byte offset in it
  DenseSet<Operation*> loads;                         // tile.load of a local view
  DenseMap<Operation*, RankedTensorType> copyBlocks;  // tile.async_copy -> its block
  DenseSet<Operation*> swizzledCopies;                // tile.async_copy into a swizzled buffer
  DenseSet<Operation*> swizzledStores;                // tile.store into a swizzled buffer (for tile.tma_store)
  DenseMap<Operation*, int64_t> mbarrierCounts;       // tile.mbarrier_init -> mbarriers in its buffer
  // Warpgroup dots that open / close a run of them in their block (the
  // run is fenced before and committed after as one wgmma group).
  DenseSet<Operation*> groupDotFirst, groupDotLast;
  // Last dots of runs that a tile.group_dot_wait ends: committed, not waited for.
  DenseSet<Operation*> groupDotDeferred;
  DenseSet<Operation*> nMajorB;  // warpgroup dots whose B view is N-contiguous
};

// The 128-byte swizzle (tile.alloc's `swizzle`): the 16-byte chunk of a
// byte offset (bits 4-6) xor its row within the 8-row atom (bits 7-9).
constexpr int64_t kSwizzleRowBytes = 128, kSwizzleAtomBytes = 1024;

// The suspend-time hint of an mbarrier wait's try_wait, in ns (an upper
// bound on one try; the hardware may return earlier).
constexpr int64_t kMBarrierSuspendNs = 10000000;

// offset + sum(idx_d * stride_d): element `idx` of a strided view as an
// index into its base buffer.
inline Value linearIndex(OpBuilder& b, Location loc, Value offset, ValueRange strides, ArrayRef<Value> idx) {
  Value lin = offset;
  for (auto [i, st] : llvm::zip(idx, strides))
    lin = arith::AddIOp::create(b, loc, lin, arith::MulIOp::create(b, loc, i, st));
  return lin;
}

class Lowering {
 public:
  // `scratch`: the kernel's shared-memory global (null without cross-warp
  // reductions), f32, numWarps x 32 x the largest lane vector reduced.
  Lowering(func::FuncOp f, FragAnalysis& frags, memref::GlobalOp scratch, const LocalMemory& local)
      : f(f), frags(frags), b(f.getContext()), scratchGlobal(scratch), local(local) {}

  LogicalResult run();

 private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, f.getLoc(), v); }

  // The per-lane vector of a tile value; other types unchanged.
  Type laneType(Value v);

  // The view indices of element i of `fr` for this lane (rank of the view).
  SmallVector<Value> coords(const Frag& fr, int64_t i);

  // i < size_d for every index of `idx` into `view`.
  Value inBounds(Location loc, Value view, ArrayRef<Value> idx);

  // `load()` (of type t), or zeros of t where `ok` (when given) is false.
  Value guardedLoad(Location loc, Type t, Value ok, llvm::function_ref<Value()> load);
  // Element `idx` of `view`, or 0 where `ok` (when given) is false.
  Value loadElement(Location loc, Value view, ArrayRef<Value> idx, Type et, Value ok);
  // Stores `v` at `idx` of `view` where `ok` (when given) holds.
  void storeElement(Location loc, Value v, Value view, ArrayRef<Value> idx, Value ok);

  // A flat view of a load's array for R-element accesses: base buffer as
  // memref<?xT>, the view's offset and strides, the run length R.
  struct RunView {
    Value flat, offset;
    SmallVector<Value> strides;
    int64_t dim = 0, run = 2;
    Value load(OpBuilder& b, Location loc, ArrayRef<Value> idx, Type et, int64_t n) const {
      Value lin = linearIndex(b, loc, offset, strides, idx);
      int64_t bytes = n * et.getIntOrFloatBitWidth() / 8;
      return vector::LoadOp::create(b, loc, VectorType::get({n}, et), flat, ValueRange{lin}, /*nontemporal=*/false,
                                    llvm::MaybeAlign(bytes));
    }
    void store(OpBuilder& b, Location loc, Value v, ArrayRef<Value> idx) const {
      auto vt = cast<VectorType>(v.getType());
      Value lin = linearIndex(b, loc, offset, strides, idx);
      int64_t bytes = vt.getNumElements() * vt.getElementType().getIntOrFloatBitWidth() / 8;
      vector::StoreOp::create(b, loc, v, flat, ValueRange{lin}, /*nontemporal=*/false, llvm::MaybeAlign(bytes));
    }
  };

  // Set when `l` promises `contiguous = d` (runs of `run` elements along d)
  // of a full 2-D view of 16-bit elements (of 8-, 16- or 32-bit ones for a
  // lane-linear tile, whose vectors are 16 bytes at most for 16- and 32-bit
  // elements: 8 or 4; a quantized GEMV's i8 weights take 8 in 8 bytes;
  // of 8- and 32-bit ones for an accumulator, whose column pairs are 2 or 8
  // bytes: the quantized GEMM's weight integers, an f32 C):
  // elements of the fragment that form an aligned run along d then load as
  // one wider access (see runsOf).
  // (A store's promise, the same attributes, likewise.)
  // With `maskedRuns`, also for a load without in_bounds (its runs each
  // wholly inside or outside the view: tile.load's promise).
  template <typename Op>
  std::optional<RunView> runView(Op l, const Frag& fr, Type et, bool maskedRuns = false) {
    auto d = l.getContiguous();
    const int64_t bits = et.getIntOrFloatBitWidth();
    if (!d || (!l.getInBounds() && !maskedRuns) || fr.collapseRows || fr.collapseCols || fr.droppedAxis >= 0 ||
        !(bits == 16 || (bits == 8 && (fr.kind == Frag::Lane || fr.kind == Frag::C)) ||
          (bits == 32 && ((fr.kind == Frag::Lane && fr.vec <= 4) || fr.kind == Frag::C))))
      return std::nullopt;
    Location loc = l.getLoc();
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, l.getPtr());
    auto flatType = MemRefType::get({ShapedType::kDynamic}, et);
    Value flat = memref::ReinterpretCastOp::create(b, loc, flatType, md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
                                                   ArrayRef<OpFoldResult>{b.getIndexAttr(INT32_MAX)},
                                                   ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    return RunView{flat, md.getOffset(), SmallVector<Value>(md.getStrides().begin(), md.getStrides().end()), int64_t(*d),
                   int64_t(l.getRun().value_or(2))};
  }

  // The fragment's elements grouped into accesses: each group lists element
  // indices in increasing position along `dim`; a group of n > 1 is an
  // n-element run starting at a multiple of n (n <= maxRun, and n divides
  // the lane's base coordinate along `dim`, so the run is aligned).
  // Singletons where no run forms.
  static SmallVector<SmallVector<int64_t, 4>> runsOf(const Frag& fr, int64_t dim, int64_t maxRun);

  // Lane-linear tiles (kernels without dots). Element i of this lane is
  // linear index 32 i + lane (index 0 in every lane for a single element),
  // or with vectors of v = fr.vec elements (i / v) 32 v + v lane + i % v.
  Value laneLinear(Location loc, const Frag& fr, int64_t i);
  // The view indices of this lane's element i (laneLinear's position).
  SmallVector<Value> laneIndices(Location loc, const Frag& fr, int64_t i);
  // `each(i, idx, pred)` is called per element with its view indices and,
  // for the last round of a tile that does not fill it, the lane predicate
  // (null when every lane holds a real element).
  void forLaneElements(const Frag& fr, llvm::function_ref<void(int64_t, SmallVector<Value>, Value)> each);
  Value both(Location loc, Value a, Value c) { return !a ? c : !c ? a : arith::AndIOp::create(b, loc, a, c).getResult(); }

  Value lowerLaneLoad(LoadOp l, const Frag& fr);

  void lowerLaneStore(StoreOp s, const Frag& fr);

  // A reduction of a whole lane-linear tile (the kept dim is 1) to one value
  // every lane holds: each lane combines its elements (identity for the
  // missing ones of a partial round), then five butterfly shuffles.
  FailureOr<Value> lowerLaneReduce(ReduceOp r, const Frag& fr);
  // dp4a chains over each lane's segments.
  FailureOr<Value> lowerSegmentDot(SegmentDotOp d);

  // The index of a whole lane-linear tile's largest element (the lowest on
  // ties), as f32, in every lane. Each lane keeps a (value, index) pair:
  // its elements sit at lane + 32 i; the five butterfly shuffles exchange
  // pairs. A pair wins on a larger value or an equal one at a lower index
  // (so -inf elements still give an index; NaN never wins).
  Value lowerLaneArgmax(ReduceOp r, const Frag& fr);

  // `v` combined (as `r` combines) with the lanes whose ids differ from
  // this lane's in the bits `offsets` name: one butterfly shuffle each.
  Value combineAcrossLanes(Location loc, ReduceOp r, Value v, ArrayRef<int32_t> offsets);

  // A row (axis 1) or column (axis 0) reduction of a [16, 8] accumulator
  // fragment (element i at row g + 8 (i / 2), column 2t + i % 2; match-
  // target-size splits wider tiles and combines the pieces along the
  // reduced axis elementwise before this one reduction). Rows: each lane combines its two columns per row, then
  // the 4 lanes of a row (same g: lane bits 0-1) by butterfly shuffles;
  // columns: its two rows per column, then the 8 lanes of a column (same t:
  // lane bits 2-4). The result keeps the fragment's element numbering with
  // the reduced coordinate gone (rows: [r(g), r(g), r(g+8), r(g+8)];
  // columns: [c(2t), c(2t+1), c(2t), c(2t+1)]), so it broadcasts back
  // through expand_dims + broadcast without data movement.
  FailureOr<Value> lowerFragmentReduce(ReduceOp r, const Frag& fr);

  // a + c or max(a, c) as the reduction `r` combines.
  Value combineReduced(Location loc, ReduceOp r, Value a, Value c);

  // A cross-warp sum or max of a tile every warp holds whole (same lane
  // elements in every warp) through the scratch block: write, barrier,
  // combine all warps' values, barrier (the scratch is reused).
  Value combineAcrossWarps(ReduceOp r, Value src);

  // A generic pointer to the data of a view (its aligned pointer: global
  // addresses are generic addresses, and tile.alloc views are generic
  // pointers into .shared).
  Value genericPointer(Location loc, Value view);

  // The address of element `idx` of the view `view` as an LLVM pointer in
  // address space `space` (1 global, 3 shared). Views of tile.alloc
  // buffers are generic pointers into .shared (see lowerAlloc). The view's
  // base is cast to `space` first and the element offset added there (a
  // GEP), so the accesses of one view share one base register and their
  // constant offsets become immediates (shared addresses are 32-bit: see
  // CudaBackend's short pointers); offsets added to the generic pointer
  // cost a 64-bit register and a cvta per access.
  // `swizzled`: the view's buffer is a swizzled tile.alloc (its byte
  // offsets are permuted; the buffer starts on an atom boundary).
  Value elementPtr(Location loc, Value view, ArrayRef<Value> idx, unsigned space, bool swizzled = false);

  // tile.alloc: its bytes of the kernel's dynamic shared memory as a generic
  // memref<?xT> (what every tile.ptr is), so views of it are built like any
  // other.
  Value lowerAlloc(AllocOp a);

  // tile.async_copy: the workgroup's threads take the block's 16-byte runs
  // (8 elements along the contiguous dim) round-robin, one cp.async.cg each;
  // a run that leaves the source array copies what is inside (cp.async's
  // source size) and zero-fills the rest.
  // When a thread has several runs and the threads cover whole lines
  // (threads a multiple of the runs per line), its runs keep their place
  // along the contiguous dim and step a fixed number of lines: the index
  // math, the row's room and the run's bytes are computed once per copy and
  // every run adds a constant (an address immediate when the strides are
  // constants), one compare and one select besides the copy (the per-run
  // form took about 14 instructions a run on sm_90). A run with nothing
  // inside copies 0 bytes from its own address (cp.async reads nothing).
  // Copies of one run a thread (the paged prefill's pages over 8 warps)
  // keep the per-run form: nothing to amortize, and on the H100
  // (2026-11-23) the hoisted form spilled that kernel (stack 48 -> 104
  // bytes, wgmma serialized: 0.80x the TFLOP/s).
  LogicalResult lowerAsyncCopy(AsyncCopyOp c);

  // A tile.block_lookup whose value the loop carries to its next step: one
  // 8-byte ld.global, issued where the IR puts it. As an ordinary load LLVM
  // sank it to its first use: the paged decode form's look-ahead lookups
  // landed right before the copies they feed, and waiting on them was a
  // third of that kernel's stall samples (H100, Nsight Compute,
  // 2026-11-23). Other lookups stay ordinary loads (pinning all of them
  // spilled the paged prefill: stack 40 -> 56 bytes). Tables are i64
  // arrays (8-byte aligned).
  Value lowerPinnedLookup(BlockLookupOp l);

  // tile.arrive: a barrier (every thread's earlier stores are issued),
  // then thread 0 fences (release at device scope) and adds one to the
  // counter; the arrival that makes it `count` stores zero back and fences
  // again (acquire). A barrier reduction (bar.red.or) hands thread 0's
  // verdict to every thread and orders its acquire before their later
  // loads: the pattern of a split-K semaphore (CUTLASS's, for one).
  Value lowerArrive(ArriveOp a);

  // `v` through a register move LLVM cannot see through: the per-run row
  // tests compare an i32 whose range is known, and LLVM would widen them
  // back into 64-bit compares (two instructions each on sm_90).
  Value opaqueI32(Location loc, Value v);

  // Inline PTX `text` with LLVM constraints, one result of type `type`;
  // `sideEffects` keeps LLVM from moving it across other such operations.
  Value inlinePtx(Location loc, Type type, ValueRange operands, StringRef text, StringRef constraints, bool sideEffects);

  // Bytes of a run of 8 elements at `along` of a dim of `size` elements
  // inside it: min(8, size - along) elements, at least 0, as an i32.
  Value runBytes(Location loc, Value size, Value along, int64_t eltBytes);

  // Thread 0 alone runs what `body` builds.
  void onThreadZero(Location loc, llvm::function_ref<void()> body);

  Value i32(Location loc, Value index) { return arith::IndexCastOp::create(b, loc, b.getI32Type(), index); }

  // tile.mbarrier_init: thread 0 initializes every mbarrier of the buffer,
  // fences the inits for the async proxy (the TMA unit completes
  // transactions on them) and the workgroup barrier publishes them.
  void lowerMBarrierInit(MBarrierInitOp m);

  // tile.tma_copy: thread 0 arrives on the barrier announcing the block's
  // bytes, then issues cp.async.bulk.tensor.2d (the TMA unit writes the
  // swizzled rows and completes the bytes on the barrier).
  void lowerTmaCopy(TmaCopyOp c);

  // fence.proxy.async.shared::cta: this thread's generic-proxy accesses of
  // shared memory become ordered with the async proxy's (wgmma, TMA).
  void fenceAsyncShared(Location loc);

  // tile.store into a swizzled buffer (a block for tile.tma_store): each
  // aligned run of the fragment (at most 8 elements, 16 bytes: it never
  // crosses a swizzle chunk) is one store at its swizzled address. A warp's
  // accumulator pairs of 8 rows then spread over more banks than a dense
  // buffer's, which puts rows 128 bytes apart on the same ones.
  FailureOr<Value> lowerSwizzledStore(StoreOp s);

  // tile.tma_store: every thread fences its local writes for the async
  // proxy (the TMA unit reads the buffer through it), the workgroup barrier
  // joins them, then thread 0 issues cp.async.bulk.tensor.3d shared ->
  // global at panel coordinates (0, column / 64, row), commits it and waits
  // until the buffer has been read. A run of consecutive stores shares the
  // fence and barrier before it and the wait after it.
  void lowerTmaStore(TmaStoreOp st);

  // tile.group_dot_wait: wgmma.wait_group. After a wait for every group
  // (pending = 0) right behind a K loop, the f32 accumulators the loop hands
  // out pass through an empty inline asm (each register tied to itself,
  // ordered after the wait as both have side effects), so nothing that
  // reads them can move above the wait. LLVM sees no tie between the wait
  // and the registers wgmma writes: it folded the epilogue's bf16 converts
  // into a phi of the loop's exit and its zero-trip path, above the wait,
  // and ptxas then serialized every wgmma of the kernel (C7514; H100,
  // 2026-11-24: the plain tall and large GEMMs took 1.16-1.36x the time).
  void lowerGroupDotWait(GroupDotWaitOp w);

  // tile.mbarrier_wait: every thread polls the phase (try_wait.parity in a
  // loop, suspending up to the hint between tries).
  void lowerMBarrierWait(MBarrierWaitOp w);

  // An A or B fragment from a view of workgroup-local memory: one
  // ldmatrix (.x4 for A and [16, 16] B, .x2 for [16, 8] B). Lanes 8j..8j+7
  // give the rows of 8x8 matrix j, 8 elements along the view's contiguous
  // dim each: A (contiguous along K) non-transposed; B contiguous along K
  // ([N, K] storage) non-transposed, along N ([K, N] storage) with .trans.
  // Register j then holds the fragment's elements 2j, 2j + 1 (ISA order).
  FailureOr<Value> lowerLocalLoad(LoadOp l, const Frag& fr);

  FailureOr<Value> lower(Operation* op);

  // Two [16, 8] accumulator fragments joined along columns as the A operand
  // of a dot: C element i is at row g + 8 (i/2), column 2t + i%2, and A
  // element i (ISA K order) at row g + 8 (i/2 % 2), column 2t + i%2 + 8
  // (i/4), so A = the left fragment's 4 elements, then the right one's.
  // Only that join is a register move; the analysis refuses others.
  Value lowerConcat(ConcatOp cc);

  // keep = col < limit && (!causal || col <= row) per lane element, at the
  // element's coordinates plus the mask's bases; -inf elsewhere.
  FailureOr<Value> lowerMask(MaskOp m);

  // lowerMask for a lane-linear 2-D tile (element coordinates as its loads
  // have them).
  Value lowerLaneMask(MaskOp m, const Frag& fr);

  // Each lane element's index along the axis plus the base, as f32.
  Value lowerIota(IotaOp io);

  // Whether the mask keeps the element at (row, col) of its tile.
  Value keepsElement(MaskOp m, Value row, Value col);

  // The mask's source with -inf where `keep` (one i1 per lane element) is false.
  Value maskedBy(MaskOp m, ArrayRef<Value> keep);

  // A warpgroup dot operand: where in local memory its block starts.
  struct GroupOperand {
    Value view;                // the (lowered) view it was loaded from
    int64_t row = 0, col = 0;  // the block's first element in that view
    int64_t cols = 0;          // the block's columns (set by descriptorOperand)
  };
  // Stands in for the operand `orig` (a placeholder register: nothing reads
  // it once the dots are lowered) and records where its block lies.
  Value descriptorOperand(Location loc, Value orig, GroupOperand g);

  // The sm_90 shared-memory matrix descriptor of a block in a 128-byte
  // swizzled buffer starting at `ptr` (address space 3): start address / 16
  // in bits 0-13, leading byte offset / 16 in 16-29, stride byte offset /
  // 16 in 32-45, swizzle mode in 62-63 (1: 128 bytes). The same fields
  // describe both layouts the buffers have:
  // - K-major (rows of 64 K elements): the stride offset is one 8-row atom
  //   (1024 bytes) to the next along M / N; the leading offset is unused
  //   (1). A block starting k elements into the atom's rows (k * 2 bytes)
  //   is addressed by that byte offset: the unit applies the swizzle to the
  //   address bits, as the copies did.
  // - N-major (rows of 64 N elements, one per K; wgmma's transposed B):
  //   the stride offset is one 8-row atom (8 K) to the next along K; the
  //   leading offset (to the next 64 N) is unused at the N <= 64 such
  //   blocks have here (1).
  Value matrixDescriptor(Location loc, Value ptr);

  // wgmma.mma_async.m64nNk16.f32 with B in local memory and A there too or
  // in registers: the warp's 16 accumulator rows are rows 16 (warp % 4) ..
  // of its warpgroup's 64, so a local A's descriptor starts that many rows
  // above the warp's own A block (the same address in all four warps); a
  // register A is the warp's own [16, 16] fragment. A run of warpgroup
  // dots is fenced before its first dot (the accumulator and A registers
  // were written by other instructions), committed as one group after its
  // last and waited for right there, so the dots complete where the tile
  // IR has them — unless a tile.group_dot_wait ends the run: then that op
  // waits instead, and the group may stay in flight across a K loop's back
  // edge (ptxas accepts it now that the loop-carried accumulator is not
  // copied between the dots; it serialized them on 2026-11-22).
  FailureOr<Value> lowerGroupDot(DotOp d);

  // wgmma with A from registers: the NVVM op takes descriptors only, so
  // this is the PTX itself, in the form the op's own lowering writes: the
  // accumulator's n / 2 floats written ("=f") and read from the same
  // registers (tied "0", "1", ...), A as four packed 16-bit pairs (the
  // lane's elements 2j, 2j + 1: rows g / g + 8, K 2t / 2t + 8, wgmma's
  // register A order), B's descriptor, the accumulate predicate (from an
  // immediate 1) and B's transpose bit (1: N-major).
  Value registerAGroupDot(Location loc, Value aFrag, Value descB, Value acc, Type st, int64_t n, Type et, bool nMajor);

  // mma.sync.m16n8k16.row.col, f32 accumulate. bf16 pairs travel as i32
  // registers (the ISA's .bf16x2 operands); f16 pairs as vector<2xf16>.
  FailureOr<Value> lowerDot(DotOp d);

  func::FuncOp f;
  FragAnalysis& frags;
  OpBuilder b;
  memref::GlobalOp scratchGlobal;
  Value scratch;
  const LocalMemory& local;
  int64_t numWarps = 1;
  Value tid, warpId, laneId, group, pair, quad;  // quad = 4t, pair = 2t
  DenseMap<Value, GroupOperand> groupOperands;   // placeholder -> its block in local memory
};

}  // namespace strata::tile::nvvm
