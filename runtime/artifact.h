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
  ops::GraphDef graph;       // nodes carry their "kernel" attributes
  abi::KernelLookup kernels;
  int64_t blockSize = 0;     // the KV cache block size the kernels were built for
  std::optional<std::string> tokenizer;
};

// Throws strata::Error naming the file on a missing or corrupt plan, an
// unknown format, kernels this CPU cannot run, or weights that moved.
Artifact loadArtifact(const std::string& dir);

}  // namespace strata::runtime
