#include "models/llama_builder.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "models/json_input.h"
#include "models/safetensors.h"

namespace strata::models {

namespace fs = std::filesystem;
using nlohmann::json;
using ops::Dim;

namespace {

class Builder {
 public:
  Builder(const LlamaConfig& c, const std::map<std::string, ops::WeightRef>& w, const std::string& src,
          const std::function<std::string(const std::string&)>& fileName, const std::string& configName)
      : c_(c), w_(w), src_(src), fileName_(fileName), configName_(configName) {
    g_.source = src;
  }

  ops::GraphDef build() {
    int64_t H = c_.numHeads, KV = c_.numKvHeads, D = c_.headDim, E = c_.hiddenSize;
    Dim batch{-1, "batch"}, seq{-1, "sequence"};
    g_.inputs = {{"input_ids", ops::DType::I64, {batch, seq}}, {"position_ids", ops::DType::I64, {batch, seq}}};
    g_.outputs = {{"logits", ops::DType::F32, {batch, seq, {c_.vocabSize, ""}}}};
    constant("shape.heads_q", ops::Tensor::fromI64({0, 0, H, D}));
    constant("shape.heads_kv", ops::Tensor::fromI64({0, 0, KV, D}));
    constant("shape.merge", ops::Tensor::fromI64({0, 0, H * D}));
    std::string embed = weight("model.embed_tokens.weight", {c_.vocabSize, E});
    std::string x = node("Gather", "embed", {embed, "input_ids"}, {{"axis", 0}});
    if (c_.gemma()) constant("const.one", ops::Tensor::scalarF32(1.f));
    // The model computes in f32 whatever its weights' storage type (a GPU
    // artifact stores activations in its --dtype regardless): the rows a
    // 16-bit embedding gives are widened here, and every op after takes
    // its type from them.
    if (w_.at("model.embed_tokens.weight").dtype != ops::DType::F32)
      x = node("Cast", "embed.to_f32", {x}, {{"to", "f32"}});
    if (c_.gemma()) {
      // Gemma scales the embedding by sqrt(hidden_size), rounded to the
      // activations' type.
      constant("const.embed_scale", ops::Tensor::scalarF32((float)std::sqrt((double)E)));
      x = node("Mul", "embed.scale", {x, "const.embed_scale"});
    }
    for (int64_t l = 0; l < c_.numLayers; ++l) x = layer(l, x);
    x = node("RMSNorm", "final_norm", {x, normWeight("final_norm", "model.norm.weight")}, {{"eps", c_.rmsNormEps}});
    std::string head = c_.tieEmbeddings ? embed : weight("lm_head.weight", {c_.vocabSize, E});
    node("Linear", "lm_head", {x, head}, {}, "logits");
    return std::move(g_);
  }

 private:
  std::string layer(int64_t l, const std::string& x) {
    std::string p = "model.layers." + std::to_string(l) + ".", n = "layers." + std::to_string(l) + ".";
    int64_t H = c_.numHeads, KV = c_.numKvHeads, D = c_.headDim, E = c_.hiddenSize, I = c_.intermediateSize;
    std::string h = node("RMSNorm", n + "input_norm", {x, normWeight(n + "input_norm", p + "input_layernorm.weight")},
                         {{"eps", c_.rmsNormEps}});
    auto heads = [&](const char* proj, int64_t nh, const char* shape) {
      std::string y = linear(n + proj, h, p + "self_attn." + proj, nh * D, E, c_.qkvBias);
      y = node("Reshape", n + proj + ".split_heads", {y, shape});
      return node("Transpose", n + proj + ".to_bhsd", {y}, {{"perm", {0, 2, 1, 3}}});
    };
    std::string q = heads("q_proj", H, "shape.heads_q"), k = heads("k_proj", KV, "shape.heads_kv"),
                v = heads("v_proj", KV, "shape.heads_kv");
    q = node("Rope", n + "rope_q", {q, "position_ids"}, {{"theta", c_.ropeTheta}});
    k = node("Rope", n + "rope_k", {k, "position_ids"}, {{"theta", c_.ropeTheta}});
    std::string a = node("Attention", n + "attention", {q, k, v}, {{"scale", 1.0 / std::sqrt((double)D)}, {"causal", 1}});
    a = node("Transpose", n + "attn.to_bshd", {a}, {{"perm", {0, 2, 1, 3}}});
    a = node("Reshape", n + "attn.merge_heads", {a, "shape.merge"});
    std::string o = linear(n + "o_proj", a, p + "self_attn.o_proj", E, H * D, c_.oBias);
    std::string r = node("Add", n + "attn.residual", {x, o});
    std::string h2 = node("RMSNorm", n + "post_attention_norm",
                          {r, normWeight(n + "post_attention_norm", p + "post_attention_layernorm.weight")},
                          {{"eps", c_.rmsNormEps}});
    std::string gate = linear(n + "gate_proj", h2, p + "mlp.gate_proj", I, E, c_.mlpBias);
    std::string up = linear(n + "up_proj", h2, p + "mlp.up_proj", I, E, c_.mlpBias);
    std::string act =
        c_.gemma() ? node("Mul", n + "mlp.geglu", {node("Gelu", n + "mlp.gelu", {gate}, {{"approximate", "tanh"}}), up})
                   : node("Mul", n + "mlp.swiglu", {node("Silu", n + "mlp.silu", {gate}), up});
    std::string down = linear(n + "down_proj", act, p + "mlp.down_proj", E, I, c_.mlpBias);
    return node("Add", n + "mlp.residual", {r, down});
  }

