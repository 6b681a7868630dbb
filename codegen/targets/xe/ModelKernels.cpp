#include <set>

#include <fmt/format.h>

#include "codegen/targets/xe/KernelSet.h"
#include "ops/abi.h"
#include "ops/error.h"

namespace strata::tile {

KernelSetSpec xeModelKernelSet(ops::GraphDef& g, const std::string& dtype, int64_t pageSize) {
  if (dtype != "bf16" && dtype != "f16") fail("Intel Xe models run in bf16 or f16, not '{}'", dtype);
  if (pageSize <= 0 || pageSize % 16)
    fail("--block-size {}: the xe paged attention takes a page a step, so pages hold a multiple of 16 tokens", pageSize);
  auto paged = [&](const ops::NodeDef& n) -> const nlohmann::json& {
    if (!g.meta.contains("paged"))
      fail("{}: node '{}' ({}): the graph is not in paged form (run region formation first)", g.source, n.name, n.op);
    return g.meta["paged"];
  };
  // The xe lowering's tiles are multiples of 16 columns: RoPE rotates a
  // head's two halves as such tiles, or whole heads where a half is not
  // (head dim 16, 48: RopeKernelSpec::wholeHeads).
  auto ropeHeadDim = [&](const ops::NodeDef& n, int64_t d) {
    if (d % 16)
      fail("{}: node '{}' ({}): head dim {}: RoPE has no xe kernel for heads of other than a multiple of 16 columns "
           "(the xe lowering's rows)",
           g.source, n.name, n.op, d);
    return d;
  };
  auto whole = [](int64_t d) { return (d / 2) % 16 != 0; };
  KernelSetSpec set;
  set.argmaxes.push_back({fmt::format("argmax_{}", dtype), 32 * 32, dtype});  // greedy sampling
  set.topks.push_back({fmt::format("topk_{}", dtype), 32 * 32, 64, dtype});   // temperature / top-k / top-p
  std::set<std::string> names;
  auto once = [&](const std::string& name) { return names.insert(name).second; };
  // The row gather (embedding, a GEMM region's picked rows), once.
  auto gather = [&] {
    if (once("gather")) set.gathers.push_back({fmt::format("gather_rows_{}", dtype), 64, dtype});
  };
  for (const ops::WeightRef& w : g.weights)
    if (!w.quant.empty())
      fail("{}: weight '{}' holds {} blocks: the xe target has no kernels for block-quantized weights yet "
           "(--target cuda:sm_90 and cpu run them)",
           g.source, w.name, w.quant);
  for (ops::NodeDef& n : g.nodes) {
    const nlohmann::json& a = n.attrs;
    if (n.op == "region.gemm") {
      const std::string epilogue = a.value("epilogue", "none");
      if (epilogue == "gelu" || epilogue == "geglu" || a.value("norm", 0) != 0)
        fail("{}: node '{}' (region.gemm): {} has no xe kernel yet", g.source, n.name,
             a.value("norm", 0) ? "the RMSNorm prologue" : "the " + epilogue + " epilogue");
      GemmKernelSpec s;
      s.dtype = dtype;
      s.weightsNK = a.value("layout", "kn") == "nk";
      s.bias = a.value("bias", 0) != 0;
      s.residual = a.value("residual", 0) != 0;
      s.swiglu = epilogue == "swiglu";
      // One sub-group of [16, 16] C blocks, K steps of 16: the blocking the
      // Xe conformance tests run on every dtype, layout and epilogue.
      s.blockM = s.blockN = s.blockK = 16;
      s.numWarps = 1;
      s.name = fmt::format("gemm_{}_{}{}{}{}", dtype, s.weightsNK ? "nk" : "kn", s.bias ? "_bias" : "",
                           s.residual ? "_residual" : "", s.swiglu ? "_swiglu" : "");
      if (once(s.name)) set.gemms.push_back(s);
      if (a.value("rows", 0) != 0) gather();
    } else if (n.op == "region.embedding") {
      gather();
    } else if (n.op == "region.rmsnorm") {
      if (once("rms_norm")) set.norms.push_back({fmt::format("rms_norm_{}", dtype), 64, dtype, 1});
    } else if (n.op == "region.rope") {
      const int64_t d = ropeHeadDim(n, a.at("head_dim").get<int64_t>());
      for (int64_t heads : {paged(n).at("heads").get<int64_t>(), paged(n).at("kv_heads").get<int64_t>()}) {
        RopeKernelSpec s{fmt::format("rope_{}_h{}_d{}", dtype, heads, d), heads, d, dtype};
        s.wholeHeads = whole(d);
        if (once(s.name)) set.ropes.push_back(s);
      }
    } else if (n.op == "region.rope_kv_write") {
      const int64_t d = ropeHeadDim(n, a.at("head_dim").get<int64_t>()), heads = paged(n).at("heads").get<int64_t>(),
                    kvHeads = paged(n).at("kv_heads").get<int64_t>();
      if (const int64_t r = a.value("rotary_dim", d); r != d)
        fail("{}: node '{}' (region.rope_kv_write): partial rotary ({} of {} head dims) has no xe kernel yet", g.source,
             n.name, r, d);
      RopeKvWriteKernelSpec s{fmt::format("rope_kv_write_{}_h{}k{}_d{}_p{}", dtype, heads, kvHeads, d, pageSize), heads,
                              kvHeads, d, pageSize, dtype};
      s.wholeHeads = whole(d);
      if (once(s.name)) set.ropeKvWrites.push_back(s);
    } else if (n.op == "region.kv_write") {
      const int64_t d = paged(n).at("head_dim").get<int64_t>(), kvHeads = paged(n).at("kv_heads").get<int64_t>();
      KvWriteKernelSpec s{fmt::format("kv_write_{}_kv{}_d{}_p{}", dtype, kvHeads, d, pageSize), kvHeads, d, pageSize, dtype};
      if (once(s.name)) set.kvWrites.push_back(s);
    } else if (n.op == "region.paged_attention") {
      AttentionKernelSpec s;
      s.heads = a.at("heads").get<int64_t>(), s.kvHeads = a.at("kv_heads").get<int64_t>();
      s.headDim = a.at("head_dim").get<int64_t>();
      s.scale = a.at("scale").get<float>();
      if (s.headDim % 16)
        fail("{}: node '{}' (region.paged_attention): head dim {} (the xe attention's dots take multiples of 16)",
             g.source, n.name, s.headDim);
      // The unstaged paged form: 8 query rows a sub-group (DPAS's M), a
      // page of keys a step, prefill and decode steps alike (the manifest's
      // page_size is what the runtime matches the cache's blocks against).
      s.paged = s.causal = s.storageDots = true;
      s.blockM = 8, s.blockN = s.pageSize = pageSize, s.dtype = dtype;
      s.name = fmt::format("paged_attention_{}_h{}_kv{}_d{}_p{}", dtype, s.heads, s.kvHeads, s.headDim, pageSize);
      if (once(s.name)) {
        set.pagedPrefills.push_back(s);
      } else {
        for (const AttentionKernelSpec& o : set.pagedPrefills)
          if (o.name == s.name && o.scale != s.scale)
            fail("node '{}' ({}): attention scale {} differs from another layer's {}", n.name, n.op, s.scale, o.scale);
      }
    } else if (n.op == "region.elementwise") {
      addElementwiseRegionKernel(set, g, n, dtype);
    } else {
      fail("{}: node '{}' ({}) has no xe kernel yet (the xe target runs embedding, RMSNorm, GEMM, RoPE, KV write, "
           "paged attention and fused elementwise regions)",
           g.source, n.name, n.op);
    }
  }
  return set;
}

}  // namespace strata::tile
