#include "codegen/targets/cpu/ModelKernels.h"

#include <fmt/format.h>

#include <map>

#include "codegen/AttentionKernel.h"
#include "codegen/targets/cpu/Backend.h"
#include "codegen/DataMovementKernels.h"
#include "codegen/ElementwiseKernel.h"
#include "codegen/GemmKernel.h"
#include "codegen/NormRopeKernels.h"
#include "codegen/UArch.h"
#include "ops/abi.h"
#include "ops/error.h"

namespace strata::tile {

using nlohmann::json;

namespace {

// Collects kernels; a kernel whose spec key was seen before is not emitted
// again and keeps its first name.
class KernelSet {
 public:
  // `emit(name)` returns the kernel's tile IR under that name.
  template <typename Emit>
  std::string add(const std::string& kind, const std::string& key, Emit emit) {
    auto [it, fresh] = names_.try_emplace(kind + "|" + key, kind + "_" + std::to_string(names_.size()));
    if (fresh) {
      ir_ += emit(it->second);
      order_.push_back(it->second);
    }
    return it->second;
  }
  std::string module() const { return "module {\n" + ir_ + "}\n"; }
  const std::vector<std::string>& names() const { return order_; }

 private:
  std::map<std::string, std::string> names_;
  std::vector<std::string> order_;
  std::string ir_;
};

json launchAttr(const std::string& name, int64_t blockM, int64_t blockN) {
  return {{"name", name}, {"block_m", blockM}, {"block_n", blockN}};
}

struct Planner {
  const ops::GraphDef& g;
  std::string target;
  int64_t blockSize;
  KernelSet set;

  int64_t attr(const ops::NodeDef& n, const char* k) const {
    if (!n.attrs.contains(k)) fail("{}: node '{}' ({}) has no '{}' attribute", g.source, n.name, n.op, k);
    return n.attrs.at(k).get<int64_t>();
  }
  // Static last dim of a value (feature widths are static in every region graph).
  int64_t lastDim(const ops::NodeDef& n, const std::string& value) const {
    auto it = g.values.find(value);
    if (it == g.values.end() || !it->second.shapeKnown || it->second.shape.empty() || !it->second.shape.back().isStatic())
      fail("{}: node '{}' ({}): the width of '{}' is not known statically", g.source, n.name, n.op, value);
    return it->second.shape.back().value;
  }

  json elementwise(const ops::NodeDef& n) {
    ElementwiseRegionPlan p = planElementwiseRegion(g, n, cpuRowBlockN(target));
    std::string key = elementwiseKernelKey(p.spec);
    std::string name = set.add("elementwise", key, [&](const std::string& nm) {
      p.spec.name = nm;
      return emitElementwiseKernel(p.spec);
    });
    json k = launchAttr(name, 1, p.spec.blockN);
    k.update(elementwiseLaunchContract(p));
    return k;
  }

  // Rows of an f32 activation, or of a weight table in `dtype` (widened).
  std::string gatherRows(const std::string& dtype = "f32") {
    GatherRowsKernelSpec s = cpuGatherRowsSpec(target);
    s.dtype = dtype;
    s.outDtype = "f32";
    return set.add("gather_rows", fmt::format("{}|{}", s.blockN, dtype), [&](const std::string& name) {
      s.name = name;
      return emitGatherRowsKernel(s);
    });
  }

  // The storage type of weight `name` (f32 for values that are not weights;
  // "i8" for llama.cpp's block-quantized formats, which the kernels read as
  // i8 panels: abi::Int8BlockForm).
  std::string weightType(const std::string& name) const {
    if (quantForm(name)) return "i8";
    for (const auto& w : g.weights)
      if (w.name == name) return ops::dtypeName(w.dtype);
    return "f32";
  }
  // The i8 panel form of block-quantized weight `name` (nullopt for other
  // values).
  std::optional<abi::Int8BlockForm> quantForm(const std::string& name) const {
    for (const auto& w : g.weights)
      if (w.name == name && !w.quant.empty()) return abi::int8BlockForm(w.quant);
    return std::nullopt;
  }

