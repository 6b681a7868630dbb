#include "runtime/gpu_executor_impl.h"

namespace strata::runtime {

// and the KV cache tensors themselves.
std::optional<std::vector<GpuExecutor::Impl::InputSig>> GpuExecutor::Impl::signature(const TensorMap& inputs) const {
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

bool GpuExecutor::Impl::takesGraph(const TensorMap& inputs) const {
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

void GpuExecutor::Impl::runGraph() const {
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
  sg.graph->launch();
  ++graphSteps;
}

// GpuExecutorOptions::dumpDir: node `n`'s outputs that match, into
// `folder`, each noted in the step's `index`.
void GpuExecutor::Impl::dumpValues(const std::string& folder, const ops::NodeDef& n, const V& outs,
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
std::map<std::string, Tensor> GpuExecutor::Impl::execute(const TensorMap& inputs, Tensor& staged) const {
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
  // GpuExecutorOptions::dumpDir: this step's folder and index.
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
          ProfileRow& row = m.profile[profileLabel(n, args.size() > 3 && args[3] ? &args[3]->host : nullptr)];
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
                                    StepGraph{nullptr, std::move(*sig), std::move(stepGuards), staged, outs,
                                              std::move(pinned), std::move(at), m.dev.stagingHost(staged.nbytes())}};
    }
  }
  return outs;
}

TensorMap GpuExecutor::run(const TensorMap& inputs) const {
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

}  // namespace strata::runtime
