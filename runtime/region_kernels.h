// Launches the generated kernels of a planned region graph (the "kernel"
// attributes that codegen's planCpuKernels writes; see codegen/targets/cpu/ModelKernels.h
// for the keys) through the kernel ABI (ops/abi.h). This is the one place that
// knows each region kernel's argument order and grid on the runtime side; the
// kernels come from a lookup (the in-process JIT or an artifact's shared
// library), so the runtime links no compiler.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "ops/abi.h"
#include "ops/graph_def.h"
#include "ops/quant.h"
#include "runtime/onednn_ops.h"
#include "ops/regions.h"
#include "ops/row_forms.h"

namespace strata::runtime {

class RegionKernels {
 public:
  // threads: programs of one launch run on this many threads (0: all cores).
  explicit RegionKernels(abi::KernelLookup lookup, int threads = 0);
  // Whether the node carries a planned kernel.
  static bool planned(const ops::NodeDef& n) { return n.attrs.contains("kernel"); }
  // Resolves the node's kernels once; throws naming the node when one is
  // missing or the attribute is malformed. `n` must outlive this object.
  void prepare(const ops::NodeDef& n);
  // Runs a prepared node on its inputs (in the order of n.inputs); checks
  // shapes and index ranges first and names the node in errors.
  std::vector<ops::Tensor> run(const ops::NodeDef& n, const std::vector<ops::Tensor>& in);
  // A quantized weight (ops/quant.h's blocks, rows of whole blocks): nodes
  // that read it by name get an undefined tensor for it among their
  // inputs, and the kernels read `rows` (which must outlive this object):
  // GEMMs through i8 panels packed on first use in the form the kernel
  // was planned for (abi::packInt8BlockPanels), embedding gathers by
  // dequantizing the rows they pick.
  struct QuantWeight {
    const ops::QuantFormat* format = nullptr;
    int64_t rows = 0, cols = 0;
    const uint8_t* data = nullptr;
  };
  void addQuantWeight(const std::string& name, QuantWeight w);

 private:
  struct Launch {
    abi::PackedKernel fn = nullptr;
    int64_t blockM = 1, blockN = 1;
    int64_t maxRows = 1;  // gemm decode / small variants: used up to this many rows
    int64_t packedWidth = 0;  // gemm: weights panel-packed this wide (0: as stored)
    bool groupHeads = false;  // paged attention decode: a program per KV head (AttentionKernelSpec::groupHeads)
    std::optional<abi::Int8BlockForm> int8Form;  // gemm: quantized weights read in this form
  };
  struct Resolved {
    Launch main;
    std::optional<Launch> decode, small, gather;
    std::optional<ops::ElementwiseLaunch> elementwise;  // read once at prepare
    bool dequantizeRows = false;  // region.embedding of a quantized table: no kernel, rows dequantized
    bool fallback = false;        // a node outside the regions: oneDNN where it runs it, else the reference kernel
  };
  Launch resolve(const ops::NodeDef& n, const nlohmann::json& a) const;
  void launch(const Launch& l, const abi::KernelArgs& args, int64_t gx, int64_t gy = 1, int64_t gz = 1) const;
  // cos/sin tables covering positions [0, positions) for (headDim, theta).
  ops::RopeTables ropeTables(int64_t headDim, float theta, int64_t positions);

  std::vector<ops::Tensor> gemm(const ops::NodeDef& n, const Resolved& r, const std::vector<ops::Tensor>& in);
  std::vector<ops::Tensor> elementwise(const Resolved& r, const std::vector<ops::Tensor>& in);
  std::vector<ops::Tensor> pagedAttention(const Resolved& r, const std::vector<ops::Tensor>& in);
  ops::Tensor gatherRows(const Launch& l, const ops::Tensor& table, const ops::Tensor& ids);
  // Weight `w` (a constant: gemm weights are initializers) panel-packed
  // `width` wide, made on first use and kept: the cache holds `w` too, so
  // its storage (the key) stays alive and is never another tensor's.
  const ops::Tensor& packedWeight(const ops::Tensor& w, bool nk, int64_t width);
  // The quantized weight input `i` of `n` is, if any.
  const QuantWeight* quantInput(const ops::NodeDef& n, int64_t i) const;
  // The i8 panels of `w`, `width` wide in `form`, made on first use and kept.
  const abi::Int8BlockPanels& int8Panels(const QuantWeight& w, int64_t width, abi::Int8BlockForm form);
  // Rows `ids` of a quantized embedding table, dequantized: [ids, cols].
  ops::Tensor dequantizedRows(const QuantWeight& w, const ops::Tensor& ids) const;

  abi::KernelLookup lookup_;
  int threads_;
  std::unique_ptr<OneDnnOps> onednn_;  // the nodes outside the regions (made on first use)
  std::map<const ops::NodeDef*, Resolved> nodes_;
  std::mutex ropeMutex_;
  std::map<std::pair<int64_t, float>, ops::RopeTables> rope_;
  std::mutex packMutex_;
  std::map<std::tuple<const void*, bool, int64_t, int64_t, int64_t>, std::pair<ops::Tensor, ops::Tensor>> packed_;
  std::map<std::string, QuantWeight> quant_;
  std::map<std::tuple<const void*, int64_t, int64_t, bool, bool, int64_t, bool>, abi::Int8BlockPanels> int8Packed_;
};

}  // namespace strata::runtime