  // An RMSNorm's weight: the tensor, or for Gemma 1 + the tensor.
  std::string normWeight(const std::string& name, const std::string& w) {
    std::string v = weight(w, {c_.hiddenSize});
    return c_.gemma() ? node("Add", name + ".one_plus_w", {"const.one", v}) : v;
  }

  std::string linear(const std::string& name, const std::string& x, const std::string& w, int64_t out, int64_t in, bool bias) {
    std::vector<std::string> ins = {x, weight(w + ".weight", {out, in})};
    if (bias) ins.push_back(weight(w + ".bias", {out}));
    return node("Linear", name, ins);
  }

  std::string weight(const std::string& name, const ops::Shape& shape) {
    if (used_.count(name)) return name;
    auto it = w_.find(name);
    const std::string shown = fileName_ ? fileName_(name) : name;
    if (it == w_.end()) fail("{}: the checkpoint has no tensor '{}'", src_, shown);
    if (it->second.shape != shape)
      fail("{}: tensor '{}' has shape {}, {} implies {} (tensors and a configuration that do not belong together)", src_,
           shown, ops::shapeStr(it->second.shape), configName_, ops::shapeStr(shape));
    g_.weights.push_back(it->second);
    used_.insert(name);
    return name;
  }

  void constant(const std::string& name, ops::Tensor t) { g_.constants.push_back({name, std::move(t)}); }

  std::string node(const std::string& op, const std::string& name, std::vector<std::string> ins, json attrs = json::object(),
                   std::string out = "") {
    if (out.empty()) out = name;
    g_.nodes.push_back({op, name, std::move(ins), {out}, std::move(attrs)});
    return out;
  }

  const LlamaConfig& c_;
  const std::map<std::string, ops::WeightRef>& w_;
  std::string src_;
  std::function<std::string(const std::string&)> fileName_;
  std::string configName_;
  std::set<std::string> used_;
  ops::GraphDef g_;
};

}  // namespace

ops::GraphDef buildLlamaGraph(const LlamaConfig& cfg, const std::map<std::string, ops::WeightRef>& weights,
                              const std::string& source,
                              const std::function<std::string(const std::string&)>& fileName,
                              const std::string& configName) {
  ops::GraphDef g = Builder(cfg, weights, source, fileName, configName).build();
  g.meta["model_type"] = cfg.modelType;
  g.meta["vocab_size"] = cfg.vocabSize;
  g.meta["max_position_embeddings"] = cfg.maxPositions;
  if (cfg.bosId) g.meta["bos_token_id"] = *cfg.bosId;
  if (cfg.eosId) g.meta["eos_token_id"] = *cfg.eosId;
  return g;
}

ops::GraphDef loadHfCheckpoint(const std::string& dirIn) {
  fs::path dir = fs::absolute(dirIn).lexically_normal();
  if (!fs::exists(dir / "config.json")) fail("{}: no config.json (not a Hugging Face model folder)", dir.string());
  LlamaConfig cfg = readLlamaConfig((dir / "config.json").string());
  std::map<std::string, ops::WeightRef> weights;
  fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const json j = readJsonFile(index.string());
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) fail("{}: missing 'weight_map'", index.string());
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) fail("{}: weight_map['{}'] is not a file name", index.string(), name);
      shards.insert(file.get<std::string>());
    }
    for (const auto& s : shards) {
      if (fs::path(s).has_parent_path()) fail("{}: shard '{}' must be a file in the model folder", index.string(), s);
      for (auto& [k, v] : readSafetensorsHeader((dir / s).string())) weights[k] = v;
    }
  } else if (fs::exists(dir / "model.safetensors")) {
    weights = readSafetensorsHeader((dir / "model.safetensors").string());
  } else {
    fail("{}: no model.safetensors or model.safetensors.index.json", dir.string());
  }
  return buildLlamaGraph(cfg, weights, dir.string());
}

}  // namespace strata::models
