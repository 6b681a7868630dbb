// Reads an artifact directory written by `strata compile` (codegen/Artifact.h
// documents the files): the planned region graph and its kernel library. Uses
// no compiler: this is how a machine without LLVM runs a model.
#pragma once
#include <optional>
#include <string>

#include "ops/abi.h"
#include "ops/graph_def.h"

namespace strata::runtime {

// Whether `path` is an artifact directory (holds plan.json).
bool isArtifact(const std::string& path);

struct Artifact {
  ops::GraphDef graph;       // cpu: nodes carry their "kernel" attributes
  std::string target;        // meta "kernels" target: a CPU (cpu-avx2, ...), cuda:<arch> or xe:<part>
  abi::KernelLookup kernels;  // cpu: the kernel library (GPU: empty; kernelDir holds the set)
  std::string kernelDir;     // GPU: the directory of kernels.json and its binaries (GpuKernelSet::load)
  std::string dtype;         // GPU: storage type the kernels were built for (bf16, f16)
  int64_t blockSize = 0;     // the KV cache block size the kernels were built for
  std::optional<std::string> tokenizer;
  // The --backend that runs it: "cuda", "xe" (both GPU kernel sets, run by
  // the GPU executor) or "cpu".
  std::string backend() const {
    return target.rfind("cuda:", 0) == 0 ? "cuda" : target.rfind("xe:", 0) == 0 ? "xe" : "cpu";
  }
  bool gpu() const { return backend() != "cpu"; }
};

struct ArtifactOptions {
  // Where the model's weight files are now, when given (the artifact
  // records absolute paths; each is looked up here by file name); a
  // tokenizer there (the compiled one's file name, or tokenizer.json)
  // replaces the recorded one.
  std::string weightsDir;
  // False: the weight files are not read (benchmarks with random weights),
  // so they need not exist.
  bool weightFiles = true;
};

// Throws strata::Error naming the file on a missing or corrupt plan, an
// unknown format, CPU kernels this CPU cannot run, or weights that moved.
Artifact loadArtifact(const std::string& dir, const ArtifactOptions& options = {});

}  // namespace strata::runtime
