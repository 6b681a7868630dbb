// The GPU executor's inside (runtime/gpu_executor.h), shared by its files:
// gpu_executor.cpp (construction and checks), gpu_executor_nodes.cpp (one
// launcher per region op), gpu_executor_steps.cpp (a step: staging, the
// node loop, step replays) and gpu_executor_sampling.cpp (tokens drawn on
// the device). Not a public header.
#pragma once
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
#include "runtime/gpu_memory_pool.h"
#include "runtime/parallel.h"
#include "runtime/weights.h"
#include <nlohmann/json.hpp>

#include "runtime/gpu_executor.h"

namespace strata::runtime {

using ops::Tensor;
using V = std::vector<Tensor>;

namespace gpu_detail {



// The most pool memory a step graph keeps for itself. Llama-3-8B shape
// (H100, 2026-11-25): decode steps 0.34 / 2.6 / 41 / 50 MiB at batch 1 /
// 8 / 32 / 128 (from 17 rows activations hold whole 128-row blocks), a
// 128-token prefill 15 MiB; a long prompt's prefill would keep hundreds
// of MiB for a graph that saves little beside its kernels (2048 tokens:
// 45.3-45.6 ms either way).
constexpr size_t kStepGraphMostBytes = size_t(64) << 20;

// The largest row block of `k`'s TMA GEMMs (0: none).
inline int64_t tmaRowBlock(const GpuKernelSet& k) {
  int64_t rows = 0;
  for (const GpuGemmKernel& g : k.gemms())
    if (g.tma) rows = std::max(rows, g.blockM);
  return rows;
}

// `bytes` of device memory, released when the last tensor viewing it dies.
inline std::shared_ptr<const void> deviceBlock(Device& dev, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  void* p = dev.allocate(bytes);
  return std::shared_ptr<const void>(p, [&dev, bytes](const void* q) { dev.release(const_cast<void*>(q), bytes); });
}

// A device copy of a host tensor: in `block` at byte `offset`, or in its own
// allocation without a block.
// `bytes` of host memory at `data` as a device tensor of `dtype` x `shape`.
inline Tensor deviceCopy(Device& dev, const void* data, size_t bytes, ops::DType dtype, ops::Shape shape,
                         std::shared_ptr<const void> block = nullptr, size_t offset = 0) {
  if (!block) block = deviceBlock(dev, bytes);
  void* p = static_cast<uint8_t*>(const_cast<void*>(block.get())) + offset;
  if (bytes) dev.upload(p, data, bytes);
  return Tensor(dtype, std::move(shape), std::move(block), p);
}
inline Tensor deviceCopy(Device& dev, const Tensor& host, std::shared_ptr<const void> block = nullptr, size_t offset = 0) {
  return deviceCopy(dev, host.raw(), host.nbytes(), host.dtype(), host.shape(), std::move(block), offset);
}

inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A weight of `w`'s shape filled on the host (GpuExecutorOptions::
// randomWeights), chunk by chunk so the host never holds the whole model:
// vectors (norm weights) 1, matrices uniform in +-0.02 sqrt(3). Element i
// depends only on (seed, name, i), not on the thread count.
// Placed like deviceCopy.
inline Tensor randomWeight(Device& dev, const ops::WeightRef& w, ops::DType dt, uint64_t seed,
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

// Sibling GEMM weights: the [N, K] weights (q / k / v) of a region.gemm
// with several outputs and no SwiGLU, bias or residual, each weight in at
// most one group, every member accepted by `joins`. The groups are placed
// back to back in one allocation (joinSiblingWeights,
// joinQuantSiblingWeights) so that at one row one GEMM over the joined
// [sum N, K] matrix computes them all (Impl::gemm).
inline std::vector<std::vector<const ops::WeightRef*>> siblingWeightGroups(
    const ops::GraphDef& g, const std::function<bool(const ops::WeightRef&)>& joins) {
  std::map<std::string, const ops::WeightRef*> weights;
  for (const auto& w : g.weights) weights[w.name] = &w;
  std::set<const ops::WeightRef*> taken;
  std::vector<std::vector<const ops::WeightRef*>> groups;
  for (const auto& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    if (op.outputs() < 2 || op.swiglu || op.bias || op.residual || !op.weightsNK) continue;
    std::vector<const ops::WeightRef*> ws;
    for (int64_t wi = 0; wi < op.outputs(); ++wi) {
      auto it = weights.find(n.inputs[op.weight(wi)]);
      if (it == weights.end() || it->second->shape.size() != 2 || !joins(*it->second) || taken.count(it->second) ||
          std::find(ws.begin(), ws.end(), it->second) != ws.end())
        break;
      ws.push_back(it->second);
    }
    if ((int64_t)ws.size() != op.outputs()) continue;
    taken.insert(ws.begin(), ws.end());
    groups.push_back(std::move(ws));
  }
  return groups;
}

// Each weight starts on a 256-byte boundary, as its own allocation would
// (the kernels' 16-byte copies need it); where that leaves a gap the group
// is not one matrix and Impl::gemm runs the GEMMs apart.
inline size_t joinedOffset(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Floating point sibling weights in the storage type: weight name ->
// (group, byte offset), and each group's bytes.
struct JoinedWeights {
  std::map<std::string, std::pair<size_t, size_t>> at;
  std::vector<size_t> groupBytes;
};

inline JoinedWeights joinSiblingWeights(const ops::GraphDef& g, const std::function<ops::DType(ops::DType)>& storedAs,
                                 ops::DType dt) {
  JoinedWeights j;
  auto dense = [&](const ops::WeightRef& w) { return w.quant.empty() && storedAs(w.dtype) == dt; };
  for (const auto& ws : siblingWeightGroups(g, dense)) {
    size_t off = 0;
    for (const auto* w : ws) {
      off = joinedOffset(off);
      j.at[w->name] = {j.groupBytes.size(), off};
      off += ops::numel(w->shape) * ops::dtypeSize(dt);
    }
    j.groupBytes.push_back(off);
  }
  return j;
}

// The bytes of a quantized [N, K] weight's GPU form (abi::packGpuInt8Rows,
// abi::int8ScaleBuffers): its integers, its scales, its offsets.
inline std::array<size_t, 3> quantFormBytes(const abi::Int8BlockForm& f, int64_t N, int64_t K) {
  const size_t values = size_t(N * K / (f.nibbles ? 2 : 1));
  const size_t scales = f.superBlock ? size_t(N * (K / f.superBlock)) * 2 : size_t(N * (K / f.block)) * 4;
  return {values, scales, f.offsets ? scales : 0};
}

// Block-quantized sibling weights of one GPU form and depth: weight name
// -> (group, byte offsets of its integers, scales and offsets), and each
// group's bytes of the three.
struct JoinedQuantWeights {
  std::map<std::string, std::pair<size_t, std::array<size_t, 3>>> at;
  std::vector<std::array<size_t, 3>> groupBytes;
};

inline JoinedQuantWeights joinQuantSiblingWeights(const ops::GraphDef& g,
                                                  const std::map<std::string, abi::Int8BlockForm>& forms,
                                                  const std::set<std::string>& dense) {
  JoinedQuantWeights j;
  auto packed = [&](const ops::WeightRef& w) { return !w.quant.empty() && forms.count(w.name) && !dense.count(w.name); };
  for (const auto& ws : siblingWeightGroups(g, packed)) {
    const abi::Int8BlockForm& form = forms.at(ws[0]->name);
    if (!std::ranges::all_of(ws, [&](const ops::WeightRef* w) {
          return forms.at(w->name) == form && w->shape[1] == ws[0]->shape[1];
        }))
      continue;
    std::array<size_t, 3> off{};
    for (const auto* w : ws) {
      const std::array<size_t, 3> bytes = quantFormBytes(form, w->shape[0], w->shape[1]);
      for (size_t i = 0; i < 3; ++i) off[i] = joinedOffset(off[i]);
      j.at[w->name] = {j.groupBytes.size(), off};
      for (size_t i = 0; i < 3; ++i) off[i] += bytes[i];
    }
    j.groupBytes.push_back(off);
  }
  return j;
}

// A device tensor's address for a kernel to write (pool and cache tensors
// are writable device memory).
inline void* mut(const Tensor& t) { return const_cast<void*>(t.raw()); }

// Shape of x with its last dim replaced by n.
inline ops::Shape withLast(ops::Shape s, int64_t n) {
  s.back() = n;
  return s;
}

inline void checkIndices(const Tensor& ids, int64_t limit, const char* what) {
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (p[i] < 0 || p[i] >= limit) fail("{} {} at #{} is outside [0, {})", what, p[i], i, limit);
}

// The largest of T token positions (RoPE), each checked.
inline int64_t maxPosition(const Tensor& pos, int64_t T) {
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
inline std::pair<int64_t, int64_t> attentionSteps(const Tensor& tables, const Tensor& starts, const Tensor& lens, int64_t T,
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
inline const K& findKernel(const std::vector<K>& ks, Pred pred, const std::string& what) {
  for (const K& k : ks)
    if (pred(k)) return k;
  fail("the kernel set has no {}", what);
}



}  // namespace gpu_detail

using namespace gpu_detail;

struct GpuExecutor::Impl {
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
  Device& dev;
  const GpuKernelSet& k;
  ops::DType dt;
  std::string dtName;
  std::map<std::string, Tensor> params;  // weights and constants on the device
  // Block-quantized GEMM weights and embedding tables in their GPU form
  // (abi::gpuQuantWeightForms; abi::packGpuInt8Rows): integers, scales and
  // offsets, [rows, cols] the weight's [N, K]. params holds the integers
  // too (an opaque i32 view), or, for a table the kernel set has no
  // quantized gather for, its dequantized rows (packedTable).
  struct QuantWeight {
    abi::Int8BlockForm form{0};
    int64_t rows = 0, cols = 0;
    Tensor values, scales, offsets;
  };
  std::map<std::string, QuantWeight> quant;
  uint64_t weightBytes = 0;
  std::vector<std::vector<std::string>> freeAfter;
  mutable DevicePool pool;
  mutable std::map<std::pair<int64_t, float>, RopeTable> rope;
  mutable std::vector<uint16_t> staging;  // outputs come down here (no page faults after the first step)
  mutable bool profiling = false;
  bool graphs = true;
  // GpuExecutorOptions::dumpDir / dumpMatch; dumpSteps numbers the steps.
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

  // A step replayed as one unit (Device::replayable; GpuExecutorOptions::graphs). Made
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
    std::unique_ptr<Replay> graph;
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
    p.parts.graph = dev.replayable(p.record);
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

  Impl(ops::GraphDef graph, Device& d, const GpuKernelSet& kernels, const GpuExecutorOptions& o)
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
  const GpuGatherRowsKernel& gatherKernel() const {
    return findKernel(k.gathers(), [&](const auto& x) { return x.dtype == dtName && x.outDtype == dtName; },
                      dtName + " row gather");
  }
  // An embedding node's table when it stays block-quantized (params holds
  // its integers; its gather widens the rows), else null.
  const QuantWeight* packedTable(const ops::NodeDef& n) const {
    auto q = n.inputs.empty() ? quant.end() : quant.find(n.inputs[0]);
    if (q == quant.end()) return nullptr;
    auto p = params.find(n.inputs[0]);
    return p != params.end() && p->second.raw() == q->second.values.raw() ? &q->second : nullptr;
  }
  Tensor gatherRows(const Tensor& table, const Val& ids) const {
    return gatherRows(gatherKernel(), table.raw(), table.dim(0), table.numel() / table.dim(0), ids);
  }
  // Whether a gather widens `form`'s blocks into the storage type (sets
  // compiled before 2026-11-30 have none).
  auto widens(const abi::Int8BlockForm& form) const {
    return [this, form](const GpuGatherRowsKernel& x) { return x.quant == form && x.outDtype == dtName; };
  }
  // Rows of a block-quantized table, widened into the storage type.
  Tensor gatherRows(const QuantWeight& q, const Val& ids) const {
    const GpuGatherRowsKernel& g =
        findKernel(k.gathers(), widens(q.form), fmt::format("{} gather of {} blocks", dtName, abi::int8FormName(q.form)));
    return gatherRows(g, q.values.raw(), q.rows, q.cols, ids, q.scales.raw(), q.offsets.defined() ? q.offsets.raw() : nullptr);
  }
  Tensor gatherRows(const GpuGatherRowsKernel& kernel, const void* table, int64_t rows, int64_t width, const Val& ids,
                    const void* scales = nullptr, const void* offsets = nullptr) const {
    const int64_t T = ids.host.numel();
    checkIndices(ids.host, rows, "row index");
    guard({&ids}, fmt::format("rows {} {}", *ids.input, rows), [rows, name = ids.input](const TensorMap& step) {
      checkIndices(step.at(*name), rows, "row index");
      return true;
    });
    Tensor out = pool.tensor(dt, {T, width});
    if (T > 0) k.launch(kernel, table, mut(out), ids.dev.raw(), T, rows, width, scales, offsets);
    return out;
  }

  V gemm(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  V rmsNorm(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  // x's rows RMS-normalized by w (the RMSNorm kernel), a new tensor.
  Tensor normRows(const Tensor& x, const Tensor& w, float eps) const;
  V ropeNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  // RoPE over rows of `width` of x (heads of the node's head dim) at the
  // positions `pos` (host and device copies), into a fresh tensor of
  // `shape` (rows x width elements).
  Tensor ropeRows(const ops::NodeDef& n, const Tensor& x, const Val& pos, int64_t width, const ops::Shape& shape) const;
  // RoPE kernel `kern` over T tokens of x (a joined kernel: q then k, k
  // right after q) into a fresh tensor of `shape`, checking the positions
  // and guarding them for step graphs.
  Tensor ropeLaunch(const ops::NodeDef& n, const GpuRopeKernel& kern, const Tensor& x, const Val& pos, int64_t T,
                    const ops::Shape& shape) const;
  // The cos / sin tables of (head dim, theta) with at least `rows`
  // positions: grown geometrically, so a long generation rebuilds them
  // O(log n) times (the CPU backend's rule).
  const RopeTable& ropeTable(int64_t D, float theta, int64_t rows) const;
  // The tables of node n's RoPE (head dim D, its theta; full rotary only)
  // covering T tokens' positions, which are checked and guarded for step
  // graphs.
  const RopeTable& ropeTableFor(const ops::NodeDef& n, int64_t D, const Val& pos, int64_t T) const;
  // The q and k RoPE nodes of a joined q | k | v GEMM (its outputs 0 and
  // 1, the same positions, head dim and theta): q's node index -> k's.
  std::map<size_t, size_t> ropePairs;
  // Both RoPEs of a pair in one launch when q and k sit side by side (one
  // row, the joined GEMM's output views) and the set has the kernel for
  // their heads together; else nullopt (each node launches its own).
  std::optional<std::pair<Tensor, Tensor>> ropeJoined(const ops::NodeDef& q, const std::vector<const Val*>& in,
                                                      const Val& kx) const;
  V kvWrite(const std::vector<const Val*>& in) const;
  // The checks of a KV write: cache [blocks, 2, KV heads, page, head dim],
  // k / v T tokens of its heads, slot_mapping's slots inside it (checked,
  // and guarded for step graphs).
  void checkKvWrite(const Tensor& cache, const Tensor& k, const Tensor& v, const Val& slots) const;
  V ropeKvWrite(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  V pagedAttention(const ops::NodeDef& n, const std::vector<const Val*>& in) const;
  // region.elementwise nodes' kernels and launch contracts (from their
  // kernel attribute, read at prepare).
  std::map<const ops::NodeDef*, std::pair<const GpuElementwiseKernel*, ops::ElementwiseLaunch>> elementwises;
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

}  // namespace strata::runtime
