#include "runtime/cuda_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "ops/gemm_region.h"
#include "ops/regions.h"
#include "ops/row_forms.h"
#include "runtime/parallel.h"
#include "runtime/weights.h"

namespace strata::runtime {

using ops::Tensor;
using V = std::vector<Tensor>;

namespace {

// Device blocks by size class, handed out again once their tensor dies,
// lowest address first: the same requests get the same blocks whatever
// order the last step's tensors died in, so repeated decode steps launch
// on the same buffers (CUDA graph replay compares the launches' arguments).
// Blocks are never cleared: every kernel writes its whole output.
//
// Blocks of kSlabMinBlock and more are carved from slabs of at least
// kSlabBytes (the first made with the pool), never given back until the
// pool dies: cuMemAlloc costs 5-200 us a call (H100, 2026-11-25), and a
// first prompt of a new length asked for its blocks in its first layer
// while the GPU had little queued (docs/cuda.md "First prompts"). A block
// goes to the first slab with room at its end, so the same requests still
// get the same addresses. Smaller blocks (decode steps' activations) come
// from cuMemAlloc each: carved from slabs too, decode at batch 1 / 8 ran
// 0.8 / 1.3 % slower (not understood).
//
// A 16-bit tensor of more than kUnpaddedRows rows (rows: all but the last
// dimension) gets a block that holds its rows rounded up to `rowBlock`,
// the largest row block of the kernel set's TMA GEMMs, so that a GEMM
// reading it as A maps whole row blocks (GemmBuffers::aRows) and TMA does
// not zero-fill the last one's rows past M. Fewer rows are decode steps'
// small activations: their GEMMs copy A with cp.async (the decode class
// and the GEMV form), and 128 rows would grow them up to 128-fold.
class DevicePool {
 public:
  static constexpr int64_t kUnpaddedRows = 16;
  static constexpr size_t kSlabBytes = size_t(64) << 20, kSlabMinBlock = size_t(1) << 20;
  DevicePool(CudaDevice& d, int64_t rowBlock) : dev_(d), rowBlock_(rowBlock) {
    slabs_.push_back({dev_.allocate(kSlabBytes), kSlabBytes, 0});
  }
  ~DevicePool() {
    for (const Slab& s : slabs_) dev_.release(s.start, s.bytes);
    for (auto [p, bytes] : blocks_)
      if (bytes < kSlabMinBlock) dev_.release(const_cast<char*>(p), bytes);  // its own allocation
  }
  Tensor tensor(ops::DType t, ops::Shape s) {
    size_t need = ops::numel(s) * ops::dtypeSize(t);
    if (rowBlock_ > 0 && ops::dtypeSize(t) == 2 && !s.empty() && s.back() > 0) {
      const int64_t rows = ops::numel(s) / s.back();
      if (rows > kUnpaddedRows) need = size_t((rows + rowBlock_ - 1) / rowBlock_ * rowBlock_ * s.back() * 2);
    }
    const size_t bytes = sizeClass(std::max<size_t>(need, 1));
    std::set<void*>& list = free_[bytes];
    void* p;
    if (!list.empty()) {
      p = *list.begin();
      list.erase(list.begin());
    } else {
      p = bytes >= kSlabMinBlock ? carve(bytes) : dev_.allocate(bytes);
      blocks_[static_cast<const char*>(p)] = bytes;
    }
    if (capturing_) captured_[p] = bytes;
    std::shared_ptr<const void> owner(p, [this, bytes](const void* q) { free_[bytes].insert(const_cast<void*>(q)); });
    return Tensor(t, std::move(s), std::move(owner), p);
  }
  // Step graphs (CudaExecutor::Impl::StepGraph): while capturing, the
  // blocks handed out are noted; pinCaptured() then takes them all out of
  // circulation until the handle it returns dies, so that a graph
  // replaying the step's launches owns the memory they touch. A noted
  // block that is free now leaves its free list; one still held must lie
  // under one of `holders` (the graph keeps those tensors). Null, with
  // nothing taken, when another holder keeps one or the blocks come to
  // more than `mostBytes`.
  void capture(bool on) {
    capturing_ = on;
    if (on) captured_.clear();
  }
  std::shared_ptr<const void> pinCaptured(const std::vector<Tensor>& holders, size_t mostBytes) {
    std::vector<std::pair<void*, size_t>> taken;
    size_t total = 0;
    for (auto [p, bytes] : captured_) total += bytes;
    if (total > mostBytes) return nullptr;
    for (auto [p, bytes] : captured_) {
      if (free_[bytes].erase(p)) {
        taken.push_back({p, bytes});
        continue;
      }
      const char* b = static_cast<const char*>(p);
      if (std::none_of(holders.begin(), holders.end(), [&](const Tensor& t) {
            const char* q = static_cast<const char*>(t.raw());
            return q >= b && q < b + bytes;
          })) {
        for (auto [q, n] : taken) free_[n].insert(q);
        return nullptr;
      }
    }
    captured_.clear();
    return std::shared_ptr<const void>(new char, [this, taken](const void* h) {
      for (auto [q, n] : taken) free_[n].insert(q);
      delete static_cast<const char*>(h);
    });
  }
  // The bytes from `p` to the end of the pool block holding it; 0 when no
  // block holds it.
  size_t bytesFrom(const void* p) const {
    const char* q = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(q);
    if (it == blocks_.begin()) return 0;
    --it;
    return q < it->first + it->second ? size_t(it->first + it->second - q) : 0;
  }

 private:
  // Four classes per power of two from 256 bytes up: at most 25 % slack,
  // and the sizes of a model's activations repeat from layer to layer.
  static size_t sizeClass(size_t n) {
    if (n <= 256) return 256;
    const int e = 63 - __builtin_clzll(n - 1);  // 2^e < n <= 2^(e + 1)
    const size_t step = size_t(1) << (e - 2);
    return (n + step - 1) / step * step;
  }
  // `bytes` at the end of the first slab with room, rounded up to 256 so
  // that every block starts 256-byte aligned like a cuMemAlloc (TMA needs
  // 16, coalescing 128).
  void* carve(size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    for (Slab& s : slabs_)
      if (s.bytes - s.used >= bytes) {
        void* p = static_cast<char*>(s.start) + s.used;
        s.used += bytes;
        return p;
      }
    const size_t n = std::max(bytes, kSlabBytes);
    slabs_.push_back({dev_.allocate(n), n, bytes});
    return slabs_.back().start;
  }
  struct Slab {
    void* start;
    size_t bytes, used;
  };
  CudaDevice& dev_;
  const int64_t rowBlock_;
  std::vector<Slab> slabs_;
  std::map<size_t, std::set<void*>> free_;
  std::map<const char*, size_t> blocks_;  // every block: start -> bytes (carved from a slab from kSlabMinBlock up)
  bool capturing_ = false;
  std::map<void*, size_t> captured_;  // each block once, however often the step took it
};

// The most pool memory a step graph keeps for itself. Llama-3-8B shape
// (H100, 2026-11-25): decode steps 0.34 / 2.6 / 41 / 50 MiB at batch 1 /
// 8 / 32 / 128 (from 17 rows activations hold whole 128-row blocks), a
// 128-token prefill 15 MiB; a long prompt's prefill would keep hundreds
// of MiB for a graph that saves little beside its kernels (2048 tokens:
// 45.3-45.6 ms either way).
constexpr size_t kStepGraphMostBytes = size_t(64) << 20;

// The largest row block of `k`'s TMA GEMMs (0: none).
int64_t tmaRowBlock(const CudaKernelSet& k) {
  int64_t rows = 0;
  for (const CudaGemmKernel& g : k.gemms())
    if (g.tma) rows = std::max(rows, g.blockM);
  return rows;
}

// `bytes` of device memory, released when the last tensor viewing it dies.
std::shared_ptr<const void> deviceBlock(CudaDevice& dev, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  void* p = dev.allocate(bytes);
  return std::shared_ptr<const void>(p, [&dev, bytes](const void* q) { dev.release(const_cast<void*>(q), bytes); });
}

// A device copy of a host tensor: in `block` at byte `offset`, or in its own
// allocation without a block.
Tensor deviceCopy(CudaDevice& dev, const Tensor& host, std::shared_ptr<const void> block = nullptr, size_t offset = 0) {
  if (!block) block = deviceBlock(dev, host.nbytes());
  void* p = static_cast<uint8_t*>(const_cast<void*>(block.get())) + offset;
  if (host.nbytes()) dev.upload(p, host.raw(), host.nbytes());
  return Tensor(host.dtype(), host.shape(), std::move(block), p);
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A weight of `w`'s shape filled on the host (CudaExecutorOptions::
// randomWeights), chunk by chunk so the host never holds the whole model:
// vectors (norm weights) 1, matrices uniform in +-0.02 sqrt(3). Element i
// depends only on (seed, name, i), not on the thread count.
// Placed like deviceCopy.
Tensor randomWeight(CudaDevice& dev, const ops::WeightRef& w, ops::DType dt, uint64_t seed,
                    std::shared_ptr<const void> block = nullptr, size_t offset = 0) {
  const int64_t n = ops::numel(w.shape);
  if (!block) block = deviceBlock(dev, n * 2);
  void* p = static_cast<uint8_t*>(const_cast<void*>(block.get())) + offset;
  const uint64_t key = splitmix(seed ^ std::hash<std::string>{}(w.name));
  const bool ones = w.shape.size() <= 1;
  const float half = 0.02f * std::sqrt(3.f);
  auto round = dt == ops::DType::BF16 ? ops::floatToBf16 : ops::floatToHalf;
  const int64_t chunk = int64_t(1) << 24;
  std::vector<uint16_t> buf(std::min(n, chunk));
  for (int64_t off = 0; off < n; off += chunk) {
    const int64_t len = std::min(chunk, n - off);
    parallelRanges(len, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        float v = ones ? 1.f : ((splitmix(key + uint64_t(off + i)) >> 40) * (1.0f / 16777216.0f) * 2 - 1) * half;
        buf[i] = round(v);
      }
    });
    dev.upload(static_cast<uint8_t*>(p) + off * 2, buf.data(), len * 2);
  }
  return Tensor(dt, w.shape, std::move(block), p);
}

// Sibling GEMM weights ([N, K] q / k / v of one input, region.gemm with
// several weights) placed back to back in one allocation: weight name ->
// (group, byte offset), and each group's bytes. Each weight starts on a
// 256-byte boundary, as its own allocation would (the kernels' 16-byte
// copies need it); where that leaves a gap the group is not one matrix and
// Impl::gemm runs the GEMMs apart. At one row, one GEMM over the joined
// [sum N, K] matrix computes them all (see Impl::gemm).
struct JoinedWeights {
  std::map<std::string, std::pair<size_t, size_t>> at;
  std::vector<size_t> groupBytes;
};

JoinedWeights joinSiblingWeights(const ops::GraphDef& g, const std::function<ops::DType(ops::DType)>& storedAs,
                                 ops::DType dt) {
  std::map<std::string, const ops::WeightRef*> weights;
  for (const auto& w : g.weights) weights[w.name] = &w;
  JoinedWeights j;
  for (const auto& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    if (op.outputs() < 2 || op.swiglu || op.bias || op.residual || !op.weightsNK) continue;
    std::vector<const ops::WeightRef*> ws;
    for (int64_t wi = 0; wi < op.outputs(); ++wi) {
      auto it = weights.find(n.inputs[op.weight(wi)]);
      if (it == weights.end() || it->second->shape.size() != 2 || storedAs(it->second->dtype) != dt ||
          j.at.count(it->first) || std::find(ws.begin(), ws.end(), it->second) != ws.end())
        break;
      ws.push_back(it->second);
    }
    if ((int64_t)ws.size() != op.outputs()) continue;
    size_t off = 0;
    for (const auto* w : ws) {
      off = (off + 255) / 256 * 256;
      j.at[w->name] = {j.groupBytes.size(), off};
      off += ops::numel(w->shape) * ops::dtypeSize(dt);
    }
    j.groupBytes.push_back(off);
  }
  return j;
}

// A device tensor's address for a kernel to write (pool and cache tensors
// are writable device memory).
void* mut(const Tensor& t) { return const_cast<void*>(t.raw()); }

// Shape of x with its last dim replaced by n.
ops::Shape withLast(ops::Shape s, int64_t n) {
  s.back() = n;
  return s;
}

void checkIndices(const Tensor& ids, int64_t limit, const char* what) {
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (p[i] < 0 || p[i] >= limit) fail("{} {} at #{} is outside [0, {})", what, p[i], i, limit);
}

// The largest of T token positions (RoPE), each checked.
int64_t maxPosition(const Tensor& pos, int64_t T) {
  if (pos.numel() != T) fail("{} positions for {} tokens", pos.numel(), T);
  int64_t last = 0;
  for (int64_t i = 0; i < T; ++i) {
    if (pos.data<int64_t>()[i] < 0) fail("negative position {} at token {}", pos.data<int64_t>()[i], i);
    last = std::max(last, pos.data<int64_t>()[i]);
  }
  return last;
}

// Paged attention's step inputs for T new tokens over a cache of `blocks`
// pages of P, checked: (most new tokens of a sequence, longest context).
std::pair<int64_t, int64_t> attentionSteps(const Tensor& tables, const Tensor& starts, const Tensor& lens, int64_t T,
                                           int64_t P, int64_t blocks) {
  const int64_t N = lens.numel(), maxBlocks = tables.rank() == 2 ? tables.dim(1) : 0;
  if (starts.numel() != N + 1 || tables.rank() != 2 || tables.dim(0) != N)
    fail("seq_starts ({}) / block_tables {} do not match {} sequences", starts.numel(), ops::shapeStr(tables.shape()), N);
  const int64_t *st = starts.data<int64_t>(), *len = lens.data<int64_t>(), *tab = tables.data<int64_t>();
  if (st[0] != 0 || st[N] != T) fail("seq_starts run from {} to {}, q has {} tokens", st[0], st[N], T);
  int64_t maxNew = 0, maxContext = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t newTokens = st[i + 1] - st[i];
    if (newTokens < 1 || len[i] < newTokens || len[i] > maxBlocks * P)
      fail("sequence {}: context length {} for {} new tokens and {} table entries of {}", i, len[i], newTokens,
           maxBlocks, P);
    for (int64_t b = 0; b < (len[i] + P - 1) / P; ++b)
      if (tab[i * maxBlocks + b] < 0 || tab[i * maxBlocks + b] >= blocks)
        fail("sequence {}: block table entry {} = {} is outside [0, {})", i, b, tab[i * maxBlocks + b], blocks);
    maxNew = std::max(maxNew, newTokens), maxContext = std::max(maxContext, len[i]);
  }
  return {maxNew, maxContext};
}

