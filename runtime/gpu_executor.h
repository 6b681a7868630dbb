// Runs a region graph (graph::formRegions; an artifact from `strata compile
// --target cuda:sm_90`) on a GPU device (runtime/device.h; written against
// the interface alone, so a new target adds a device and a kernel set, not
// an executor): weights, activations and the
// paged KV cache in device memory in one storage type (bf16 or f16; every
// kernel computes in f32), each region launched through the kernel set
// (runtime/gpu_kernels.h), the kernel picked by the node's shapes: GEMMs
// by weight layout, epilogue and rows (GpuKernelSet::gemmFor), RoPE by
// heads and head dim, attention by heads, KV heads, head dim and page size
// (paged decode when every sequence brings one token, paged prefill
// otherwise). Runtime only: no LLVM here.
//
// All work goes to the device's default stream in graph order; step
// inputs (ids, positions, tables) go up in one copy per step, and the
// logits come down (f32) at the end of run() — or, with runGreedy() and
// runSampled(), only the argmax kernel's per-split maxima and indices or
// the top-k kernel's candidates — which is the one
// synchronization point. q / k / v weights sit back to back, so one GEMM
// computes them at one row; up to 64 rows their outputs share one block,
// and one RoPE launch rotates q and k.
// Intermediate values come from a pool of device blocks reused across
// nodes and steps (stream order makes reuse safe). A step that repeats
// the last one's launches (decode steps of one batch) runs as one replay
// (Device::replayable: a CUDA graph on cuda) from then on
// (GpuExecutorOptions::graphs).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <memory>
#include <optional>

#include "runtime/artifact.h"
#include "runtime/gpu_kernels.h"
#include "runtime/graph_runner.h"

namespace strata::runtime {

struct GpuExecutorOptions {
  ops::DType dtype = ops::DType::BF16;  // storage of weights, activations, KV cache (bf16, f16)
  // Benchmarks: fill the weights on the host with this seed instead of
  // reading the weight files (norm weights 1, everything else uniform with
  // the standard deviation 0.02 of Hugging Face's Llama initializer); the
  // files need not exist, only their shapes matter.
  std::optional<uint64_t> randomWeights;
  // Progress of the weight upload on stderr.
  bool verbose = false;
  // Replay repeated steps as one device replay (a CUDA graph on cuda; GpuExecutor::Impl::
  // StepGraph): each step's launches are recorded as they are enqueued;
  // when a step's equal the last one's, they become a graph, which later
  // steps of the same input shapes run without running the nodes while
  // every decision their host values drive (indices, split counts, the
  // RoPE table) stays the same. Decode steps of one batch repeat until a
  // split count changes (the block tables' width is a power of two,
  // PagedModel::inputs). Llama-3-8B shape on the H100 (2026-11-25, three
  // rounds of 32 steps): batch 1 / 8 / 32 5.87-5.97 / 6.91-7.03 /
  // 7.53-7.56 -> 5.84-5.94 / 6.74-6.88 / 7.36-7.53 ms/token.
  bool graphs = true;
  // Debugging (strata-gpu run --dump-values): after each node, the outputs
  // whose names match `dumpMatch` (ECMAScript regular expression, searched)
  // come down as f32 into dumpDir/step-<n>/<name>.f32 (row-major; ':', '#'
  // and '/' in names become '_'), listed with their shapes in the step's
  // index.json. Steps then run node by node, without graphs.
  std::string dumpDir, dumpMatch;
};

class GpuExecutor final : public GraphRunner {
 public:
  // Checks every node (a region with a GPU kernel in `kernels` for its
  // shapes, inputs produced before use) and uploads the weights; throws
  // strata::Error naming the node or the weight. `device` and `kernels`
  // must outlive the executor.
  GpuExecutor(ops::GraphDef graph, Device& device, const GpuKernelSet& kernels, GpuExecutorOptions options = {});
  ~GpuExecutor() override;
  const ops::GraphDef& graph() const override;
  TensorMap run(const TensorMap& inputs) const override;
  std::vector<int64_t> runGreedy(const TensorMap& inputs, const std::string& name) const override;
  std::vector<int64_t> runSampled(const TensorMap& inputs, const std::string& name,
                                  std::span<const RowDraw> draws) const override;
  Device& cacheDevice() const override;
  ops::DType cacheDType() const override;
  // Bytes of weights on the device.
  uint64_t weightBytes() const;
  // Steps run as a replay so far (GpuExecutorOptions::graphs).
  int64_t graphSteps() const;
  // Whole rows of logits runSampled brought down to the host so far (draws
  // the device candidates do not settle; repetition penalties where the
  // kernel set has no penalty kernels).
  int64_t rowsDownloaded() const;

  // Profiling: GraphRunner's (each node between events, then a wait).
  void setProfiling(bool on) const override;
  std::map<std::string, ProfileRow> takeProfile() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An artifact compiled for the GPU, ready to run: the device, its kernel
// set and the executor (members in construction order, destroyed in
// reverse).
struct GpuModel {
  std::unique_ptr<Device> device;
  std::unique_ptr<GpuKernelSet> kernels;
  std::unique_ptr<GpuExecutor> exec;
};
// Opens the artifact's GPU (runtime/devices/registry.h: "no CUDA device:
// ..." without one), loads its kernel set and uploads its weights in the
// artifact's storage type (options.dtype is ignored).
GpuModel loadGpuModel(Artifact artifact, GpuExecutorOptions options = {});
// The same on `device` (a null device: the launch plan without a GPU).
GpuModel loadGpuModel(Artifact artifact, std::unique_ptr<Device> device, GpuExecutorOptions options = {});

}  // namespace strata::runtime
