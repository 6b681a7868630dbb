#include "tools/load_model.h"

#include <filesystem>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "runtime/artifact.h"
#include "runtime/devices/registry.h"
#include "tools/cpu_model.h"
#include "tools/cuda_model.h"
#include "tools/kernel_cache.h"

namespace strata::tools {

// An artifact (from strata compile, or the kernel cache) ready to run.
namespace {

void loadArtifact(LoadedModel& l, const RunOpts& o, const std::string& dir) {
  runtime::Artifact a = runtime::loadArtifact(dir, {o.weightsDir});
  checkArtifactRun(o, a);
  l.blockSize = a.blockSize;
  if (a.tokenizer) {
    l.tok = models::Tokenizer::load(*a.tokenizer);
    l.tokenizerPath = *a.tokenizer;
  }
  if (a.gpu()) {
    l.gpu = runtime::loadGpuModel(std::move(a), {.verbose = !o.json});
    l.exec = l.gpu.exec.get();
  } else {
    l.exec = &l.cpu.emplace(std::move(a.graph), std::move(a.kernels));
  }
}

}  // namespace

LoadedModel loadForRun(const RunOpts& o) {
  LoadedModel l;
  l.blockSize = o.blockSize;
  if (runtime::isArtifact(o.model)) {
    loadArtifact(l, o, o.model);
    return l;
  }
  if (!o.weightsDir.empty()) fail("--weights moves an artifact's weight files; {} is not an artifact", o.model);
  if (o.backend == "cuda" || o.backend == "xe") {
    // Compiled for this machine's GPU first (once: the kernel cache keeps
    // it), after checking there is a GPU it can run on ("no CUDA device:
    // ...", "no Level Zero device: ..." where there is none).
    std::string target = "cuda:sm_90";
    {
      auto device = runtime::openGpuDevice(o.backend == "xe" ? "xe" : target);
      if (o.backend == "cuda") {
        if (std::string why = device->cannotRun("sm_90"); !why.empty())
          fail("--backend cuda: strata compiles for sm_90 (Hopper): {}", why);
      } else {
        // The xe part this GPU is (Data Center GPU Max: pvc; Arc B-series
        // and Lunar Lake: bmg).
        const std::string why = device->cannotRun("xe:pvc");
        target = why.empty() ? "xe:pvc" : device->cannotRun("xe:bmg").empty() ? "xe:bmg" : "";
        if (target.empty()) fail("--backend xe: strata compiles for xe:pvc and xe:bmg: {}", why);
      }
    }
    GpuModelDir m = cachedGpuModel(o.model, target, "bf16", o.blockSize, !o.json, kernelCacheDir());
    try {
      loadArtifact(l, o, m.dir.string());
    } catch (...) {
      if (m.temporary) std::filesystem::remove_all(m.dir);
      throw;
    }
    if (m.temporary) std::filesystem::remove_all(m.dir);  // loaded: the files are no longer read
    return l;
  }
  ops::GraphDef g = graph::formRegions(models::loadModel(o.model));
  if (auto t = models::findTokenizer(o.model)) {
    l.tok = models::Tokenizer::load(*t);
    l.tokenizerPath = *t;
  }
  if (o.backend == "cpu") {
    CompiledCpuModel m = compileCpuModel(std::move(g), o.blockSize, !o.json);
    l.exec = &l.cpu.emplace(std::move(m.graph), std::move(m.kernels));
  } else {
    l.exec = &l.cpu.emplace(std::move(g));
  }
  return l;
}


}  // namespace strata::tools