template <typename K, typename Pred>
const K& findKernel(const std::vector<K>& ks, Pred pred, const std::string& what) {
  for (const K& k : ks)
    if (pred(k)) return k;
  fail("the kernel set has no {}", what);
}

template <typename Val>
std::string profileLabel(const ops::NodeDef& n, const std::vector<const Val*>& in) {
  std::string op = n.op.substr(n.op.rfind('.') + 1);
  if (n.op == "region.gemm") {
    const auto g = ops::GemmRegionOperands::of(n, n.inputs.size());
    return op + (g.rows ? " lm_head" : g.swiglu ? " swiglu" : g.residual ? " residual" : g.weights > 1 ? " qkv" : "");
  }
  if (n.op == "region.paged_attention" && in.size() > 3 && in[3] && in[3]->host.defined()) {
    const Tensor& st = in[3]->host;
    bool decode = true;
    for (int64_t i = 0; i + 1 < st.numel(); ++i) decode &= st.data<int64_t>()[i + 1] - st.data<int64_t>()[i] == 1;
    return op + (decode ? " decode" : " prefill");
  }
  return op;
}

}  // namespace

struct CudaExecutor::Impl {
  // A value during run(): on the device, and on the host too for the
  // integer step inputs (the launches check indices and pick kernels there).
  struct Val {
    Tensor dev, host;
    const std::string* input = nullptr;  // the graph input it is (the integer step inputs)
  };
  struct RopeTable {
    Tensor cos, sin;
    int64_t rows = 0;
  };

  ops::GraphDef g;
  CudaDevice& dev;
  const CudaKernelSet& k;
  ops::DType dt;
  std::string dtName;
  std::map<std::string, Tensor> params;  // weights and constants on the device
  uint64_t weightBytes = 0;
  std::vector<std::vector<std::string>> freeAfter;
  mutable DevicePool pool;
  mutable std::map<std::pair<int64_t, float>, RopeTable> rope;
  mutable std::vector<uint16_t> staging;  // outputs come down here (no page faults after the first step)
  mutable bool profiling = false;
  bool graphs = true;
  // CudaExecutorOptions::dumpDir / dumpMatch; dumpSteps numbers the steps.
  std::string dumpDir;
  std::optional<std::regex> dumpMatch;
  mutable int64_t dumpSteps = 0;
  void dumpValues(const std::string& folder, const ops::NodeDef& n, const V& outs, nlohmann::json& index) const;
  // What a launch took from a step's host values, as a check on another
  // step's values: true when that step's launches would be the same (it
  // throws, as the launch would, on bad values: an index out of range).
  using Guard = std::function<bool(const TensorMap&)>;
  // While a step is recorded for a graph: its launches' guards, and the
  // host inputs read that no guard covers yet (hostArg, guard).
  mutable std::vector<Guard>* guards = nullptr;
  mutable std::set<std::string> unguarded, guardKeys;
  // The last recorded step's launches.
  mutable LaunchRecord lastRecord;
  mutable int64_t graphSteps = 0;
  mutable int64_t rowsDownloaded = 0;  // whole logits rows brought down to draw from
  mutable std::map<std::string, ProfileRow> profile;
  // Arrival counters (tile.arrive) of GEMMs that split K across programs:
  // zeroed once (allocations are), left zero by every launch, so kernels
  // on one stream share them (GEMMs running at once take disjoint parts).
  // A larger need takes a new buffer; the old ones stay allocated (a
  // recorded graph may still launch on them).
  mutable std::vector<std::shared_ptr<const void>> counterBlocks;
  mutable int64_t counterBytes = 0;
  void* arrivalCounters(int64_t bytes) const {
    if (bytes > counterBytes) counterBlocks.push_back(deviceBlock(dev, size_t(bytes))), counterBytes = bytes;
    return const_cast<void*>(counterBlocks.back().get());
  }

  // A step replayed as one CUDA graph (CudaExecutorOptions::graphs). Made
  // when two steps in a row recorded the same launches; a later step takes
  // it, without running the nodes, when its inputs have the same names,
  // types and shapes (and the same KV cache tensors) and every guard of
  // the recorded step holds for its host values: then only host values
  // differ, which the graph's kernels read from the staged copy. The graph
  // owns the pool blocks its launches touch (`pinned`), the staged inputs'
  // block and the outputs, so nothing else is placed there meanwhile.
  struct InputSig {
    ops::DType dtype;
    ops::Shape shape;
    const void* device = nullptr;  // KV cache tensors
    bool operator==(const InputSig&) const = default;
    // What signature() would record for `t`, compared in place.
    bool matches(const Tensor& t) const {
      return t.dtype() == dtype && t.shape() == shape && (!device || t.raw() == device);
    }
  };
  // Null for inputs no graph takes (float inputs go up into pool blocks).
  std::optional<std::vector<InputSig>> signature(const TensorMap& inputs) const;
  struct StepGraph {
    CudaGraph graph;
    std::vector<InputSig> sig;
    std::vector<Guard> guards;
    Tensor staged;
    std::map<std::string, Tensor> outs;
    std::shared_ptr<const void> pinned;
    // The integer inputs (graph input index, offset in `staged`), packed
    // into page-locked `host` and sent up without waiting (uploadAsync):
    // a graph step's host work is what the GPU waits for between steps.
    std::vector<std::pair<size_t, size_t>> ints;
    std::shared_ptr<uint8_t> host;
  };
  // Whether a step of `inputs` takes the step graph (the same input
  // types and shapes, the same KV cache tensors, every guard holding),
  // checked without building its signature; `graphInputs` gets each graph
  // input's tensor.
  bool takesGraph(const TensorMap& inputs) const;
  mutable std::vector<const Tensor*> graphInputs;
  // Runs the step graph on a step it takes (after takesGraph).
  void runGraph() const;
  mutable std::optional<StepGraph> stepGraph;
  // A repeated step's record, its graph not made yet: made while the GPU
  // runs the step, before the executor next waits for it (download), as
  // making it takes 1.5-5 ms of host time (388 launches, H100, 2026-11-25).
  struct PendingGraph {
    LaunchRecord record;
    StepGraph parts;  // everything but the graph
  };
  mutable std::optional<PendingGraph> pendingGraph;
  void makePendingGraph() const {
    if (!pendingGraph) return;
    PendingGraph p = std::move(*pendingGraph);
    pendingGraph.reset();
    p.parts.graph = dev.graph(p.record);
    dev.waitForUploads();  // the graph replaced may still be copying from its `host`
    stepGraph = std::move(p.parts);
  }
  // Every download waits for the GPU: the pending graph is made first.
  void download(void* host, const void* src, size_t bytes) const {
    makePendingGraph();
    dev.download(host, src, bytes);
  }
  // Adds a guard over the host inputs `reads` (recording only). `same`
  // names what the guard checks (its kind and every value it captured):
  // a step's layers repeat one launch's checks, which are kept once (a
  // graph step runs its guards before the GPU starts).
  void guard(std::initializer_list<const Val*> reads, const std::string& same, Guard g) const {
    if (!guards) return;
    for (const Val* r : reads) {
      if (!r->input) fail("a guard over a value that is not a graph input");
      unguarded.erase(*r->input);
    }
    if (guardKeys.insert(same).second) guards->push_back(std::move(g));
  }

