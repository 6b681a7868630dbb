#include "models/gguf_model.h"

#include <filesystem>
#include <map>
#include <utility>

#include "models/gguf_config.h"
#include "models/llama_builder.h"
#include "ops/error.h"
#include "ops/quant.h"

namespace strata::models {

namespace {

// llama.cpp's tensor names (gguf-py's TENSOR_NAMES for LLM_ARCH_LLAMA /
// QWEN2) and the Hugging Face names buildLlamaGraph reads: whole names, and
// the parts of a layer's names between "blk.N." / "model.layers.N." and
// ".weight" / ".bias".
const std::pair<const char*, const char*> kTopNames[] = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                         {"output_norm.weight", "model.norm.weight"},
                                                         {"output.weight", "lm_head.weight"}};
const std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"}, {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},           {"attn_output", "self_attn.o_proj"},
    {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},                {"ffn_down", "mlp.down_proj"}};

// `name` with its names from column `from` replaced by column `to`'s (0:
// GGUF, 1: HF); "" when it is none of them.
std::string renamed(const std::string& name, int from, int to) {
  for (const auto& p : kTopNames)
    if (name == (from ? p.second : p.first)) return to ? p.second : p.first;
  const std::string prefixes[2] = {"blk.", "model.layers."};
  const std::string& in = prefixes[from];
  if (name.rfind(in, 0) != 0) return "";
  size_t dot = name.find('.', in.size());
  if (dot == std::string::npos) return "";
  std::string layer = name.substr(in.size(), dot - in.size());
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos) return "";
  std::string rest = name.substr(dot + 1);
  size_t kind = rest.rfind('.');
  if (kind == std::string::npos) return "";
  std::string part = rest.substr(0, kind), suffix = rest.substr(kind + 1);
  if (suffix != "weight" && suffix != "bias") return "";
  for (const auto& p : kLayerNames)
    if (part == (from ? p.second : p.first)) return prefixes[to] + layer + "." + (to ? p.second : p.first) + "." + suffix;
  return "";
}

}  // namespace

ops::GraphDef ggufModel(const GgufFile& f) {
  LlamaConfig cfg = llamaConfigFromGguf(f);
  // convert_hf_to_gguf permutes llama's q / k rows (weights and biases) so
  // that llama.cpp's interleaved RoPE applies; qwen2's stay as they were.
  const bool permuted = cfg.modelType != "qwen2";
  std::map<std::string, ops::WeightRef> weights;
  for (const GgufTensor& t : f.tensors) {
    std::string name = renamed(t.name, 0, 1);
    if (name.empty()) continue;  // rope_freqs and other tensors the graph does not read
    ops::WeightRef w;
    w.name = name;
    w.file = f.path;
    w.offset = t.offset;
    w.nbytes = t.nbytes;
    switch (GgmlType(t.type)) {
      case GgmlType::F32: w.dtype = ops::DType::F32; break;
      case GgmlType::F16: w.dtype = ops::DType::F16; break;
      case GgmlType::BF16: w.dtype = ops::DType::BF16; break;
      default:
        if (!ops::quantFormat(t.typeName))
          fail("{}: tensor '{}' is {}: strata reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K "
               "tensors",
               f.path, t.name, t.typeName);
        w.dtype = ops::DType::F32;  // what its blocks stand for
        w.quant = t.typeName;
    }
    for (auto it = t.dims.rbegin(); it != t.dims.rend(); ++it) w.shape.push_back(*it);
    const bool q = t.name.find(".attn_q.") != std::string::npos, k = t.name.find(".attn_k.") != std::string::npos;
    if (permuted && (q || k)) w.interleavedRopeHeads = q ? cfg.numHeads : cfg.numKvHeads;
    weights[name] = w;
  }
  ops::GraphDef g = buildLlamaGraph(cfg, weights, f.path, [](const std::string& hf) {
    std::string name = renamed(hf, 1, 0);
    return name.empty() ? hf : name;
  }, "its metadata");
  g.meta["source_format"] = "gguf";
  return g;
}

ops::GraphDef loadGgufModel(const std::string& path) {
  return ggufModel(readGguf(std::filesystem::absolute(path).lexically_normal().string()));
}

}  // namespace strata::models