  json gemm(const ops::NodeDef& n) {
    std::string layout = n.attrs.value("layout", "kn"), epi = n.attrs.value("epilogue", "none");
    if ((layout != "kn" && layout != "nk") || (epi != "none" && epi != "swiglu" && epi != "gelu" && epi != "geglu"))
      fail("{}: node '{}' (region.gemm): layout '{}' / epilogue '{}' unknown", g.source, n.name, layout, epi);
    if (n.attrs.value("norm", 0) != 0)
      fail("{}: node '{}' (region.gemm): the RMSNorm prologue (graph-fuse-gemm-norm, the CUDA target's fusion) has no "
           "CPU kernel; the CPU target forms its regions without it",
           g.source, n.name);
    // Every weight of the node (inputs 1..weights, ops/gemm_region.h) in one
    // storage type: one kernel reads them.
    const int64_t weights = attr(n, "weights");
    if (weights < 1 || weights >= (int64_t)n.inputs.size())
      fail("{}: node '{}' (region.gemm): {} weights for {} inputs", g.source, n.name, weights, n.inputs.size());
    std::string wdt = weightType(n.inputs[1]);
    for (int64_t j = 2; j <= weights; ++j)
      if (weightType(n.inputs[j]) != wdt)
        fail("{}: node '{}' (region.gemm): its weights differ in storage type", g.source, n.name);
    // Block-quantized weights: one form that fits each (a Q4_K_M file puts
    // Q4_K and Q6_K weights in one q / k / v node).
    abi::Int8BlockForm form;
    if (wdt == "i8") {
      if (layout != "nk")
        fail("{}: node '{}' (region.gemm): quantized weights are read as stored, [N, K] (layout nk), not {}", g.source,
             n.name, layout);
      std::vector<abi::Int8BlockForm> forms;
      for (int64_t j = 1; j <= weights; ++j) forms.push_back(*quantForm(n.inputs[j]));
      form = abi::commonInt8Form(forms);
    }
    json k;
    // The general kernel, then the variants the runtime picks by rows
    // (the fewest max_rows >= M): small problems, decode.
    for (int64_t rows : {int64_t(0), kCpuSmallRows, int64_t(1)}) {
      GemmKernelSpec s = cpuGemmSpec(target, layout == "nk", rows, wdt, epi == "swiglu" || epi == "geglu");
      s.quantBlock = form.block;
      s.quantOffsets = form.offsets;
      s.quantNibbles = form.nibbles;
      s.quantSuper = form.superBlock;
      s.quantSubScales = form.subScales;
      s.bias = attr(n, "bias") != 0;
      if (rows > 1 && s.swiglu) continue;  // SwiGLU walks K whole: no chunks to prefetch
      s.residual = attr(n, "residual") != 0;
      s.gelu = epi == "gelu" || epi == "geglu";
      std::string key = fmt::format("{}|{}|{}|{}|{}x{}x{}x{}|{}|{}|{}|{}|{}|{}", layout, s.bias, s.swiglu, s.residual,
                                    s.blockM, s.blockN, s.blockK, s.numWarps, s.tiling, s.packedB, s.microM, s.chunkK,
                                    s.prefetchNext, wdt);
      if (s.int8Blocks()) key += fmt::format("|{}|{}|{}|{}|{}", s.quantBlock, s.quantOffsets, s.quantNibbles, s.quantSuper,
                                             s.quantSubScales);
      if (s.gelu) key += "|gelu";
      std::string name = set.add(s.name, key, [&](const std::string& nm) {
        s.name = nm;
        return emitGemmKernel(s);
      });
      json l = launchAttr(name, s.blockM, s.blockN);
      // All variants read the same panels (blockN wide), packed once.
      if (s.packedB) l["packed_b"] = s.blockN;
      // ... in the i8 panels' form (abi::Int8BlockForm).
      if (s.int8Blocks()) l["int8_blocks"] = {{"block", s.quantBlock},       {"offsets", s.quantOffsets},
                                               {"nibbles", s.quantNibbles},    {"super_block", s.quantSuper},
                                               {"sub_scales", s.quantSubScales}};
      // The 1-row blocking for one row only: from 2 rows on, the 6-row
      // block's one pass over the weights wins (docs/codegen.md).
      if (rows) l["max_rows"] = rows;
      if (!rows) k = l;
      else k[rows == 1 ? "decode" : "small"] = l;
    }
    if (attr(n, "rows") != 0) k["gather"] = launchAttr(gatherRows(), 1, cpuGatherRowsSpec(target).blockN);
    return k;
  }

  json attention(const ops::NodeDef& n) {
    int64_t heads = attr(n, "heads"), kvHeads = attr(n, "kv_heads"), headDim = attr(n, "head_dim");
    float scale = n.attrs.at("scale").get<float>();
    json k;
    for (int64_t rows : {2, 1}) {
      // Decode steps: a program per KV head, its query heads as rows.
      const int64_t lanes = uarchFor(target).vectorBytes / 4;
      AttentionKernelSpec s = rows == 1 ? cpuGroupedDecodeSpec(heads, kvHeads, headDim, scale, blockSize, lanes)
                                        : cpuAttentionSpec(heads, kvHeads, headDim, scale, blockSize, rows, lanes);
      std::string key = fmt::format("{}|{}|{}|{:a}|{}x{}|{}", heads, kvHeads, headDim, scale, s.blockM, s.blockN,
                                    s.groupHeads);
      std::string name = set.add("paged_attention", key, [&](const std::string& nm) {
        s.name = nm;
        return emitAttentionKernel(s);
      });
      json l = launchAttr(name, s.blockM, s.blockN);
      if (s.groupHeads) l["group_heads"] = true;
      if (rows > 1) k = l;
      else k["decode"] = l;
    }
    return k;
  }