  Impl(ops::GraphDef graph, CudaDevice& d, const CudaKernelSet& kernels, const CudaExecutorOptions& o)
      : g(std::move(graph)), dev(d), k(kernels), dt(o.dtype), dtName(ops::dtypeName(o.dtype)), pool(d, tmaRowBlock(kernels)) {}
  // A step graph's page-locked inputs are freed with it: its last copy
  // from them must have run (a step that threw was never waited for).
  ~Impl() {
    try {
      dev.waitForUploads();
    } catch (const std::exception&) {
      // The context failed already; nothing waits on it any more.
    }
  }

  const Tensor& devArg(const std::vector<const Val*>& in, size_t i, const char* what) const {
    if (in.size() <= i || !in[i]) fail("missing {} (input #{})", what, i);
    const Tensor& t = in[i]->dev;
    if (t.dtype() != dt) fail("{} must be {}, got {}", what, dtName, ops::dtypeName(t.dtype()));
    return t;
  }
  // An integer step input: its host copy (indices are checked there).
  const Tensor& hostArg(const std::vector<const Val*>& in, size_t i, const char* what) const {
    if (in.size() <= i || !in[i]) fail("missing {} (input #{})", what, i);
    if (!in[i]->host.defined() || in[i]->host.dtype() != ops::DType::I64)
      fail("{} must be an i64 step input of the graph", what);
    if (guards) unguarded.insert(*in[i]->input);
    return in[i]->host;
  }
  const CudaGatherRowsKernel& gatherKernel() const {
    return findKernel(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == dtName; },
                      dtName + " row gather");
  }
  Tensor gatherRows(const Tensor& table, const Val& ids) const {
    const int64_t rows = table.dim(0), width = table.numel() / rows, T = ids.host.numel();
    checkIndices(ids.host, rows, "row index");
    guard({&ids}, fmt::format("rows {} {}", *ids.input, rows), [rows, name = ids.input](const TensorMap& step) {
      checkIndices(step.at(*name), rows, "row index");
      return true;
    });
    Tensor out = pool.tensor(dt, {T, width});
    if (T > 0) k.launch(gatherKernel(), table.raw(), mut(out), ids.dev.raw(), T, rows, width);
    return out;
  }

  V gemm(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  V rmsNorm(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  V ropeNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  // RoPE over rows of `width` of x (heads of the node's head dim) at the
  // positions `pos` (host and device copies), into a fresh tensor of
  // `shape` (rows x width elements).
  Tensor ropeRows(const ops::NodeDef& n, const Tensor& x, const Val& pos, int64_t width, const ops::Shape& shape) const;
  // RoPE kernel `kern` over T tokens of x (a joined kernel: q then k, k
  // right after q) into a fresh tensor of `shape`, checking the positions
  // and guarding them for step graphs.
  Tensor ropeLaunch(const ops::NodeDef& n, const CudaRopeKernel& kern, const Tensor& x, const Val& pos, int64_t T,
                    const ops::Shape& shape) const;
  // The cos / sin tables of (head dim, theta) with at least `rows`
  // positions: grown geometrically, so a long generation rebuilds them
  // O(log n) times (the CPU backend's rule).
  const RopeTable& ropeTable(int64_t D, float theta, int64_t rows) const;
  // The q and k RoPE nodes of a joined q | k | v GEMM (its outputs 0 and
  // 1, the same positions, head dim and theta): q's node index -> k's.
  std::map<size_t, size_t> ropePairs;
  // Both RoPEs of a pair in one launch when q and k sit side by side (one
  // row, the joined GEMM's output views) and the set has the kernel for
  // their heads together; else nullopt (each node launches its own).
  std::optional<std::pair<Tensor, Tensor>> ropeJoined(const ops::NodeDef& q, const std::vector<const Val*>& in,
                                                      const Val& kx) const;
  V kvWrite(const std::vector<const Val*>& in) const;
  V pagedAttention(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  // region.elementwise nodes' kernels and launch contracts (from their
  // kernel attribute, read at prepare).
  std::map<const ops::NodeDef*, std::pair<const CudaElementwiseKernel*, ops::ElementwiseLaunch>> elementwises;
  V elementwise(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  V runNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  std::map<std::string, Tensor> execute(const TensorMap& inputs, Tensor& staged) const;
  // Each row's greedy token of logits d [rows, vocab] on the device (the
  // storage type or f32).
  std::vector<int64_t> greedyRows(const Tensor& d, int64_t rows, int64_t vocab) const;
  // A draw on row `row` of a device logits tensor; `penalized` when that
  // row is an f32 copy that already carries the draw's repetition penalty.
  struct Pick {
    int64_t row = 0;
    const RowDraw* draw = nullptr;
    bool penalized = false;
  };
  // Row `row` of logits d [rows, vocab] on the host, widened to f32.
  std::vector<float> hostRow(const Tensor& d, int64_t row, int64_t vocab) const;
  // The picks' tokens from logits d [rows, vocab] (runSampled's contract).
  std::vector<int64_t> pickTokens(const Tensor& d, int64_t rows, int64_t vocab, std::span<const Pick> picks) const;
  // Whether the set has the kernels a repetition penalty on the device
  // takes (sets compiled before 2026-11-23 do not: such rows come down).
  bool penaltyOnDevice() const;
  // f32 copies [draws, vocab] of the draws' rows of d, each with its
  // draw's repetition penalty applied to the ids its history holds.
  Tensor penalizedRows(const Tensor& d, int64_t vocab, std::span<const RowDraw* const> draws) const;
  void prepare(const ops::NodeDef& n);
};

// The most rows at which several GEMM outputs (q / k / v) share one block
// (Impl::gemm).
constexpr int64_t kJointOutputRows = 64;

// region.gemm (ops/gemm_region.h has the operands and attributes;
// runtime/region_kernels.cpp is the CPU twin).
V CudaExecutor::Impl::gemm(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const auto op = ops::GemmRegionOperands::of(n, in.size());
  Tensor x = devArg(in, 0, "x");
  const int64_t K = x.dim(x.rank() - 1);
  ops::Shape outBase = x.shape();
  if (op.rows) {
    const Tensor& rows = hostArg(in, op.rowsAt(), "rows");
    outBase = ops::GemmRegionOperands::gatheredShape(x.shape(), rows.numel());
    x = gatherRows(x.reshaped({x.numel() / K, K}), *in[op.rowsAt()]);
  }
  const int64_t M = x.numel() / K;
  auto widthOf = [&](int64_t wi) { return op.width(devArg(in, op.weight(wi), "weight").shape(), K, wi); };
  const Tensor* res = op.residual ? &devArg(in, op.residualAt(), "residual") : nullptr;
  V outs;
  if (M == 0) {
    for (int64_t wi = 0; wi < op.outputs(); ++wi) outs.push_back(pool.tensor(dt, withLast(outBase, widthOf(wi))));
    return outs;
  }
  const GemmEpilogue epilogue{op.bias, op.residual, op.swiglu};
  // The rows A's pool block holds (whole TMA row blocks: DevicePool).
  const int64_t held = int64_t(pool.bytesFrom(x.raw()) / (K * ops::dtypeSize(dt))), aRows = held >= M ? held : 0;
  // Sibling weights placed back to back (joinSiblingWeights), at one row:
  // one GEMM over the joined [sum N, K] matrix writes q | k | v as one row,
  // and the outputs are views of it (with more rows they would interleave).
  if (M == 1 && op.outputs() > 1 && !op.swiglu && !op.bias && !op.residual && op.weightsNK) {
    const auto* base = static_cast<const uint8_t*>(in[op.weight(0)]->dev.raw());
    int64_t total = 0;
    bool adjacent = true;
    for (int64_t wi = 0; wi < op.outputs(); ++wi) {
      adjacent &= in[op.weight(wi)]->dev.raw() == base + total * K * ops::dtypeSize(dt);
      total += widthOf(wi);
    }
    if (adjacent) {
      Tensor c = pool.tensor(dt, withLast(outBase, total));
      GemmBuffers b;
      b.a = x.raw();
      b.aRows = aRows;
      b.b = base;
      b.c = mut(c);
      k.launch(k.gemmFor(dtName, op.weightsNK, M, epilogue, total, K), b, M, total, K);
      for (int64_t wi = 0, at = 0; wi < op.outputs(); at += widthOf(wi++))
        outs.push_back(c.view(at, withLast(outBase, widthOf(wi))));
      return outs;
    }
  }
  // Sibling weights (q / k / v) are independent GEMMs of one input: they
  // run side by side (at decode, k and v alone fill a quarter of the SMs).
  // Kernels that split K across programs get a workspace each and their
  // own part of the arrival counters.
  std::vector<std::function<void()>> launches;
  std::vector<Tensor> workspaces;
  struct Split {
    const CudaGemmKernel* kern;
    int64_t splits, counterAt;
  };
  std::vector<Split> splits;
  int64_t counterTotal = 0, programs = 0;
  for (int64_t wi = 0; wi < op.outputs(); ++wi) {
    const CudaGemmKernel* kern = &k.gemmFor(dtName, op.weightsNK, M, epilogue, widthOf(wi), K);
    splits.push_back({kern, 1, 0});
    programs += gemmProgramCount(*kern, M, widthOf(wi));
  }
  for (int64_t wi = 0; wi < op.outputs(); ++wi) {
    Split& sp = splits[wi];
    const int64_t own = gemmProgramCount(*sp.kern, M, widthOf(wi));
    sp.splits = k.gemmKSplits(*sp.kern, M, widthOf(wi), K, programs - own);
    sp.counterAt = counterTotal;
    if (sp.splits > 1) counterTotal += CudaKernelSet::gemmCounterBytes(*sp.kern, M, widthOf(wi));
  }
  char* counters = counterTotal ? static_cast<char*>(arrivalCounters(counterTotal)) : nullptr;
  // Up to kJointOutputRows rows (decode steps), several outputs (q / k / v)
  // fill one block, each output's rows after the last one's, so that one
  // RoPE launch rotates q and k together (ropeJoined). C's rows past M are
  // never stored (masked, or clipped by its tensor map). At a 128-token
  // prefill one block measured 0.13-0.18 ms slower (not understood: its
  // 1.5 MB come from a slab, the outputs' own blocks partly not), which
  // the joined RoPE did not win back (H100, 2026-11-25, docs/cuda.md
  // "q and k in one launch at every row count").
  Tensor joint;
  int64_t jointAt = 0;
  if (op.outputs() > 1 && !op.swiglu && M <= kJointOutputRows) {
    int64_t total = 0;
    for (int64_t wi = 0; wi < op.outputs(); ++wi) total += widthOf(wi);
    joint = pool.tensor(dt, {M, total});
  }
  for (int64_t wi = 0; wi < op.outputs(); ++wi) {
    const int64_t N = widthOf(wi);
    if (op.swiglu && widthOf(1) != N) fail("gate and up weights differ in width");
    Tensor c = joint.defined() ? joint.view(jointAt, withLast(outBase, N)) : pool.tensor(dt, withLast(outBase, N));
    jointAt += M * N;
    GemmBuffers b;
    b.a = x.raw();
    b.aRows = aRows;
    b.b = in[op.weight(wi)]->dev.raw();
    if (op.swiglu) b.bUp = in[op.weight(1)]->dev.raw();
    b.c = mut(c);
    if (op.bias) {
      for (int64_t j = wi; j < (op.swiglu ? 2 : wi + 1); ++j)
        if (devArg(in, op.biasOf(j), "bias").numel() != N) fail("bias #{} has the wrong size for {} outputs", j, N);
      b.bias = in[op.biasOf(wi)]->dev.raw();
      if (op.swiglu) b.biasUp = in[op.biasOf(1)]->dev.raw();
    }
    if (res) {
      if (res->numel() != M * N) fail("residual {} does not match the output [{}, {}]", ops::shapeStr(res->shape()), M, N);
      b.residual = res->raw();
    }
    const auto [kern, s, counterAt] = splits[wi];
    if (s > 1) {
      workspaces.push_back(pool.tensor(ops::DType::F32, {CudaKernelSet::gemmWorkspaceBytes(*kern, M, N, s) / 4}));
      b.workspace = mut(workspaces.back());
      b.counters = counters + counterAt;
    }
    launches.push_back([this, kern, b, M, N, K, s] { k.launch(*kern, b, M, N, K, s); });
    outs.push_back(std::move(c));
  }
  dev.concurrently(launches);
  return outs;
}

V CudaExecutor::Impl::rmsNorm(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& x = devArg(in, 0, "x");
  const Tensor& w = devArg(in, 1, "weight");
  const int64_t width = x.dim(x.rank() - 1), rows = x.numel() / width;
  if (w.numel() != width) fail("weight has {} entries, x's rows {}", w.numel(), width);
  Tensor y = pool.tensor(dt, x.shape());
  const auto& kern = findKernel(k.rmsNorms(), [&](const auto& r) { return r.dtype == dtName; }, dtName + " RMSNorm");
  if (rows > 0) k.launch(kern, x.raw(), w.raw(), mut(y), rows, width, n.attrs.at("eps").get<float>());
  return {y};
}

V CudaExecutor::Impl::ropeNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& x = devArg(in, 0, "x");
  hostArg(in, 1, "positions");
  return {ropeRows(n, x, *in[1], x.dim(x.rank() - 1), x.shape())};
}

Tensor CudaExecutor::Impl::ropeRows(const ops::NodeDef& n, const Tensor& x, const Val& posVal, int64_t width,
                                    const ops::Shape& shape) const {
  const int64_t D = n.attrs.at("head_dim").get<int64_t>(), T = ops::numel(shape) / shape.back();
  if (D <= 0 || width % D) fail("rows of {} are not whole heads of {}", width, D);
  const int64_t heads = width / D;
  const auto& kern = findKernel(
      k.ropes(), [&](const auto& r) { return r.dtype == dtName && r.heads == heads && r.kvHeads == 0 && r.headDim == D; },
      fmt::format("{} RoPE kernel for {} heads of dim {}", dtName, heads, D));
  return ropeLaunch(n, kern, x, posVal, T, shape);
}

Tensor CudaExecutor::Impl::ropeLaunch(const ops::NodeDef& n, const CudaRopeKernel& kern, const Tensor& x,
                                      const Val& posVal, int64_t T, const ops::Shape& shape) const {
  const int64_t D = kern.headDim;
  const float theta = n.attrs.at("theta").get<float>();
  const int64_t maxPos = maxPosition(posVal.host, T);
  const RopeTable& tab = ropeTable(D, theta, maxPos + 1);
  guard({&posVal}, fmt::format("rope {} {} {} {} {}", *posVal.input, T, D, theta, tab.cos.raw()),
        [this, T, key = std::pair{D, theta}, cos = tab.cos.raw(), name = posVal.input](const auto& step) {
    const int64_t last = maxPosition(step.at(*name), T);
    const RopeTable& now = rope.at(key);
    return now.cos.raw() == cos && last < now.rows;
  });
  Tensor y = pool.tensor(dt, shape);
  if (T > 0) k.launch(kern, x.raw(), mut(y), tab.cos.raw(), tab.sin.raw(), posVal.dev.raw(), T, tab.rows);
  return y;
}

const CudaExecutor::Impl::RopeTable& CudaExecutor::Impl::ropeTable(int64_t D, float theta, int64_t rows) const {
  RopeTable& tab = rope[{D, theta}];
  if (tab.rows < rows) {
    rows = std::max<int64_t>({rows, 2 * tab.rows, 256});
    ops::RopeTables h = ops::ropeTables(rows, D, theta);
    tab = {deviceCopy(dev, h.cos), deviceCopy(dev, h.sin), rows};
  }
  return tab;
}

// The q / k / v GEMM writes k right after q in one block (at one row, q |
// k | v is one row), so one launch rotates both: a joined kernel (q heads,
// then k heads from a head row kAt), or at one row the kernel of heads +
// KV heads on the row q | k (kernel sets from before the joined kernels).
// A step saves one launch a layer.
std::optional<std::pair<Tensor, Tensor>> CudaExecutor::Impl::ropeJoined(const ops::NodeDef& q,
                                                                        const std::vector<const Val*>& in,
                                                                        const Val& kx) const {
  const Tensor& x = devArg(in, 0, "x");
  const Tensor& kt = kx.dev;
  const int64_t D = q.attrs.at("head_dim").get<int64_t>(), qw = x.dim(x.rank() - 1);
  if (D <= 0 || qw <= 0 || qw % D || x.numel() == 0 || kt.dtype() != dt ||
      kt.raw() != static_cast<const uint8_t*>(x.raw()) + x.nbytes())
    return std::nullopt;
  const int64_t T = x.numel() / qw, kw = kt.numel() / T;
  if (kw * T != kt.numel() || kw <= 0 || kw % D) return std::nullopt;
  const int64_t heads = qw / D, kvHeads = kw / D;
  auto joined = std::find_if(k.ropes().begin(), k.ropes().end(), [&](const auto& r) {
    return r.dtype == dtName && r.heads == heads && r.kvHeads == kvHeads && r.headDim == D;
  });
  auto row = std::find_if(k.ropes().begin(), k.ropes().end(), [&](const auto& r) {
    return r.dtype == dtName && r.heads == heads + kvHeads && r.kvHeads == 0 && r.headDim == D;
  });
  const CudaRopeKernel* kern = joined != k.ropes().end() ? &*joined : T == 1 && row != k.ropes().end() ? &*row : nullptr;
  if (!kern) return std::nullopt;
  hostArg(in, 1, "positions");
  Tensor y = ropeLaunch(q, *kern, x, *in[1], T, {T, qw + kw});
  return std::pair{y.view(0, x.shape()), y.view(x.numel(), kt.shape())};
}

// region.kv_write operands: cache, k, v, slot_mapping; returns the cache.
V CudaExecutor::Impl::kvWrite(const std::vector<const Val*>& in) const {
  const Tensor& cache = devArg(in, 0, "cache");
  const Tensor& kk = devArg(in, 1, "k");
  const Tensor& v = devArg(in, 2, "v");
  const Tensor& slots = hostArg(in, 3, "slot_mapping");
  if (cache.rank() != 5) fail("cache {} is not [blocks, 2, KV heads, block size, head dim]", ops::shapeStr(cache.shape()));
  const int64_t Hk = cache.dim(2), P = cache.dim(3), D = cache.dim(4), T = slots.numel();
  if (kk.numel() != T * Hk * D || v.numel() != T * Hk * D)
    fail("k/v {} / {} are not {} tokens of {} x {}", ops::shapeStr(kk.shape()), ops::shapeStr(v.shape()), T, Hk, D);
  checkIndices(slots, cache.dim(0) * P, "cache slot");
  guard({in[3]}, fmt::format("slots {} {}", *in[3]->input, cache.dim(0) * P),
        [limit = cache.dim(0) * P, name = in[3]->input](const TensorMap& step) {
    checkIndices(step.at(*name), limit, "cache slot");
    return true;
  });
  const auto& kern = findKernel(
      k.kvWrites(),
      [&](const auto& w) { return w.dtype == dtName && w.kvHeads == Hk && w.headDim == D && w.pageSize == P; },
      fmt::format("{} KV write for {} KV heads of dim {} in blocks of {}", dtName, Hk, D, P));
  if (T > 0) k.launch(kern, mut(cache), kk.raw(), v.raw(), in[3]->dev.raw(), T, cache.dim(0));
  return {cache};
}

// region.paged_attention operands: q, cache, block_tables, seq_starts,
// context_lens. One new token per sequence: the paged decode kernel with
// the split count CudaKernelSet::pagedDecodeSplits picks; otherwise the
// paged prefill kernel (prefill, chunked prefill and decode rows mixed).
V CudaExecutor::Impl::pagedAttention(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& q = devArg(in, 0, "q");
  const Tensor& cache = devArg(in, 1, "cache");
  const Tensor& tables = hostArg(in, 2, "block_tables");
  const Tensor& starts = hostArg(in, 3, "seq_starts");
  const Tensor& lens = hostArg(in, 4, "context_lens");
  const int64_t heads = n.attrs.at("heads").get<int64_t>(), kvHeads = n.attrs.at("kv_heads").get<int64_t>(),
                D = n.attrs.at("head_dim").get<int64_t>();
  const float scale = n.attrs.at("scale").get<float>();
  if (cache.rank() != 5 || cache.dim(2) != kvHeads || cache.dim(4) != D)
    fail("cache {} is not [blocks, 2, {}, block size, {}]", ops::shapeStr(cache.shape()), kvHeads, D);
  const int64_t N = lens.numel(), P = cache.dim(3), maxBlocks = tables.rank() == 2 ? tables.dim(1) : 0;
  const int64_t T = q.numel() / (heads * D), blocks = cache.dim(0);
  const auto [maxNew, maxContext] = attentionSteps(tables, starts, lens, T, P, blocks);
  // The step graph's guards take the same inputs of a later step.
  const std::array names{in[2]->input, in[3]->input, in[4]->input};
  Tensor o = pool.tensor(dt, q.shape());
  if (N == 0) return {o};
  auto matches = [&](const auto& a) {
    return a.dtype == dtName && a.heads == heads && a.kvHeads == kvHeads && a.headDim == D && a.pageSize == P &&
           a.scale == scale;
  };
  const std::string shape = fmt::format("{} heads over {} KV heads of dim {}, blocks of {}, scale {}", heads, kvHeads,
                                        D, P, scale);
  if (maxNew == 1) {
    const auto& kern = findKernel(k.pagedDecodes(), matches, fmt::format("{} paged decode kernel for {}", dtName, shape));
    const int64_t splits = k.pagedDecodeSplits(kern, N, maxContext);
    guard({in[2], in[3], in[4]},
          fmt::format("decode {} {} {} {} {} {} {} {} {}", *names[0], *names[1], *names[2], kern.name, N, T, P, blocks,
                      splits),
          [this, &kern, N, T, P, blocks, splits, names](const TensorMap& step) {
      const auto [newTokens, context] =
          attentionSteps(step.at(*names[0]), step.at(*names[1]), step.at(*names[2]), T, P, blocks);
      return newTokens == 1 && k.pagedDecodeSplits(kern, N, context) == splits;
    });
    Tensor scratch = pool.tensor(ops::DType::F32, {CudaKernelSet::pagedDecodeScratchBytes(kern, N, splits) / 4 + 1});
    PagedDecodeBuffers b{q.raw(), cache.raw(), in[2]->dev.raw(), in[4]->dev.raw(), mut(o), mut(scratch)};
    k.launch(kern, b, N, maxBlocks, cache.dim(0), splits);
  } else {
    const auto& kern = k.pagedPrefillFor(dtName, heads, kvHeads, D, P, scale, N, maxNew);
    guard({in[2], in[3], in[4]},
          fmt::format("prefill {} {} {} {} {} {} {}", *names[0], *names[1], *names[2], T, P, blocks, maxNew),
          [T, P, blocks, maxNew, names](const TensorMap& step) {
      return attentionSteps(step.at(*names[0]), step.at(*names[1]), step.at(*names[2]), T, P, blocks).first == maxNew;
    });
    PagedPrefillBuffers b{q.raw(), cache.raw(), in[2]->dev.raw(), in[3]->dev.raw(), in[4]->dev.raw(), mut(o)};
    k.launch(kern, b, N, T, maxNew, maxBlocks, cache.dim(0));
  }
  return {o};
}

// region.elementwise: the operands in their planned row forms
// (ops/row_forms.h; the CPU twin is runtime/region_kernels.cpp).
V CudaExecutor::Impl::elementwise(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const auto& [kern, launch] = elementwises.at(&n);
  std::vector<ops::Shape> shapes(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) shapes[i] = in[i]->dev.shape();
  std::vector<std::pair<const void*, int64_t>> buffers;
  for (auto [i, form] : launch.operands) {
    const Tensor& t = devArg(in, i, "operand");
    buffers.push_back({t.raw(), t.numel()});
  }
  const auto s = launch.shapes(shapes);
  V outs;
  for (const ops::Shape& o : s.outputs) {
    outs.push_back(pool.tensor(dt, o));
    buffers.push_back({outs.back().raw(), outs.back().numel()});
  }
  if (s.rows > 0) k.launch(*kern, buffers, s.rows);
  return outs;
}

V CudaExecutor::Impl::runNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  if (n.op == "region.gemm") return gemm(n, in);
  if (n.op == "region.elementwise") return elementwise(n, in);
  if (n.op == "region.rmsnorm") return rmsNorm(n, in);
  if (n.op == "region.rope") return ropeNode(n, in);
  if (n.op == "region.kv_write") return kvWrite(in);
  if (n.op == "region.paged_attention") return pagedAttention(n, in);
  if (n.op == "region.embedding") {
    const Tensor& table = devArg(in, 0, "embedding table");
    hostArg(in, 1, "token ids");
    ops::Shape s = in[1]->host.shape();
    s.push_back(table.dim(table.rank() - 1));
    return {gatherRows(table, *in[1]).reshaped(s)};
  }
  fail("no GPU launcher for op '{}'", n.op);
}

// What can be checked before the first step: the op has a GPU launcher and
// the kernel set has the kernels its fixed shapes need (the rest, like the
// KV block size, is checked at the launch).
void CudaExecutor::Impl::prepare(const ops::NodeDef& n) {
  const nlohmann::json& a = n.attrs;
  if (n.op == "region.elementwise") {
    if (!a.contains("kernel")) fail("the node has no kernel attribute (compile it with `strata compile --target cuda:sm_90`)");
    const CudaElementwiseKernel& e = k.elementwise(a["kernel"].at("name").get<std::string>());
    if (e.dtype != dtName) fail("kernel {} stores {}; this executor computes on {}", e.name, e.dtype, dtName);
    elementwises[&n] = {&e, ops::ElementwiseLaunch::fromJson(a["kernel"])};
  } else if (n.op == "region.gemm") {
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    GemmEpilogue e{op.bias, op.residual, op.swiglu};
    k.gemmFor(dtName, op.weightsNK, 1, e), k.gemmFor(dtName, op.weightsNK, int64_t(1) << 40, e);
    if (op.rows) gatherKernel();
  } else if (n.op == "region.embedding") {
    gatherKernel();
  } else if (n.op == "region.rmsnorm") {
    findKernel(k.rmsNorms(), [&](const auto& r) { return r.dtype == dtName; }, dtName + " RMSNorm");
  } else if (n.op == "region.paged_attention") {
    const int64_t h = a.at("heads").get<int64_t>(), kv = a.at("kv_heads").get<int64_t>(), d = a.at("head_dim").get<int64_t>();
    auto same = [&](const auto& x) { return x.dtype == dtName && x.heads == h && x.kvHeads == kv && x.headDim == d; };
    const std::string shape = fmt::format("{} heads over {} KV heads of dim {}", h, kv, d);
    findKernel(k.pagedDecodes(), same, fmt::format("{} paged decode kernel for {}", dtName, shape));
    findKernel(k.pagedPrefills(), same, fmt::format("{} paged prefill kernel for {}", dtName, shape));
  } else if (n.op != "region.rope" && n.op != "region.kv_write") {
    fail("op '{}' has no GPU launcher (the GPU backend runs embedding, RMSNorm, GEMM, RoPE, KV write, paged "
         "attention and fused elementwise regions)",
         n.op);
  }
}

namespace {

// region.rope nodes on outputs 0 and 1 of one multi-weight GEMM (q and k of
// the joined q / k / v) with the same positions, head dim and theta: q's
// node index -> k's.
std::map<size_t, size_t> pairJoinedRopes(const ops::GraphDef& g) {
  std::map<std::string, std::pair<size_t, size_t>> producer;  // value -> (node, output)
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t j = 0; j < g.nodes[i].outputs.size(); ++j) producer[g.nodes[i].outputs[j]] = {i, j};
  auto sameRope = [](const ops::NodeDef& a, const ops::NodeDef& b) {
    return a.inputs.size() > 1 && b.inputs.size() > 1 && a.inputs[1] == b.inputs[1] &&
           a.attrs.value("head_dim", 0) == b.attrs.value("head_dim", 0) &&
           a.attrs.value("theta", 0.0) == b.attrs.value("theta", 0.0);
  };
  std::map<size_t, size_t> pairs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ops::NodeDef& q = g.nodes[i];
    if (q.op != "region.rope" || q.inputs.empty()) continue;
    auto pq = producer.find(q.inputs[0]);
    if (pq == producer.end() || pq->second.second != 0 || g.nodes[pq->second.first].op != "region.gemm") continue;
    const ops::NodeDef& gemm = g.nodes[pq->second.first];
    if (gemm.outputs.size() < 2) continue;
    for (size_t j = i + 1; j < g.nodes.size(); ++j)
      if (g.nodes[j].op == "region.rope" && !g.nodes[j].inputs.empty() && g.nodes[j].inputs[0] == gemm.outputs[1] &&
          sameRope(q, g.nodes[j]))
        pairs[i] = j;
  }
  return pairs;
}

}  // namespace

