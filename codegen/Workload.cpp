#include "codegen/Workload.h"

#include "mlir/Analysis/SliceAnalysis.h"

namespace strata::tile {

using namespace mlir;

const char* workloadName(Workload w) {
  switch (w) {
    case Workload::Gemm: return "gemm";
    case Workload::Attention: return "attention";
    case Workload::PagedDecode: return "paged_decode";
    case Workload::Reduction: return "reduction";
    case Workload::Elementwise: return "elementwise";
  }
  return "?";
}

static std::optional<Tiling> parseTiling(StringRef s) {
  if (s == "horizontal") return Tiling::Horizontal;
  if (s == "vertical") return Tiling::Vertical;
  if (s == "square") return Tiling::Square;
  if (s == "split_k") return Tiling::SplitK;
  return std::nullopt;
}

// True when `v` is computed (through any ops of this function) from a dot.
static bool dependsOnDot(Value v) {
  Operation* def = v.getDefiningOp();
  if (!def) return false;
  SetVector<Operation*> slice;
  BackwardSliceOptions opts;
  opts.inclusive = true;
  (void)getBackwardSlice(def, &slice, opts);
  return llvm::any_of(slice, [](Operation* op) { return isa<DotOp>(op); });
}

// Rows over warps; a single row spreads its columns over them instead
// (RMSNorm at decode, a fused elementwise row), and a reduce along it then
// crosses warps.
Tiling rowTiling(ArrayRef<int64_t> shape) {
  return shape.size() == 2 && shape[0] == 1 ? Tiling::Vertical : Tiling::Horizontal;
}

FailureOr<RootChoice> detectWorkload(func::FuncOp f) {
  SmallVector<DotOp> dots;
  bool paged = false;
  ReduceOp firstReduce;
  StoreOp firstStore;
  f.walk([&](Operation* op) {
    if (auto d = dyn_cast<DotOp>(op)) dots.push_back(d);
    if (isa<BlockLookupOp>(op)) paged = true;
    if (auto r = dyn_cast<ReduceOp>(op); r && !firstReduce) firstReduce = r;
    if (auto s = dyn_cast<StoreOp>(op); s && !firstStore) firstStore = s;
  });
  if (!dots.empty()) {
    RootChoice c{Workload::Gemm, dots.front().getResult(), Tiling::Square};
    if (paged) {
      c = RootChoice{Workload::PagedDecode, dots.front().getResult(), Tiling::Vertical};
    } else {
      for (DotOp d : dots)
        if (dependsOnDot(d.getA())) {
          c = RootChoice{Workload::Attention, d.getResult(), Tiling::Horizontal};
          break;
        }
    }
    // A hinted dot becomes the root with the hinted tiling; split_k lays out
    // its A operand (K over warps), from which the dot's layouts follow.
    // Attention's P V dot (the first whose A comes from a dot) comes first
    // when hinted: P, its A operand, and through P the scores take their
    // layouts from it (the warpgroup-dot forms hint their S dots too).
    for (DotOp d : dots)
      if (dependsOnDot(d.getA())) {
        if (auto t = d.getTiling()) return RootChoice{c.workload, d.getResult(), *parseTiling(*t), true};
        break;
      }
    for (DotOp d : dots)
      if (auto t = d.getTiling()) {
        Tiling tiling = *parseTiling(*t);
        return RootChoice{c.workload, tiling == Tiling::SplitK ? d.getA() : d.getResult(), tiling, true};
      }
    return c;
  }
  if (firstReduce)
    return RootChoice{Workload::Reduction, firstReduce.getSrc(), rowTiling(tileTypeOf(firstReduce.getSrc()).getShape())};
  if (firstStore)
    return RootChoice{Workload::Elementwise, firstStore.getValue(), rowTiling(tileTypeOf(firstStore.getValue()).getShape())};
  return f.emitError() << "nothing to lay out: the kernel has no dot, reduce or store";
}

static SmallVector<int64_t> primeFactorsDescending(int64_t n) {
  SmallVector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) f.push_back(n);
  std::sort(f.rbegin(), f.rend());
  return f;
}

FailureOr<WarpLayout> rootLayout(ArrayRef<int64_t> shape, int64_t numWarps, Tiling tiling, std::string& why) {
  int64_t rank = shape.size();
  WarpLayout l;
  l.sizePerWarp.assign(shape.begin(), shape.end());
  l.warpsPerCTA.assign(rank, 1);
  for (int64_t i = rank - 1; i >= 0; --i) l.order.push_back(i);
  if (rank == 0) {
    why = "cannot lay out a rank-0 tile";
    return failure();
  }
  auto split = [&](int64_t dim, int64_t by) {
    if (l.sizePerWarp[dim] % by != 0) return false;
    l.sizePerWarp[dim] /= by;
    l.warpsPerCTA[dim] *= by;
    return true;
  };
  for (int64_t p : primeFactorsDescending(numWarps)) {
    int64_t dim = 0;
    if (tiling == Tiling::Vertical || tiling == Tiling::SplitK) dim = rank - 1;
    if (tiling == Tiling::Square && rank == 2 && l.sizePerWarp[1] > l.sizePerWarp[0]) dim = 1;
    if (split(dim, p)) continue;
    // Square tiling may fall back to the other dim; the others may not.
    if (tiling == Tiling::Square && rank == 2 && split(1 - dim, p)) continue;
    why = "a tile of shape [" + std::to_string(shape[0]) + (rank > 1 ? ", " + std::to_string(shape[1]) : "") +
          (rank > 2 ? ", ..." : "") + "] cannot be split over " + std::to_string(numWarps) + " warps";
    return failure();
  }
  return l;
}

}  // namespace strata::tile
