#include "runtime/gpu_executor_impl.h"

#include "ops/quant.h"
#include "runtime/devices/registry.h"

namespace strata::runtime {

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

GpuExecutor::GpuExecutor(ops::GraphDef graph, Device& device, const GpuKernelSet& kernels,
                           GpuExecutorOptions o)
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
  for (const auto& w : g.weights) total += w.quant.empty() ? ops::numel(w.shape) * ops::dtypeSize(storedAs(w.dtype)) : w.nbytes;
  // Block-quantized weights stay packed: GEMMs and the embedding gather
  // read the blocks and widen them in registers. Only a table whose
  // quantized gather the kernel set lacks (sets compiled before
  // 2026-11-30), or a weight another kind of node reads, is dequantized
  // into the storage type.
  const std::map<std::string, abi::Int8BlockForm> forms = abi::gpuQuantWeightForms(g);
  std::set<std::string> dense;  // quantized weights some launch reads widened
  for (const auto& n : g.nodes)
    if (n.op != "region.gemm")
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        auto f = forms.find(n.inputs[i]);
        if (n.op == "region.embedding" && i == 0 && f != forms.end() &&
            std::ranges::any_of(kernels.gathers(), m.widens(f->second)))
          continue;
        dense.insert(n.inputs[i]);
      }
  // q / k / v of one GPU form back to back, as the floating point ones.
  const JoinedQuantWeights joinedQuant = joinQuantSiblingWeights(g, forms, dense);
  std::vector<std::array<std::shared_ptr<const void>, 3>> quantGroups;
  for (const auto& bytes : joinedQuant.groupBytes) {
    std::array<std::shared_ptr<const void>, 3> parts;
    for (size_t i = 0; i < 3; ++i)
      if (bytes[i]) parts[i] = deviceBlock(device, bytes[i]);
    quantGroups.push_back(std::move(parts));
  }
  for (const auto& w : g.weights) {
    if (w.quant.empty()) continue;
    auto f = forms.find(w.name);
    if (f == forms.end() || dense.count(w.name)) {
      if (f == forms.end() && !dense.count(w.name))
        fail("weight '{}' ({}) is read by no GEMM or gather", w.name, w.quant);
      m.params[w.name] = o.randomWeights ? randomWeight(device, w, o.dtype, *o.randomWeights)
                                         : deviceCopy(device, store.load(w).cast(o.dtype));
      done += m.params[w.name].nbytes();
    }
    if (f == forms.end()) continue;
    const ops::QuantFormat& qf = *ops::quantFormat(w.quant);
    const int64_t N = w.shape.at(0), K = w.shape.at(1);
    // Random blocks (GpuExecutorOptions::randomWeights): values of about
    // +-0.01 in every format, block i depending on (seed, name, i) alone.
    std::vector<uint8_t> random;
    if (o.randomWeights)
      random = ops::randomBlocks(qf, N * K / qf.blockElems, splitmix(*o.randomWeights ^ std::hash<std::string>{}(w.name)),
                                 1e-4f);
    abi::Int8BlockPanels p =
        abi::packGpuInt8Rows(o.randomWeights ? random.data() : store.quantRows(w), K, N, qf, f->second);
    Impl::QuantWeight q{f->second, N, K};
    const int64_t rowBytes = f->second.nibbles ? K / 2 : K;
    // Its place in a joined group (joinQuantSiblingWeights), else its own
    // blocks.
    std::array<std::shared_ptr<const void>, 3> block;
    std::array<size_t, 3> offset{};
    if (auto it = joinedQuant.at.find(w.name); it != joinedQuant.at.end()) {
      block = quantGroups[it->second.first];
      offset = it->second.second;
    }
    const std::array<size_t, 3> bytes = quantFormBytes(f->second, N, K);
    auto place = [&](size_t i, const void* d, size_t n, ops::DType t, ops::Shape shape) {
      if (n != bytes.at(i)) fail("weight '{}': part {} of its GPU form has {} bytes, {} expected", w.name, i, n, bytes[i]);
      return deviceCopy(device, d, n, t, std::move(shape), block[i], offset[i]);
    };
    q.values = place(0, p.values.data(), p.values.size(), ops::DType::I32, {N, rowBytes / 4});
    std::vector<Tensor> parts;
    abi::int8ScaleBuffers(p, f->second, [&](const void* d, int64_t n) {
      const ops::DType t = f->second.superBlock ? ops::DType::F16 : ops::DType::F32;
      parts.push_back(place(parts.size() + 1, d, size_t(n) * ops::dtypeSize(t), t, {n}));
    });
    q.scales = parts.at(0);
    if (f->second.offsets) q.offsets = parts.at(1);
    done += q.values.nbytes() + q.scales.nbytes() + (q.offsets.defined() ? q.offsets.nbytes() : 0);
    if (!m.params.count(w.name)) m.params[w.name] = q.values;
    m.quant[w.name] = std::move(q);
  }
  for (const auto& w : g.weights) {
    if (!w.quant.empty()) continue;
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
  // 2048-token prompt; docs/cuda.md of bd79745 "First prompts").
  const int64_t ropeRows = std::clamp<int64_t>(g.meta.value("max_position_embeddings", (int64_t)4096), 256, 32768);
  for (const ops::NodeDef& n : g.nodes) {
    if ((n.op != "region.rope" && n.op != "region.rope_kv_write") || !n.attrs.is_object() || !n.attrs.contains("theta"))
      continue;
    const int64_t D = n.attrs.value("head_dim", (int64_t)0);
    if (D > 0 && D % 2 == 0) m.ropeTable(D, n.attrs["theta"].get<float>(), ropeRows);  // else the launch says what is wrong
  }
  // The GEMM weights' tensor maps, made now rather than by the first
  // launch of each TMA kernel: the first prompt that takes a kernel class
  // made its maps over every layer's weights (H100, 2026-11-25: 0.2-1.9
  // ms more than the prompts after it; docs/cuda.md of bd79745 "Weight maps at load").
  for (const ops::NodeDef& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    for (int64_t wi = 0; wi < op.weights; ++wi) {
      auto it = m.params.find(n.inputs[op.weight(wi)]);
      if (it == m.params.end() || it->second.rank() != 2 || m.quant.count(it->first))
        continue;  // not a weight (mapped on first use), or a quantized one (no tensor maps)
      const Tensor& w = it->second;
      kernels.prepareWeightMaps(m.dtName, op.weightsNK, {op.bias, op.residual, op.swiglu}, w.raw(), w.dim(0), w.dim(1));
    }
  }
}