CudaExecutor::CudaExecutor(ops::GraphDef graph, CudaDevice& device, const CudaKernelSet& kernels,
                           CudaExecutorOptions o)
    : impl_(std::make_unique<Impl>(std::move(graph), device, kernels, o)) {
  Impl& m = *impl_;
  const ops::GraphDef& g = m.g;
  m.graphs = o.graphs;
  if (!o.dumpDir.empty()) {
    m.dumpDir = o.dumpDir;
    try {
      m.dumpMatch.emplace(o.dumpMatch.empty() ? std::string(".") : o.dumpMatch);
    } catch (const std::regex_error& e) {
      fail("the values to dump: '{}' is not a regular expression ({})", o.dumpMatch, e.what());
    }
  }
  if (o.dtype != ops::DType::BF16 && o.dtype != ops::DType::F16)
    fail("the GPU backend stores bf16 or f16, not {}", ops::dtypeName(o.dtype));
  std::set<std::string> params;
  for (const auto& w : g.weights) params.insert(w.name);
  for (const auto& c : g.constants) params.insert(c.name);
  m.freeAfter = planLifetimes(g, params, [&](const ops::NodeDef& n) { m.prepare(n); });
  m.ropePairs = pairJoinedRopes(g);

  // Weights in the storage type (floating point ones; integer ones as they are).
  auto storedAs = [&](ops::DType t) { return t == ops::DType::F32 || t == ops::DType::F16 || t == ops::DType::BF16 ? o.dtype : t; };
  WeightStore store;
  const JoinedWeights joined = joinSiblingWeights(g, storedAs, o.dtype);
  std::vector<std::shared_ptr<const void>> groups;
  for (size_t bytes : joined.groupBytes) groups.push_back(deviceBlock(device, bytes));
  uint64_t done = 0, total = 0;
  for (const auto& w : g.weights) total += ops::numel(w.shape) * ops::dtypeSize(storedAs(w.dtype));
  for (const auto& w : g.weights) {
    std::shared_ptr<const void> block;
    size_t offset = 0;
    if (auto it = joined.at.find(w.name); it != joined.at.end()) {
      block = groups[it->second.first];
      offset = it->second.second;
    }
    Tensor t;
    if (o.randomWeights && storedAs(w.dtype) == o.dtype)
      t = randomWeight(device, w, o.dtype, *o.randomWeights, block, offset);
    else
      t = deviceCopy(device, castStored(store.stored(w), storedAs(w.dtype)), block, offset);
    done += t.nbytes();
    if (o.verbose && total >= (256u << 20) && (done * 10 / std::max<uint64_t>(total, 1)) != ((done - t.nbytes()) * 10 / std::max<uint64_t>(total, 1)))
      std::fprintf(stderr, "weights on the GPU: %.0f / %.0f MiB\n", done / 1048576.0, total / 1048576.0);
    m.params[w.name] = std::move(t);
  }
  for (const auto& c : g.constants) m.params[c.name] = deviceCopy(device, c.value.cast(storedAs(c.value.dtype())));
  m.weightBytes = done;
  // RoPE tables for the model's context (max_position_embeddings, capped;
  // 4096 positions when the graph does not say), made now: built on the
  // host and copied up synchronously, a table grown by the first long
  // prompt held up its first layer (H100, 2026-11-25: 2.5-3 ms of a first
  // 2048-token prompt; docs/cuda.md "First prompts").
  const int64_t ropeRows = std::clamp<int64_t>(g.meta.value("max_position_embeddings", (int64_t)4096), 256, 32768);
  for (const ops::NodeDef& n : g.nodes) {
    if (n.op != "region.rope" || !n.attrs.is_object() || !n.attrs.contains("theta")) continue;
    const int64_t D = n.attrs.value("head_dim", (int64_t)0);
    if (D > 0 && D % 2 == 0) m.ropeTable(D, n.attrs["theta"].get<float>(), ropeRows);  // else the launch says what is wrong
  }
  // The GEMM weights' tensor maps, made now rather than by the first
  // launch of each TMA kernel: the first prompt that takes a kernel class
  // made its maps over every layer's weights (H100, 2026-11-25: 0.2-1.9
  // ms more than the prompts after it; docs/cuda.md "Weight maps at load").
  for (const ops::NodeDef& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    for (int64_t wi = 0; wi < op.weights; ++wi) {
      auto it = m.params.find(n.inputs[op.weight(wi)]);
      if (it == m.params.end() || it->second.rank() != 2) continue;  // not a weight: mapped on first use
      const Tensor& w = it->second;
      kernels.prepareWeightMaps(m.dtName, op.weightsNK, {op.bias, op.residual, op.swiglu}, w.raw(), w.dim(0), w.dim(1));
    }
  }
}

CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::setProfiling(bool on) const { impl_->profiling = on; }

std::map<std::string, CudaExecutor::ProfileRow> CudaExecutor::takeProfile() const {
  return std::exchange(impl_->profile, {});
}

const ops::GraphDef& CudaExecutor::graph() const { return impl_->g; }
Device& CudaExecutor::cacheDevice() const { return impl_->dev; }
ops::DType CudaExecutor::cacheDType() const { return impl_->dt; }
uint64_t CudaExecutor::weightBytes() const { return impl_->weightBytes; }
int64_t CudaExecutor::graphSteps() const { return impl_->graphSteps; }
int64_t CudaExecutor::rowsDownloaded() const { return impl_->rowsDownloaded; }

// What a step graph requires of the inputs: each one's type and shape,
// and the KV cache tensors themselves.
std::optional<std::vector<CudaExecutor::Impl::InputSig>> CudaExecutor::Impl::signature(const TensorMap& inputs) const {
  std::vector<InputSig> sig;
  for (const auto& v : g.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end()) return std::nullopt;
    const Tensor& t = it->second;
    const bool cache = v.name.rfind("kv_cache.", 0) == 0;
    if (!cache && t.dtype() != ops::DType::I64) return std::nullopt;
    sig.push_back({t.dtype(), t.shape(), cache ? t.raw() : nullptr});
  }
  return sig;
}