  json node(const ops::NodeDef& n) {
    if (n.op == "region.gemm") return gemm(n);
    if (n.op == "region.paged_attention") return attention(n);
    if (n.op == "region.embedding") {
      // A quantized table: the runtime dequantizes the rows it picks (a few
      // per step) with ops/quant.h.
      if (quantForm(n.inputs.at(0))) return json{{"dequantize_rows", true}};
      GatherRowsKernelSpec s = cpuGatherRowsSpec(target);
      return launchAttr(gatherRows(weightType(n.inputs.at(0))), 1, s.blockN);
    }
    if (n.op == "region.elementwise") return elementwise(n);
    if (n.op == "region.rmsnorm" || n.op == "region.layernorm") {
      const bool layer = n.op == "region.layernorm";
      RmsNormKernelSpec s = cpuRmsNormSpec(target);
      std::string name = set.add(layer ? "layer_norm" : "rms_norm", std::to_string(s.blockN), [&](const std::string& nm) {
        s.name = nm;
        return layer ? emitLayerNormKernel(s) : emitRmsNormKernel(s);
      });
      return launchAttr(name, 1, s.blockN);
    }
    if (n.op == "region.rope") {
      RopeKernelSpec s;
      s.headDim = attr(n, "head_dim");
      int64_t width = lastDim(n, n.inputs.at(0));
      if (s.headDim <= 0 || width % s.headDim)
        fail("{}: node '{}' (region.rope): width {} is not a multiple of head_dim {}", g.source, n.name, width, s.headDim);
      s.heads = width / s.headDim;
      s.rotaryDim = n.attrs.value("rotary_dim", (int64_t)0);
      if (s.rotaryDim == s.headDim) s.rotaryDim = 0;
      std::string key = fmt::format("{}x{}", s.heads, s.headDim) + (s.rotaryDim ? fmt::format("r{}", s.rotaryDim) : "");
      std::string name = set.add("rope", key, [&](const std::string& nm) {
        s.name = nm;
        return emitRopeKernel(s);
      });
      return launchAttr(name, 1, s.headDim);
    }
    if (n.op == "region.kv_write") {
      if (!g.meta.contains("paged")) fail("{}: node '{}' (region.kv_write) in a graph without paged metadata", g.source, n.name);
      const json& p = g.meta.at("paged");
      KvWriteKernelSpec s;
      s.kvHeads = p.at("kv_heads").get<int64_t>();
      s.headDim = p.at("head_dim").get<int64_t>();
      s.blockSize = blockSize;
      std::string name = set.add("kv_write", fmt::format("{}x{}x{}", s.kvHeads, s.headDim, s.blockSize),
                                 [&](const std::string& nm) {
                                   s.name = nm;
                                   return emitKvWriteKernel(s);
                                 });
      return launchAttr(name, 1, s.blockSize);
    }
    // Outside the regions: the runtime runs it through oneDNN where that
    // covers it, else on its reference kernel (runtime/onednn_ops.h).
    if (n.op.rfind("region.", 0) != 0) return json{{"engine", "fallback"}};
    fail("{}: node '{}' ({}) is a region the CPU kernels do not cover (run it with --backend reference)", g.source,
         n.name, n.op);
  }
};

}  // namespace

KernelPlan planCpuKernels(ops::GraphDef graph, const CpuPlanOptions& options) {
  if (options.blockSize <= 0) fail("KV cache block size must be >= 1, got {}", options.blockSize);
  for (const auto& w : graph.weights) {
    if (!w.quant.empty() && !abi::int8BlockForm(w.quant))
      fail("{}: weight '{}' is {}, a block format the CPU kernels do not read (--backend reference neither)",
           graph.source, w.name, w.quant);
    if (w.dtype != ops::DType::F32 && w.dtype != ops::DType::F16 && w.dtype != ops::DType::BF16)
      fail("{}: weight '{}' is {}; the CPU kernels take f32, f16 and bf16 weights (use --backend reference)",
           graph.source, w.name, ops::dtypeName(w.dtype));
  }
  for (const auto& in : graph.inputs)
    if (in.name.rfind("kv_cache.", 0) == 0 && in.dtype != ops::DType::F32)
      fail("{}: KV cache '{}' is {}; the CPU kernels take an f32 cache", graph.source, in.name, ops::dtypeName(in.dtype));
  Planner p{graph, options.target.empty() ? hostCpuTarget() : options.target, options.blockSize, {}};
  std::vector<json> attrs;
  for (const auto& n : graph.nodes) attrs.push_back(p.node(n));
  for (size_t i = 0; i < graph.nodes.size(); ++i) graph.nodes[i].attrs["kernel"] = attrs[i];
  graph.meta["kernels"] = {{"target", p.target}, {"block_size", options.blockSize}};
  return {std::move(graph), p.set.module(), p.set.names()};
}

}  // namespace strata::tile
