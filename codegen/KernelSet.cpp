#include "codegen/KernelSet.h"

#include <fmt/format.h>

namespace strata::tile {

void addElementwiseRegionKernel(KernelSetSpec& set, const ops::GraphDef& g, ops::NodeDef& n, const std::string& dtype,
                                const std::function<void(ElementwiseKernelSpec&)>& blocking) {
  ElementwiseRegionPlan p = planElementwiseRegion(g, n, 32);
  p.spec.dtype = dtype;
  if (blocking) blocking(p.spec);
  const std::string key = elementwiseKernelKey(p.spec);
  std::string name;
  for (const ElementwiseKernelSpec& s : set.elementwises)
    if (elementwiseKernelKey(s) == key) name = s.name;
  if (name.empty()) {
    name = p.spec.name = fmt::format("elementwise_{}_{}", dtype, set.elementwises.size());
    set.elementwises.push_back(p.spec);
  }
  nlohmann::json k = elementwiseLaunchContract(p);
  k["name"] = name;
  n.attrs["kernel"] = k;
}

void forEachKernelText(const KernelSetSpec& set, const std::function<void(std::string text, int64_t cost)>& unit) {
  for (const GemmKernelSpec& s : set.gemms)
    unit(emitGemmKernel(s), s.blockM * s.blockN * (s.swiglu ? 8 : s.residual ? 5 : 4) / 4);
  for (const RmsNormKernelSpec& s : set.norms) unit(emitRmsNormKernel(s), 0);
  for (const RopeKernelSpec& s : set.ropes) unit(emitRopeKernel(s), 0);
  for (const AttentionKernelSpec& s : set.attentions) unit(emitAttentionKernel(s), s.blockM * (s.blockN + s.headDim));
  for (const AttentionKernelSpec& s : set.pagedDecodes) unit(emitAttentionKernel(s) + emitAttentionCombineKernel(s), 0);
  for (const AttentionKernelSpec& s : set.pagedPrefills) unit(emitAttentionKernel(s), s.blockM * (s.blockN + s.headDim));
  for (const GatherRowsKernelSpec& s : set.gathers) unit(emitGatherRowsKernel(s), 0);
  for (const KvWriteKernelSpec& s : set.kvWrites) unit(emitKvWriteKernel(s), 0);
  for (const RopeKvWriteKernelSpec& s : set.ropeKvWrites) unit(emitRopeKvWriteKernel(s), 0);
  for (const ArgmaxKernelSpec& s : set.argmaxes) unit(emitArgmaxKernel(s), 0);
  for (const TopKKernelSpec& s : set.topks) unit(emitTopKKernel(s), 0);
  for (const RepetitionPenaltyKernelSpec& s : set.penalties) unit(emitRepetitionPenaltyKernel(s), 0);
  for (const ElementwiseKernelSpec& s : set.elementwises) unit(emitElementwiseKernel(s), 0);
}

nlohmann::json kernelManifestEntries(const KernelSetSpec& set, const ManifestEntry& entry) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const GemmKernelSpec& s : set.gemms)
    kernels.push_back(entry("gemm", s.name, s.dtype,
                            {{"weights", s.weightsNK ? "nk" : "kn"}, {"bias", s.bias}, {"residual", s.residual},
                             {"swiglu", s.swiglu}, {"block_m", s.blockM}, {"block_n", s.blockN},
                             {"block_k", s.blockK}, {"num_warps", s.numWarps}, {"stages", s.stages},
                             {"max_rows", s.maxRows}, {"min_cols", s.minCols}, {"max_cols", s.maxCols},
                             {"min_depth", s.minDepth}, {"min_rows", s.minRows},
                             {"tma", s.tma}, {"dots_in_flight", s.dotsInFlight}, {"split_k_programs", s.splitKPrograms}, {"gemv", s.gemv},
                             {"tma_store", storesCByTma(s)}, {"quant_block", s.int8Blocks() ? s.quantBlock : 0},
                             {"quant_nibbles", s.quantNibbles}, {"quant_offsets", s.quantOffsets},
                             {"quant_super", s.quantSuper}}));
  for (const RmsNormKernelSpec& s : set.norms)
    kernels.push_back(entry("rms_norm", s.name, s.dtype, {{"block_n", s.blockN}, {"lane_vector", s.laneVector}}));
  for (const RopeKernelSpec& s : set.ropes)
    kernels.push_back(entry("rope", s.name, s.dtype,
                            {{"heads", s.heads}, {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
                             {"heads_per_program", s.headsPerProgram}}));
  for (const AttentionKernelSpec& s : set.attentions)
    kernels.push_back(entry("attention", s.name, s.dtype,
                            {{"heads", s.heads}, {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
                             {"causal", s.causal}, {"scale", s.scale}, {"block_m", s.blockM}, {"block_n", s.blockN},
                             {"stages", s.stages}, {"tma", s.tma}}));
  for (const AttentionKernelSpec& s : set.pagedDecodes) {
    const nlohmann::json combine = entry("attention_combine", s.name + "_combine", s.dtype, nlohmann::json::object());
    nlohmann::json own = {{"heads", s.heads}, {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
                          {"page_size", s.pageSize}, {"scale", s.scale}, {"block_n", s.blockN},
                          {"stages", s.stages}, {"combine", combine["name"]}, {"stores_one_split", true},
                          {"combine_splits_per_step", kCombineSplitsPerStep}};
    if (combine.contains("threads")) own["combine_threads"] = combine["threads"];
    kernels.push_back(entry("paged_decode", s.name, s.dtype, own));
  }
  for (const AttentionKernelSpec& s : set.pagedPrefills)
    kernels.push_back(entry("paged_prefill", s.name, s.dtype,
                            {{"heads", s.heads}, {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
                             {"page_size", s.pageSize}, {"scale", s.scale}, {"block_m", s.blockM},
                             {"block_n", s.blockN}, {"storage_dots", s.storageDots}}));
  for (const GatherRowsKernelSpec& s : set.gathers)
    kernels.push_back(entry("gather_rows", s.name, s.dtype,
                            {{"block_n", s.blockN}, {"out_dtype", s.out()}, {"quant_block", s.quantBlock},
                             {"quant_nibbles", s.quantNibbles}, {"quant_offsets", s.quantOffsets},
                             {"quant_super", s.quantSuper}}));
  for (const KvWriteKernelSpec& s : set.kvWrites)
    kernels.push_back(entry("kv_write", s.name, s.dtype,
                            {{"kv_heads", s.kvHeads}, {"head_dim", s.headDim}, {"page_size", s.blockSize}}));
  for (const RopeKvWriteKernelSpec& s : set.ropeKvWrites)
    kernels.push_back(entry("rope_kv_write", s.name, s.dtype,
                            {{"heads", s.heads}, {"kv_heads", s.kvHeads}, {"head_dim", s.headDim},
                             {"page_size", s.pageSize}, {"heads_per_program", s.headsPerProgram}}));
  for (const ArgmaxKernelSpec& s : set.argmaxes) kernels.push_back(entry("argmax", s.name, s.dtype, {{"block_n", s.blockN}}));
  for (const TopKKernelSpec& s : set.topks)
    kernels.push_back(entry("topk", s.name, s.dtype, {{"block_n", s.blockN}, {"candidates", s.candidates}}));
  for (const RepetitionPenaltyKernelSpec& s : set.penalties)
    kernels.push_back(entry("repetition_penalty", s.name, "f32", nlohmann::json::object()));
  for (const ElementwiseKernelSpec& s : set.elementwises)
    kernels.push_back(entry("elementwise", s.name, s.dtype, {{"block_n", s.blockN}, {"cols", s.cols}}));
  return kernels;
}

}  // namespace strata::tile