namespace {

// The integer step inputs of a graph, packed as they go up in one copy
// (16-byte aligned each, in graph input order): the bytes, and where each
// input starts.
std::vector<uint8_t> packSteps(const std::vector<std::pair<const ops::ValueInfo*, const Tensor*>>& ints,
                               std::vector<size_t>& offsets) {
  size_t bytes = 0;
  for (auto [v, t] : ints) bytes += (t->nbytes() + 15) / 16 * 16;
  std::vector<uint8_t> host(bytes);
  size_t off = 0;
  for (auto [v, t] : ints) {
    std::copy_n(static_cast<const uint8_t*>(t->raw()), t->nbytes(), host.data() + off);
    offsets.push_back(off);
    off += (t->nbytes() + 15) / 16 * 16;
  }
  return host;
}

}  // namespace

bool CudaExecutor::Impl::takesGraph(const TensorMap& inputs) const {
  const StepGraph& sg = *stepGraph;
  graphInputs.resize(g.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    auto it = inputs.find(g.inputs[i].name);
    if (it == inputs.end()) return false;
    if (!sg.sig[i].matches(it->second)) return false;
    graphInputs[i] = &it->second;
  }
  return std::all_of(sg.guards.begin(), sg.guards.end(), [&](const Guard& gd) { return gd(inputs); });
}

void CudaExecutor::Impl::runGraph() const {
  const StepGraph& sg = *stepGraph;
  // The last step's copy from `host` has run (its download waited for it).
  dev.waitForUploads();
  size_t end = 0;
  for (auto [input, offset] : sg.ints) end = std::max(end, offset + graphInputs[input]->nbytes());
  if (end > sg.staged.nbytes()) fail("a graph step's inputs outgrew their staged copy");
  for (auto [input, offset] : sg.ints)
    std::copy_n(static_cast<const uint8_t*>(graphInputs[input]->raw()), graphInputs[input]->nbytes(),
                sg.host.get() + offset);
  if (end) dev.uploadAsync(mut(sg.staged), sg.host.get(), end);
  sg.graph.launch();
  ++graphSteps;
}

// CudaExecutorOptions::dumpDir: node `n`'s outputs that match, into
// `folder`, each noted in the step's `index`.
void CudaExecutor::Impl::dumpValues(const std::string& folder, const ops::NodeDef& n, const V& outs,
                                    nlohmann::json& index) const {
  for (size_t j = 0; j < n.outputs.size() && j < outs.size(); ++j) {
    const std::string& name = n.outputs[j];
    if (name.empty() || !std::regex_search(name, *dumpMatch) || !ops::isFloat(outs[j].dtype())) continue;
    Tensor host(outs[j].dtype(), outs[j].shape());
    if (host.nbytes()) download(host.mut<uint8_t>(), outs[j].raw(), host.nbytes());
    Tensor f = host.toF32();
    std::string file = name;
    for (char& c : file)
      if (c == ':' || c == '#' || c == '/') c = '_';
    file += ".f32";
    std::ofstream os(folder + "/" + file, std::ios::binary);
    os.write(static_cast<const char*>(f.raw()), std::streamsize(f.nbytes()));
    if (!os) fail("cannot write {}/{}", folder, file);
    index[name] = {{"file", file}, {"shape", f.shape()}, {"node", n.name}};
  }
}

