#include "tools/cuda_model.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "ops/error.h"
#include "tools/kernel_cache.h"

namespace strata::tools {

namespace fs = std::filesystem;

namespace {

// The planned region graph and its kernel set.
struct Planned {
  ops::GraphDef graph;
  tile::CudaKernelSetSpec set;
};

Planned plan(const std::string& model, const std::string& dtype, int64_t blockSize, const tile::CudaModelTuning& tuning) {
  if (blockSize <= 0) fail("--block-size must be >= 1, got {}", blockSize);
  Planned p{graph::formRegions(models::loadModel(model)), {}};
  p.set = tile::cudaModelKernelSet(p.graph, dtype, blockSize, tuning);
  return p;
}

void write(Planned& p, const std::string& model, const std::string& arch, const std::string& dtype, int64_t blockSize,
           const fs::path& out, bool verbose) {
  const auto& s = p.set;
  if (verbose)
    std::fprintf(stderr,
                 "compiling %zu GEMM, %zu RMSNorm, %zu RoPE, %zu paged attention, %zu row gather, %zu KV write, "
                 "%zu elementwise, %zu argmax, %zu top-k and %zu repetition penalty kernels for cuda:%s (%s, KV block "
                 "size %lld) into %s...\n",
                 s.gemms.size(), s.norms.size(), s.ropes.size(), s.pagedDecodes.size() + s.pagedPrefills.size(),
                 s.gathers.size(), s.kvWrites.size(), s.elementwises.size(), s.argmaxes.size(), s.topks.size(),
                 s.penalties.size(), arch.c_str(), dtype.c_str(), (long long)blockSize, out.c_str());
  tile::writeCudaArtifact(p.graph, p.set, arch, dtype, blockSize, out.string(), models::sourceNotes(model));
}

}  // namespace

void writeCudaModel(const std::string& model, const std::string& arch, const std::string& dtype, int64_t blockSize,
                    const tile::CudaModelTuning& tuning, const fs::path& out, bool verbose) {
  Planned p = plan(model, dtype, blockSize, tuning);
  write(p, model, arch, dtype, blockSize, out, verbose);
}

CudaModelDir cachedCudaModel(const std::string& model, const std::string& dtype, int64_t blockSize, bool verbose,
                             const fs::path& cacheDir) {
  const std::string arch = "sm_90";
  Planned p = plan(model, dtype, blockSize, {});
  CudaModelDir r;
  std::error_code ec;
  if (!cacheDir.empty()) fs::create_directories(cacheDir, ec);
  if (cacheDir.empty() || ec) {
    std::string tmpl = (fs::temp_directory_path() / "strata-cuda-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) fail("cannot make a temporary folder for the GPU kernels under {}", tmpl);
    r = {tmpl, true, true};
    write(p, model, arch, dtype, blockSize, r.dir, verbose);
    return r;
  }
  const uint64_t key = fnv1a(compilerStamp(), fnv1a(fmt::format("cuda:{} {} {}", arch, dtype, blockSize),
                                                    fnv1a(ops::toJson(p.graph).dump())));
  r.dir = cacheDir / fmt::format("cuda-{:016x}", key);
  if (fs::is_regular_file(r.dir / "plan.json")) return r;  // plan.json is written last: complete
  if (verbose)
    std::fprintf(stderr, "the first run of this model on the GPU compiles it (minutes); later runs load it from %s\n",
                 r.dir.c_str());
  fs::path tmp = r.dir;
  tmp += fmt::format(".{}.tmp", ::getpid());
  fs::remove_all(tmp, ec);
  const auto t0 = std::chrono::steady_clock::now();
  write(p, model, arch, dtype, blockSize, tmp, verbose);
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
