#include "tools/cuda_model.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "ops/error.h"
#include "codegen/targets/xe/KernelSet.h"
#include "tools/kernel_cache.h"

namespace strata::tools {

namespace fs = std::filesystem;

namespace {

// The planned region graph and its kernel set for a GPU target
// ("cuda:sm_90", "xe:pvc", "xe:bmg").
struct Planned {
  std::string target;
  ops::GraphDef graph;
  tile::KernelSetSpec set;
};

bool isXe(const std::string& target) { return target.rfind("xe:", 0) == 0; }

Planned plan(const std::string& model, const std::string& target, const std::string& dtype, int64_t blockSize,
             const tile::CudaModelTuning& tuning) {
  if (blockSize <= 0) fail("--block-size must be >= 1, got {}", blockSize);
  Planned p{target, {}, {}};
  if (isXe(target)) {
    // No RMSNorm prologue: the xe GEMM has none.
    p.graph = gpuRegionGraph(model, {.ropeKvWrite = true});
    p.set = tile::xeModelKernelSet(p.graph, dtype, blockSize);
  } else {
    p.graph = gpuRegionGraph(model, {.normPrologue = !tuning.unfusedNorms, .ropeKvWrite = !tuning.unfusedRopeKvWrite});
    p.set = tile::cudaModelKernelSet(p.graph, dtype, blockSize, tuning);
  }
  return p;
}

void write(Planned& p, const std::string& model, const std::string& dtype, int64_t blockSize, const fs::path& out,
           bool verbose) {
  const auto& s = p.set;
  if (verbose)
    std::fprintf(stderr,
                 "compiling %zu GEMM, %zu RMSNorm, %zu RoPE, %zu paged attention, %zu row gather, %zu KV write, "
                 "%zu RoPE + KV write, %zu elementwise, %zu argmax, %zu top-k and %zu repetition penalty kernels for "
                 "%s (%s, KV block size %lld) into %s...\n",
                 s.gemms.size(), s.norms.size(), s.ropes.size(), s.pagedDecodes.size() + s.pagedPrefills.size(),
                 s.gathers.size(), s.kvWrites.size(), s.ropeKvWrites.size(), s.elementwises.size(), s.argmaxes.size(),
                 s.topks.size(), s.penalties.size(), p.target.c_str(), dtype.c_str(), (long long)blockSize, out.c_str());
  if (isXe(p.target))
    tile::writeXeArtifact(p.graph, p.set, p.target, dtype, blockSize, out.string(), models::sourceNotes(model));
  else
    tile::writeCudaArtifact(p.graph, p.set, p.target.substr(5), dtype, blockSize, out.string(),
                            models::sourceNotes(model));
}

// A GPU artifact stores every activation in its --dtype, so the builder's
// widening of a 16-bit embedding's rows to f32 (Gather -> Cast to f32,
// models/llama_builder.cpp) would be a copy kernel per step: its uses take
// the gathered rows directly.
ops::GraphDef withoutEmbeddingWidening(ops::GraphDef g) {
  std::map<std::string, ops::DType> weightTypes;
  for (const auto& w : g.weights) weightTypes[w.name] = w.dtype;
  std::set<std::string> sixteenBitRows;
  for (const auto& n : g.nodes)
    if (n.op == "Gather" && !n.inputs.empty() && weightTypes.count(n.inputs[0]) &&
        weightTypes[n.inputs[0]] != ops::DType::F32)
      sixteenBitRows.insert(n.outputs.at(0));
  std::map<std::string, std::string> alias;
  std::vector<ops::NodeDef> kept;
  for (auto& n : g.nodes) {
    if (n.op == "Cast" && n.inputs.size() == 1 && sixteenBitRows.count(n.inputs[0]) && n.attrs.value("to", "") == "f32") {
      alias[n.outputs.at(0)] = n.inputs[0];
      continue;
    }
    for (auto& in : n.inputs)
      if (auto it = alias.find(in); it != alias.end()) in = it->second;
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return g;
}

}  // namespace

ops::GraphDef gpuRegionGraph(const std::string& model, const graph::RegionOptions& options) {
  return graph::formRegions(withoutEmbeddingWidening(models::loadModel(model)), options);
}

void writeXeModel(const std::string& model, const std::string& target, const std::string& dtype, int64_t blockSize,
                  const fs::path& out, bool verbose) {
  Planned p = plan(model, target, dtype, blockSize, {});
  write(p, model, dtype, blockSize, out, verbose);
}

void writeCudaModel(const std::string& model, const std::string& arch, const std::string& dtype, int64_t blockSize,
                    const tile::CudaModelTuning& tuning, const fs::path& out, bool verbose) {
  Planned p = plan(model, "cuda:" + arch, dtype, blockSize, tuning);
  write(p, model, dtype, blockSize, out, verbose);
}

GpuModelDir cachedGpuModel(const std::string& model, const std::string& target, const std::string& dtype,
                           int64_t blockSize, bool verbose, const fs::path& cacheDir) {
  Planned p = plan(model, target, dtype, blockSize, {});
  GpuModelDir r;
  std::error_code ec;
  if (!cacheDir.empty()) fs::create_directories(cacheDir, ec);
  if (cacheDir.empty() || ec) {
    std::string tmpl = (fs::temp_directory_path() / "strata-gpu-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) fail("cannot make a temporary folder for the GPU kernels under {}", tmpl);
    r = {tmpl, true, true};
    write(p, model, dtype, blockSize, r.dir, verbose);
    return r;
  }
  const uint64_t key = fnv1a(compilerStamp(), fnv1a(fmt::format("{} {} {}", target, dtype, blockSize),
                                                    fnv1a(ops::toJson(p.graph).dump())));
  r.dir = cacheDir / fmt::format("{}-{:016x}", isXe(target) ? "xe" : "cuda", key);
  if (fs::is_regular_file(r.dir / "plan.json")) return r;  // plan.json is written last: complete
  if (verbose)
    std::fprintf(stderr, "the first run of this model on the GPU compiles it (minutes); later runs load it from %s\n",
                 r.dir.c_str());
  fs::path tmp = r.dir;
  tmp += fmt::format(".{}.tmp", ::getpid());
  fs::remove_all(tmp, ec);
  const auto t0 = std::chrono::steady_clock::now();
  write(p, model, dtype, blockSize, tmp, verbose);
  fs::rename(tmp, r.dir, ec);  // atomic; a concurrent run that finished first keeps its folder
  if (ec) {
    fs::remove_all(tmp, ec);
    if (!fs::is_regular_file(r.dir / "plan.json")) fail("cannot move the compiled GPU kernels into {}", r.dir.string());
  }
  r.compiled = true;
  if (verbose)
    std::fprintf(stderr, "compiled in %.0f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return r;
}

}  // namespace strata::tools