// Runs the nodes on `inputs` (launches enqueued, not waited for); returns
// the graph outputs on the device. `staged` receives the step inputs'
// device copy: the caller keeps it until the step is waited for.
std::map<std::string, Tensor> CudaExecutor::Impl::execute(const TensorMap& inputs, Tensor& staged) const {
  const Impl& m = *this;
  const bool graphing = m.graphs && !m.profiling && m.dumpDir.empty();
  // A step the graph was made for (StepGraph): its inputs go where the
  // graph's kernels read them, and the graph runs.
  m.makePendingGraph();
  if (graphing && m.stepGraph && m.takesGraph(inputs)) {
    m.runGraph();
    staged = m.stepGraph->staged;
    return m.stepGraph->outs;
  }
  std::optional<std::vector<InputSig>> sig;
  if (graphing) sig = m.signature(inputs);
  std::vector<std::pair<const ops::ValueInfo*, const Tensor*>> ints;
  auto intInputs = [&] {
    for (const auto& v : g.inputs) {
      auto it = inputs.find(v.name);
      if (it != inputs.end() && it->second.dtype() == ops::DType::I64 && v.name.rfind("kv_cache.", 0) != 0)
        ints.push_back({&v, &it->second});
    }
  };
  std::map<std::string, Impl::Val> env;
  // The integer step inputs go up in one copy; their device views point
  // into `staged`.
  for (const auto& v : g.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end()) fail("{}: graph input '{}' was not given", g.source, v.name);
    const Tensor& t = it->second;
    if (v.name.rfind("kv_cache.", 0) == 0) {
      if (t.dtype() != m.dt)
        fail("{}: '{}' is {}; this executor computes on {}", g.source, v.name, ops::dtypeName(t.dtype()), m.dtName);
      env[v.name].dev = t;
    } else if (ops::isFloat(t.dtype())) {
      // Float inputs (a graph of fused elementwise regions) go up in the
      // storage type.
      Tensor h = t.cast(m.dt);
      env[v.name].dev = m.pool.tensor(m.dt, h.shape());
      if (h.nbytes()) m.dev.upload(mut(env[v.name].dev), h.raw(), h.nbytes());
    } else if (t.dtype() != ops::DType::I64) {
      fail("{}: graph input '{}' must be i64 or a float tensor, got {}", g.source, v.name, ops::dtypeName(t.dtype()));
    }
  }
  intInputs();
  // Recording (graphs): the blocks the step takes from the pool are noted
  // from here on, the staged copy's included.
  if (graphing) m.pool.capture(true);
  std::vector<size_t> offsets;
  {
    std::vector<uint8_t> host = packSteps(ints, offsets);
    staged = m.pool.tensor(ops::DType::I64, {(int64_t)std::max<size_t>(host.size() / 8, 1)});
    for (size_t i = 0; i < ints.size(); ++i) {
      auto [v, t] = ints[i];
      env[v->name] = {Tensor(ops::DType::I64, t->shape(), nullptr, static_cast<const uint8_t*>(staged.raw()) + offsets[i]),
                      *t, &v->name};
    }
    if (!host.empty()) m.dev.upload(mut(staged), host.data(), host.size());
  }
  // CudaExecutorOptions::dumpDir: this step's folder and index.
  std::string dumpFolder;
  nlohmann::json dumpIndex = nlohmann::json::object();
  if (!m.dumpDir.empty()) {
    dumpFolder = fmt::format("{}/step-{}", m.dumpDir, m.dumpSteps++);
    std::error_code ec;
    std::filesystem::create_directories(dumpFolder, ec);
    if (ec) fail("cannot make the dump folder {}: {}", dumpFolder, ec.message());
  }
  auto nodes = [&] {
    std::map<size_t, V> early;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const auto& n = g.nodes[i];
      std::vector<Impl::Val> held;  // parameters as values
      held.reserve(n.inputs.size());
      std::vector<const Impl::Val*> args;
      for (const auto& in : n.inputs) {
        if (in.empty()) {
          args.push_back(nullptr);
        } else if (auto it = env.find(in); it != env.end()) {
          args.push_back(&it->second);
        } else {
          held.push_back({m.params.at(in), Tensor()});
          args.push_back(&held.back());
        }
      }
      // A node whose outputs an earlier one computed (the k RoPE of a
      // joined pair) takes them.
      auto run = [&] {
        if (auto p = m.ropePairs.find(i); p != m.ropePairs.end())
          if (auto kx = env.find(g.nodes[p->second].inputs[0]); kx != env.end())
            if (auto both = m.ropeJoined(n, args, kx->second)) {
              early[p->second] = {std::move(both->second)};
              return V{std::move(both->first)};
            }
        return m.runNode(n, args);
      };
      V outs;
      if (auto e = early.find(i); e != early.end()) {
        outs = std::move(e->second);
        early.erase(e);
      } else {
        outs = runNamedNode(g, n, [&] {
          if (!m.profiling) return run();
          V o;
          ProfileRow& row = m.profile[profileLabel(n, args)];
          row.ms += m.dev.timeMs([&] { o = run(); });
          ++row.calls;
          return o;
        });
      }
      if (!dumpFolder.empty()) m.dumpValues(dumpFolder, n, outs, dumpIndex);
      for (size_t j = 0; j < n.outputs.size(); ++j)
        if (!n.outputs[j].empty()) env[n.outputs[j]] = {std::move(outs[j]), Tensor()};
      for (const auto& dead : m.freeAfter[i]) env.erase(dead);
    }
  };
  std::vector<Guard> stepGuards;
  bool repeated = false;
  if (!graphing) {
    nodes();
    if (!dumpFolder.empty()) std::ofstream(dumpFolder + "/index.json") << dumpIndex.dump(1) << "\n";
  } else {
    // Launched as they are recorded: a step that repeats the last one's
    // launches makes the graph that later steps take.
    m.guards = &stepGuards;
    m.unguarded.clear();
    m.guardKeys.clear();
    LaunchRecord r;
    try {
      r = m.dev.record(nodes, /*enqueue=*/true);
    } catch (...) {
      m.guards = nullptr;
      m.pool.capture(false);
      throw;
    }
    m.guards = nullptr;
    m.pool.capture(false);
    repeated = sig && r.launchesOnly && m.unguarded.empty() && r == m.lastRecord;
    m.lastRecord = std::move(r);
  }
  std::map<std::string, Tensor> outs;
  for (const auto& o : g.outputs) {
    auto it = env.find(o.name);
    outs[o.name] = it != env.end() ? it->second.dev : m.params.at(o.name);
  }
  env.clear();
  if (repeated) {
    std::vector<Tensor> holders{staged};
    for (const auto& [name, t] : outs) holders.push_back(t);
    if (auto pinned = m.pool.pinCaptured(holders, kStepGraphMostBytes)) {
      std::vector<std::pair<size_t, size_t>> at;
      for (size_t i = 0; i < ints.size(); ++i) at.push_back({size_t(ints[i].first - g.inputs.data()), offsets[i]});
      m.pendingGraph = PendingGraph{m.lastRecord,
                                    StepGraph{CudaGraph(), std::move(*sig), std::move(stepGuards), staged, outs,
                                              std::move(pinned), std::move(at), m.dev.pinnedHost(staged.nbytes())}};
    }
  }
  return outs;
}

TensorMap CudaExecutor::run(const TensorMap& inputs) const {
  const Impl& m = *impl_;
  // Outputs come down (this waits for the step) and widen to f32, on
  // several threads for big ones (batch 32 x a 128k vocabulary is 4M
  // logits: 10 ms on one core).
  TensorMap result;
  Tensor staged;
  for (const auto& [name, d] : m.execute(inputs, staged)) {
    if (d.dtype() != ops::DType::BF16 && d.dtype() != ops::DType::F16) {
      Tensor host(d.dtype(), d.shape());
      if (host.nbytes()) m.download(host.mut<uint8_t>(), d.raw(), host.nbytes());
      result[name] = host.toF32();
      continue;
    }
    const int64_t n = d.numel();
    m.staging.resize(n);
    if (n) m.download(m.staging.data(), d.raw(), n * 2);
    // Not zero-filled: the threads below write every element (and fault
    // its pages in, in parallel).
    std::shared_ptr<float[]> storage(new float[std::max<int64_t>(n, 1)]);
    float* dst = storage.get();
    const uint16_t* src = m.staging.data();
    const bool bf16 = d.dtype() == ops::DType::BF16;
    parallelRanges(
        n,
        [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) dst[i] = bf16 ? ops::bf16ToFloat(src[i]) : ops::halfToFloat(src[i]);
        },
        n < (int64_t(1) << 20) ? 1 : 8);
    result[name] = Tensor(ops::DType::F32, d.shape(), std::shared_ptr<const void>(storage, dst), dst);
  }
  return result;
}

namespace {

// Output `name` of a step, still on the device: rows of logits in the
// executor's storage type.
struct DeviceRows {
  const Tensor* t = nullptr;
  int64_t rows = 0, vocab = 0;
};
DeviceRows deviceRows(const std::map<std::string, Tensor>& outs, const std::string& name, const ops::GraphDef& g,
                      ops::DType dt, const std::string& dtName) {
  auto it = outs.find(name);
  if (it == outs.end()) fail("{}: the graph has no output '{}'", g.source, name);
  const Tensor& d = it->second;
  if (d.dtype() != dt || d.rank() < 1 || d.dim(d.rank() - 1) < 1)
    fail("output '{}' ({} {}) is not rows of {} logits", name, ops::dtypeName(d.dtype()), ops::shapeStr(d.shape()), dtName);
  const int64_t vocab = d.dim(d.rank() - 1);
  if (vocab >= (int64_t(1) << 24)) fail("a vocabulary of {} ids is past the sampling kernels' exact f32 indices", vocab);
  return {&d, d.numel() / vocab, vocab};
}

}  // namespace

// The argmax kernel reduces each row to a few (max, index) pairs, which
// come down; the host picks the row's first largest.
std::vector<int64_t> CudaExecutor::Impl::greedyRows(const Tensor& d, int64_t rows, int64_t vocab) const {
  if (rows == 0) return {};
  const std::string type = ops::dtypeName(d.dtype());
  const auto& kern = findKernel(k.argmaxes(), [&](const auto& a) { return a.dtype == type; }, type + " argmax");
  const auto [chunk, splits] = CudaKernelSet::argmaxSplits(kern, vocab);
  Tensor part = pool.tensor(ops::DType::F32, {2, rows, splits});
  float* mx = static_cast<float*>(mut(part));
  k.launch(kern, d.raw(), mx, mx + rows * splits, rows, vocab, chunk, splits);
  std::vector<float> host(2 * rows * splits);
  download(host.data(), part.raw(), host.size() * sizeof(float));
  return CudaKernelSet::argmaxPick(host.data(), host.data() + rows * splits, rows, splits);
}

std::vector<int64_t> CudaExecutor::runGreedy(const TensorMap& inputs, const std::string& name) const {
  const Impl& m = *impl_;
  Tensor staged;
  std::map<std::string, Tensor> outs = m.execute(inputs, staged);
  const DeviceRows d = deviceRows(outs, name, m.g, m.dt, m.dtName);
  return m.greedyRows(*d.t, d.rows, d.vocab);
}

bool CudaExecutor::Impl::penaltyOnDevice() const {
  auto has = [&](const auto& ks, auto pred) { return std::any_of(ks.begin(), ks.end(), pred); };
  return !k.penalties().empty() &&
         has(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == "f32"; }) &&
         has(k.argmaxes(), [](const auto& x) { return x.dtype == "f32"; }) &&
         has(k.topks(), [](const auto& x) { return x.dtype == "f32"; });
}