GpuExecutor::~GpuExecutor() = default;

void GpuExecutor::setProfiling(bool on) const { impl_->profiling = on; }

std::map<std::string, GpuExecutor::ProfileRow> GpuExecutor::takeProfile() const {
  return std::exchange(impl_->profile, {});
}

const ops::GraphDef& GpuExecutor::graph() const { return impl_->g; }
Device& GpuExecutor::cacheDevice() const { return impl_->dev; }
ops::DType GpuExecutor::cacheDType() const { return impl_->dt; }
uint64_t GpuExecutor::weightBytes() const { return impl_->weightBytes; }
int64_t GpuExecutor::graphSteps() const { return impl_->graphSteps; }
int64_t GpuExecutor::rowsDownloaded() const { return impl_->rowsDownloaded; }

// What a step graph requires of the inputs: each one's type and shape,
GpuModel loadGpuModel(Artifact a, GpuExecutorOptions o) {
  std::unique_ptr<Device> device = openGpuDevice(a.target);
  return loadGpuModel(std::move(a), std::move(device), o);
}

GpuModel loadGpuModel(Artifact a, std::unique_ptr<Device> device, GpuExecutorOptions o) {
  if (!a.gpu()) fail("{}: compiled for {}, not for a GPU", a.graph.source, a.target);
  GpuModel m;
  m.device = std::move(device);
  m.kernels = GpuKernelSet::load(*m.device, a.kernelDir);
  o.dtype = ops::parseDType(a.dtype);
  m.exec = std::make_unique<GpuExecutor>(std::move(a.graph), *m.device, *m.kernels, o);
  return m;
}

}  // namespace strata::runtime
