// A model compiled for a GPU: what `strata compile MODEL --target
// cuda:sm_90|xe:pvc|xe:bmg` writes, and what `strata run MODEL --backend
// cuda|xe` compiles once for the GPU it finds into the kernel cache
// (tools/kernel_cache.h) and then runs as an artifact.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "codegen/targets/cpu/KernelSet.h"
#include "codegen/targets/cuda/KernelSet.h"
#include "graph/Pipeline.h"
#include "ops/graph_def.h"

namespace strata::tools {

// Writes `model` (an HF folder or ONNX file) compiled for cuda:`arch` into
// the artifact folder `out` (codegen/Artifact.h: plan.json with the weights
// by reference, the kernels for every region), noting the model's tokenizer
// and folder; says what it compiles on stderr when `verbose`.
void writeCudaModel(const std::string& model, const std::string& arch, const std::string& dtype, int64_t blockSize,
                    const tile::CudaModelTuning& tuning, const std::filesystem::path& out, bool verbose);

// `model` (an HF folder, ONNX or GGUF file) as a GPU artifact's region
// graph: loaded, its 16-bit embedding rows used as gathered (a GPU artifact
// stores every activation in its --dtype, so the builder's widening of
// them to f32 would be a copy kernel a step), formed into regions with
// `options` (the target's fusions).
ops::GraphDef gpuRegionGraph(const std::string& model, const graph::RegionOptions& options);

// Writes `model` compiled for Intel Xe (`target`: xe:pvc, xe:bmg) into the
// artifact folder `out` (codegen/targets/xe/KernelSet.h), noting its
// tokenizer and folder; says what it compiles on stderr when `verbose`.
void writeXeModel(const std::string& model, const std::string& target, const std::string& dtype, int64_t blockSize,
                  const std::filesystem::path& out, bool verbose);

struct GpuModelDir {
  std::filesystem::path dir;  // the artifact folder
  bool compiled = false;      // compiled by this call (not found in the cache)
  bool temporary = false;     // a folder of its own (no cache): the caller removes it once loaded
};

// `model` compiled for the GPU `target` (cuda:sm_90, xe:pvc, xe:bmg) with
// `dtype` storage and KV blocks of `blockSize`, from `cacheDir`: a folder
// keyed by the planned region graph (which names the weight files and
// their byte ranges), the target, the storage type, the block size and
// this binary, compiled first when absent (under a temporary name, renamed
// once complete: a crashed or concurrent compile leaves no half artifact).
// An empty `cacheDir` (the cache off) compiles into a new temporary folder.
GpuModelDir cachedGpuModel(const std::string& model, const std::string& target, const std::string& dtype,
                           int64_t blockSize, bool verbose, const std::filesystem::path& cacheDir);

}  // namespace strata::tools