Tensor CudaExecutor::Impl::penalizedRows(const Tensor& d, int64_t vocab, std::span<const RowDraw* const> draws) const {
  const int64_t P = (int64_t)draws.size();
  // Host side: the source rows, then each draw's distinct ids inside the
  // vocabulary as (row, column) entries (rows first, then columns), then
  // the penalties.
  std::vector<int64_t> ids(P), rows, cols;
  std::vector<float> penalty(P);
  std::vector<char> seen(vocab);  // cleared after each draw at its own entries only
  for (int64_t q = 0; q < P; ++q) {
    ids[q] = draws[q]->row, penalty[q] = draws[q]->sampler->params().repetitionPenalty;
    const size_t first = cols.size();
    for (int64_t id : draws[q]->history)
      if (id >= 0 && id < vocab && !seen[id]) seen[id] = 1, rows.push_back(q), cols.push_back(id);
    for (size_t e = first; e < cols.size(); ++e) seen[cols[e]] = 0;
  }
  const int64_t E = (int64_t)rows.size();
  ids.insert(ids.end(), rows.begin(), rows.end());
  ids.insert(ids.end(), cols.begin(), cols.end());
  Tensor index = pool.tensor(ops::DType::I64, {P + 2 * E}), scale = pool.tensor(ops::DType::F32, {P});
  dev.upload(mut(index), ids.data(), ids.size() * sizeof(int64_t));
  dev.upload(mut(scale), penalty.data(), penalty.size() * sizeof(float));
  const auto& widen = findKernel(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == "f32"; },
                                 dtName + " row gather into f32");
  Tensor out = pool.tensor(ops::DType::F32, {P, vocab});
  const int64_t sourceRows = d.numel() / vocab;
  k.launch(widen, d.raw(), mut(out), index.raw(), P, sourceRows, vocab);
  if (E > 0) {
    const int64_t* at = static_cast<const int64_t*>(index.raw()) + P;
    k.launch(k.penalties().front(), mut(out), at, scale.raw(), P, vocab, E);
  }
  return out;
}

// Greedy draws take the argmax kernel's partials, sampling draws the top-k
// kernel's candidates (runtime/sampler.h: headFromSplits); a row comes down
// whole only for a draw its candidates do not settle, a second
// temperature on one row (the row's mass is computed at its first draw's
// temperature), or a repetition penalty where the kernel set has no
// penalty kernels. With them, a penalized draw's row is copied into f32 on
// the device, penalized there, and drawn from like any other.
std::vector<int64_t> CudaExecutor::runSampled(const TensorMap& inputs, const std::string& name,
                                              std::span<const RowDraw> draws) const {
  const Impl& m = *impl_;
  Tensor staged;
  std::map<std::string, Tensor> outs = m.execute(inputs, staged);
  const DeviceRows d = deviceRows(outs, name, m.g, m.dt, m.dtName);
  checkDraws(draws, d.rows);
  std::vector<Impl::Pick> plain, penalized;
  std::vector<const RowDraw*> copies;
  std::vector<size_t> plainAt, penalizedAt;
  const bool onDevice = m.penaltyOnDevice();
  for (size_t i = 0; i < draws.size(); ++i) {
    const RowDraw& r = draws[i];
    if (onDevice && r.sampler->params().repetitionPenalty != 1.0f && !r.history.empty()) {
      penalized.push_back({(int64_t)copies.size(), &r, true}), penalizedAt.push_back(i), copies.push_back(&r);
    } else {
      plain.push_back({r.row, &r, false}), plainAt.push_back(i);
    }
  }
  std::vector<int64_t> next(draws.size(), -1);
  const std::vector<int64_t> a = m.pickTokens(*d.t, d.rows, d.vocab, plain);
  for (size_t j = 0; j < a.size(); ++j) next[plainAt[j]] = a[j];
  if (!copies.empty()) {
    const Tensor rows = m.penalizedRows(*d.t, d.vocab, copies);
    const std::vector<int64_t> b = m.pickTokens(rows, (int64_t)copies.size(), d.vocab, penalized);
    for (size_t j = 0; j < b.size(); ++j) next[penalizedAt[j]] = b[j];
  }
  // Log-probabilities come from the raw row (before any penalty), which
  // comes down whole, once however many draws share it (forked samples):
  // a full softmax needs every logit.
  std::map<int64_t, std::vector<float>> raw;
  for (size_t i = 0; i < draws.size(); ++i) {
    if (!draws[i].logprobs) continue;
    auto [it, fresh] = raw.try_emplace(draws[i].row);
    if (fresh) it->second = m.hostRow(*d.t, draws[i].row, d.vocab);
    *draws[i].logprobs = tokenLogprobs(it->second, next[i], draws[i].topLogprobs);
  }
  return next;
}

std::vector<float> CudaExecutor::Impl::hostRow(const Tensor& d, int64_t row, int64_t vocab) const {
  Tensor stored(d.dtype(), {vocab});
  download(stored.mut<uint8_t>(), static_cast<const uint8_t*>(d.raw()) + row * stored.nbytes(), stored.nbytes());
  const Tensor f = stored.toF32();
  return std::vector<float>(f.data<float>(), f.data<float>() + vocab);
}

std::vector<int64_t> CudaExecutor::Impl::pickTokens(const Tensor& d, int64_t rows, int64_t vocab,
                                                    std::span<const Pick> picks) const {
  if (picks.empty()) return {};
  const std::string type = ops::dtypeName(d.dtype());
  enum Way { Greedy, Head, Whole };
  std::vector<Way> way(picks.size(), Whole);
  std::vector<float> temperature(rows, 0.f);
  bool anyGreedy = false, anyHead = false;
  for (size_t i = 0; i < picks.size(); ++i) {
    const Pick& r = picks[i];
    const SamplingParams& p = r.draw->sampler->params();
    const bool unpenalized = r.penalized || p.repetitionPenalty == 1.0f;
    if (p.greedy && unpenalized) {
      way[i] = Greedy, anyGreedy = true;
    } else if (!p.greedy && unpenalized && (temperature[r.row] == 0.f || temperature[r.row] == p.temperature)) {
      temperature[r.row] = p.temperature;
      way[i] = Head, anyHead = true;
    }
  }
  std::vector<int64_t> greedy = anyGreedy ? greedyRows(d, rows, vocab) : std::vector<int64_t>{};
  // Candidates: value, index [rows, splits * C], mass [rows, splits].
  std::vector<float> cand;
  int64_t splits = 0, C = 0;
  if (anyHead) {
    const auto& kern = findKernel(k.topks(), [&](const auto& t) { return t.dtype == type; }, type + " top-k");
    splits = kern.splits(vocab), C = kern.candidates;
    std::vector<float> scale(rows, 1.f);
    for (int64_t r = 0; r < rows; ++r)
      if (temperature[r] > 0.f) scale[r] = float(1.4426950408889634 / temperature[r]);
    Tensor part = pool.tensor(ops::DType::F32, {rows * (2 * splits * C + splits + 1)});
    float* p = static_cast<float*>(mut(part));
    float *value = p, *index = value + rows * splits * C, *mass = index + rows * splits * C, *sc = mass + rows * splits;
    dev.upload(sc, scale.data(), rows * sizeof(float));
    k.launch(kern, d.raw(), value, index, mass, sc, rows, vocab);
    cand.resize(rows * (2 * splits * C + splits));
    download(cand.data(), part.raw(), cand.size() * sizeof(float));
  }
  // Heads first: top-k's k entries (or 256), then all the candidates; a
  // draw neither settles takes the whole row below (same uniform).
  // Serial: merging a row's 8k candidates is tens of microseconds, less
  // than starting threads (H100, 2026-11-22: batch 32 top-k 50 took 10.96
  // ms/step serial, 11.53 on 16 threads).
  std::vector<int64_t> next(picks.size(), -1);
  std::vector<double> uniform(picks.size(), 0.0);
  for (size_t i = 0; i < picks.size(); ++i) {
    const Pick& r = picks[i];
    if (way[i] == Greedy) next[i] = greedy[r.row];
    if (way[i] != Head) continue;
    const SamplingParams& p = r.draw->sampler->params();
    const double u = uniform[i] = r.draw->sampler->draw();
    const int64_t at = r.row * splits * C;
    auto head = [&](size_t count) {
      return headFromSplits(cand.data() + at, cand.data() + rows * splits * C + at,
                            cand.data() + 2 * rows * splits * C + r.row * splits, splits, C, vocab,
                            p.temperature, count);
    };
    std::optional<int64_t> t = pickFromHead(head(headSize(p)), p, u);
    if (!t && headSize(p) < size_t(splits * C)) t = pickFromHead(head(SIZE_MAX), p, u);
    if (t) next[i] = *t;
  }
  // Whole rows: each comes down once (widened to f32), then the draws on
  // them run in parallel (a 128k row's sort is milliseconds).
  std::map<int64_t, std::vector<float>> whole;
  std::vector<size_t> rest;
  for (size_t i = 0; i < picks.size(); ++i) {
    if (next[i] >= 0) continue;
    rest.push_back(i);
    auto [it, fresh] = whole.try_emplace(picks[i].row);
    if (fresh) it->second = hostRow(d, picks[i].row, vocab);
  }
  rowsDownloaded += (int64_t)whole.size();
  parallelRanges((int64_t)rest.size(), [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const size_t i = rest[j];
      const Pick& r = picks[i];
      const std::vector<float>& row = whole.at(r.row);
      if (way[i] == Head) {
        const SamplingParams& p = r.draw->sampler->params();
        next[i] = *pickFromHead(headOf(row, p.temperature, row.size()), p, uniform[i]);
      } else {
        // A penalized copy carries its penalty already.
        next[i] = r.draw->sampler->sample(row, r.penalized ? std::span<const int64_t>{} : r.draw->history);
      }
    }
  });
  return next;
}

CudaModel loadCudaModel(Artifact a, CudaExecutorOptions o) {
  if (!a.cuda()) fail("{}: compiled for {}, not for a GPU", a.graph.source, a.target);
  CudaModel m;
  m.device = CudaDevice::open();
  m.kernels = CudaKernelSet::load(*m.device, a.kernelDir);
  o.dtype = ops::parseDType(a.dtype);
  m.exec = std::make_unique<CudaExecutor>(std::move(a.graph), *m.device, *m.kernels, o);
  return m;
}

}  // namespace strata::runtime
