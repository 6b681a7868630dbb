#include "codegen/targets/cuda/KernelSet.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "ops/error.h"
#include "ops/abi.h"

namespace strata::tile {

KernelSetSpec cudaModelKernelSet(ops::GraphDef& g, const std::string& dtype, int64_t pageSize,
                                     const CudaModelTuning& tuning) {
  auto blocking = [](const std::string& text, const char* what) {
    return text.empty() ? GemmBlocking{} : parseGemmBlocking(text, what);
  };
  const GemmBlocking gemv = blocking(tuning.gemvBlock, "--gemv-block"),
                     decode = blocking(tuning.decodeBlock, "--decode-block"),
                     medium = blocking(tuning.mediumBlock, "--medium-block");
  const std::string& pagedDecodeBlock = tuning.pagedDecodeBlock;
  if (dtype != "bf16" && dtype != "f16") fail("GPU models run in bf16 or f16, not '{}'", dtype);
  if (pageSize <= 0) fail("--block-size must be >= 1, got {}", pageSize);
  // The paged form's head counts (RoPE, KV write): only graphs with those
  // regions need it.
  auto paged = [&](const ops::NodeDef& n) -> const nlohmann::json& {
    if (!g.meta.contains("paged"))
      fail("{}: node '{}' ({}): the graph is not in paged form (run region formation first)", g.source, n.name, n.op);
    return g.meta["paged"];
  };
  KernelSetSpec set;
  set.argmaxes.push_back(cudaArgmaxSpec(dtype));  // greedy sampling of the logits
  set.topks.push_back(cudaTopKSpec(dtype));       // temperature / top-k / top-p sampling
  // A repetition penalty: the rows it changes are copied into f32, penalized
  // there and sampled by the f32 argmax / top-k.
  set.gathers.push_back(cudaGatherRowsSpec(dtype, "f32"));
  set.penalties = cudaRepetitionPenaltyKernelSet();
  set.argmaxes.push_back(cudaArgmaxSpec("f32"));
  set.topks.push_back(cudaTopKSpec("f32"));
  std::set<std::string> names;
  auto once = [&](const std::string& name) { return names.insert(name).second; };
  const std::map<std::string, abi::Int8BlockForm> quantForms = abi::gpuQuantWeightForms(g);
  for (ops::NodeDef& n : g.nodes) {
    const nlohmann::json& a = n.attrs;
    if (n.op == "region.gemm") {
      if (a.value("epilogue", "none") == "gelu" || a.value("epilogue", "none") == "geglu")
        fail("{}: node '{}' (region.gemm): the {} epilogue has no CUDA kernel yet (--backend cpu runs it)", g.source,
             n.name, a.value("epilogue", "none"));
      CudaGemmVariant v{dtype, a.value("layout", "kn") == "nk", a.value("bias", 0) != 0, a.value("residual", 0) != 0,
                        a.value("epilogue", "none") == "swiglu"};
      if (once(v.suffix()))
        for (GemmKernelSpec& s : cudaGemmKernels(v, decode, medium, {}, gemv)) set.gemms.push_back(s);
      // Its block-quantized weights' GEMVs, one set per GPU form.
      for (const std::string& in : n.inputs)
        if (auto f = quantForms.find(in); f != quantForms.end() && once(v.suffix() + abi::int8FormName(f->second)))
          for (GemmKernelSpec& s : cudaQuantGemvKernels(v, f->second)) set.gemms.push_back(s);
      if (a.value("rows", 0) != 0 && once("gather")) set.gathers.push_back(cudaGatherRowsSpec(dtype));
      // The norm prologue: the i8-activation GEMVs' quantize_rows kernels
      // take it (cudaQuantizeRowsKernels); the other kernels read rows the
      // RMSNorm kernel normalized first.
      if (a.value("norm", 0) != 0 && once("rms_norm")) set.norms.push_back(cudaRmsNormSpec(dtype));
    } else if (n.op == "region.embedding") {
      // A block-quantized table: its rows widened by the gather.
      if (auto f = n.inputs.empty() ? quantForms.end() : quantForms.find(n.inputs[0]); f != quantForms.end()) {
        if (once("gather" + abi::int8FormName(f->second))) set.gathers.push_back(cudaQuantGatherRowsSpec(f->second, dtype));
      } else if (once("gather")) {
        set.gathers.push_back(cudaGatherRowsSpec(dtype));
      }
    } else if (n.op == "region.rmsnorm") {
      if (once("rms_norm")) set.norms.push_back(cudaRmsNormSpec(dtype));
    } else if (n.op == "region.rope") {
      // The q and k projections: the graph's head counts at this head dim,
      // and both in one launch (q then k, as the q / k / v GEMMs write
      // them: runtime/gpu_executor.cpp).
      const int64_t d = a.at("head_dim").get<int64_t>(), heads = paged(n).at("heads").get<int64_t>(),
                    kvHeads = paged(n).at("kv_heads").get<int64_t>();
      for (RopeKernelSpec s : {cudaRopeSpec(heads, d, dtype), cudaRopeSpec(kvHeads, d, dtype),
                               cudaJoinedRopeSpec(heads, kvHeads, d, dtype)})
        if (once(s.name)) set.ropes.push_back(s);
    } else if (n.op == "region.rope_kv_write") {
      // graph-fuse-rope-kv-write: q and k rotated and k / v written in one
      // launch.
      const int64_t d = a.at("head_dim").get<int64_t>(), heads = paged(n).at("heads").get<int64_t>(),
                    kvHeads = paged(n).at("kv_heads").get<int64_t>();
      if (const int64_t r = a.value("rotary_dim", d); r != d)
        fail("{}: node '{}' (region.rope_kv_write): partial rotary ({} of {} head dims) has no CUDA kernel yet", g.source, n.name, r, d);
      RopeKvWriteKernelSpec s = cudaRopeKvWriteSpec(heads, kvHeads, d, pageSize, dtype);
      if (once(s.name)) set.ropeKvWrites.push_back(s);
    } else if (n.op == "region.kv_write") {
      const int64_t d = paged(n).at("head_dim").get<int64_t>(), kvHeads = paged(n).at("kv_heads").get<int64_t>();
      std::string name = fmt::format("kv_write_{}_kv{}_d{}_p{}", dtype, kvHeads, d, pageSize);
      if (once(name)) set.kvWrites.push_back({name, kvHeads, d, pageSize, dtype});
    } else if (n.op == "region.paged_attention") {
      const int64_t h = a.at("heads").get<int64_t>(), kv = a.at("kv_heads").get<int64_t>(),
                    d = a.at("head_dim").get<int64_t>();
      const float scale = a.at("scale").get<float>();
      AttentionKernelSpec dec = cudaPagedDecodeSpec(h, kv, d, pageSize, dtype),
                          pre = cudaPagedPrefillSpec(h, kv, d, pageSize, dtype);
      dec.scale = pre.scale = scale;
      applyPagedDecodeBlocking(dec, pagedDecodeBlock);
      if (once(dec.name)) {
        set.pagedDecodes.push_back(dec);
        set.pagedPrefills.push_back(pre);
        if (hasFewProgramsVariant(pre)) {
          set.pagedPrefills.push_back(cudaPagedPrefillSpec(h, kv, d, pageSize, dtype, true));
          set.pagedPrefills.back().scale = scale;
        }
      } else {
        for (const AttentionKernelSpec& s : set.pagedDecodes)
          if (s.name == dec.name && s.scale != scale)
            fail("node '{}' ({}): attention scale {} differs from another layer's {}", n.name, n.op, scale, s.scale);
      }
    } else if (n.op == "region.elementwise") {
      addElementwiseRegionKernel(set, g, n, dtype, cudaElementwiseBlocking);
    } else {
      fail("{}: node '{}' ({}) has no GPU kernel yet (the GPU backend runs embedding, RMSNorm, GEMM, RoPE, KV write, "
           "paged attention and fused elementwise regions)",
           g.source, n.name, n.op);
    }
  }
  return set;
}

}  // namespace strata::tile
