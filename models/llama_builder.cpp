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
    if (c_.gpt2()) return buildGpt2();
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
  // GPT-2: token + learned position embeddings; per layer LayerNorm, the
  // fused Conv1D q/k/v projection ([E, 3E] weight, bias) split in three,
  // causal attention without RoPE, Conv1D output projection; LayerNorm, a
  // GELU MLP of Conv1D projections; a final LayerNorm and the tied lm_head.
  // Checkpoints name tensors with or without the "transformer." prefix.
  ops::GraphDef buildGpt2() {
    const int64_t H = c_.numHeads, D = c_.headDim, E = c_.hiddenSize, V = c_.vocabSize;
    const std::string p = w_.count("transformer.wte.weight") ? "transformer." : "";
    Dim batch{-1, "batch"}, seq{-1, "sequence"};
    g_.inputs = {{"input_ids", ops::DType::I64, {batch, seq}}, {"position_ids", ops::DType::I64, {batch, seq}}};
    g_.outputs = {{"logits", ops::DType::F32, {batch, seq, {V, ""}}}};
    constant("shape.heads", ops::Tensor::fromI64({0, 0, H, D}));
    constant("shape.merge", ops::Tensor::fromI64({0, 0, H * D}));
    constant("split.qkv", ops::Tensor::fromI64({E, E, E}));
    std::string wte = weight(p + "wte.weight", {V, E});
    std::string x = node("Add", "embed", {node("Gather", "embed.tokens", {wte, "input_ids"}, {{"axis", 0}}),
                                          node("Gather", "embed.positions",
                                               {weight(p + "wpe.weight", {c_.maxPositions, E}), "position_ids"},
                                               {{"axis", 0}})});
    if (w_.at(p + "wte.weight").dtype != ops::DType::F32) x = node("Cast", "embed.to_f32", {x}, {{"to", "f32"}});
    for (int64_t l = 0; l < c_.numLayers; ++l) {
      const std::string w = p + "h." + std::to_string(l) + ".", n = "layers." + std::to_string(l) + ".";
      std::string h = layerNorm(n + "ln_1", x, w + "ln_1");
      std::string qkv = conv1d(n + "attn.c_attn", h, w + "attn.c_attn", E, 3 * E);
      const std::string q = n + "attn.q", k = n + "attn.k", v = n + "attn.v";
      g_.nodes.push_back({"Split", n + "attn.split", {qkv, "split.qkv"}, {q, k, v}, {{"axis", 2}}});
      auto heads = [&](const std::string& y) {
        return node("Transpose", y + ".to_bhsd", {node("Reshape", y + ".split_heads", {y, "shape.heads"})},
                    {{"perm", {0, 2, 1, 3}}});
      };
      std::string a = node("Attention", n + "attention", {heads(q), heads(k), heads(v)},
                           {{"scale", 1.0 / std::sqrt((double)D)}, {"causal", 1}});
      a = node("Transpose", n + "attn.to_bshd", {a}, {{"perm", {0, 2, 1, 3}}});
      a = node("Reshape", n + "attn.merge_heads", {a, "shape.merge"});
      std::string r = node("Add", n + "attn.residual", {x, conv1d(n + "attn.c_proj", a, w + "attn.c_proj", E, E)});
      std::string h2 = layerNorm(n + "ln_2", r, w + "ln_2");
      std::string fc = conv1d(n + "mlp.c_fc", h2, w + "mlp.c_fc", E, c_.intermediateSize);
      std::string act = node("Gelu", n + "mlp.gelu", {fc}, {{"approximate", c_.geluApproximate}});
      x = node("Add", n + "mlp.residual", {r, conv1d(n + "mlp.c_proj", act, w + "mlp.c_proj", c_.intermediateSize, E)});
    }
    x = layerNorm("ln_f", x, p + "ln_f");
    node("Linear", "lm_head", {x, wte}, {}, "logits");
    return std::move(g_);
  }
  std::string layerNorm(const std::string& name, const std::string& x, const std::string& w) {
    return node("LayerNormalization", name,
                {x, weight(w + ".weight", {c_.hiddenSize}), weight(w + ".bias", {c_.hiddenSize})},
                {{"axis", -1}, {"epsilon", c_.rmsNormEps}});
  }
  // GPT-2's Conv1D: x [B, S, in] times an [in, out] weight, plus a bias.
  std::string conv1d(const std::string& name, const std::string& x, const std::string& w, int64_t in, int64_t out) {
    std::string y = node("MatMul", name, {x, weight(w + ".weight", {in, out})});
    return node("Add", name + ".bias", {y, weight(w + ".bias", {out})});
  }

  std::string layer(int64_t l, const std::string& x) {
    std::string p = "model.layers." + std::to_string(l) + ".", n = "layers." + std::to_string(l) + ".";
    int64_t H = c_.numHeads, KV = c_.numKvHeads, D = c_.headDim, E = c_.hiddenSize, I = c_.intermediateSize;
    std::string h = node("RMSNorm", n + "input_norm", {x, normWeight(n + "input_norm", p + "input_layernorm.weight")},
                         {{"eps", c_.rmsNormEps}});
    // Phi-3's q / k / v rows are ranges of one qkv_proj weight, its gate /
    // up rows ranges of gate_up_proj.
    const int64_t QKV = (H + 2 * KV) * D;
    auto projWeight = [&](const std::string& proj, int64_t rows, int64_t cols) {
      if (!c_.phi3()) return weight(p + proj + ".weight", {rows, cols});
      if (proj == "mlp.gate_proj" || proj == "mlp.up_proj")
        return rowRange(p + "mlp.gate_up_proj.weight", {2 * I, E}, proj == "mlp.up_proj" ? I : 0, I,
                        p + proj + ".weight");
      const int64_t at = proj == "self_attn.q_proj" ? 0 : proj == "self_attn.k_proj" ? H * D : (H + KV) * D;
      if (proj == "self_attn.o_proj" || proj == "mlp.down_proj") return weight(p + proj + ".weight", {rows, cols});
      return rowRange(p + "self_attn.qkv_proj.weight", {QKV, E}, at, rows, p + proj + ".weight");
    };
    auto linear = [&](const std::string& name, const std::string& x, const std::string& proj, int64_t out, int64_t in,
                      bool bias) {
      std::vector<std::string> ins = {x, projWeight(proj, out, in)};
      if (bias) ins.push_back(weight(p + proj + ".bias", {out}));
      return node("Linear", name, ins);
    };
    auto heads = [&](const char* proj, int64_t nh, const char* shape) {
      std::string y = linear(n + proj, h, std::string("self_attn.") + proj, nh * D, E, c_.qkvBias);
      y = node("Reshape", n + proj + ".split_heads", {y, shape});
      return node("Transpose", n + proj + ".to_bhsd", {y}, {{"perm", {0, 2, 1, 3}}});
    };
    std::string q = heads("q_proj", H, "shape.heads_q"), k = heads("k_proj", KV, "shape.heads_kv"),
                v = heads("v_proj", KV, "shape.heads_kv");
    json rope = {{"theta", c_.ropeTheta}};
    if (c_.rotaryDim) rope["rotary_dim"] = c_.rotaryDim;
    q = node("Rope", n + "rope_q", {q, "position_ids"}, rope);
    k = node("Rope", n + "rope_k", {k, "position_ids"}, rope);
    std::string a = node("Attention", n + "attention", {q, k, v}, {{"scale", 1.0 / std::sqrt((double)D)}, {"causal", 1}});
    a = node("Transpose", n + "attn.to_bshd", {a}, {{"perm", {0, 2, 1, 3}}});
    a = node("Reshape", n + "attn.merge_heads", {a, "shape.merge"});
    std::string o = linear(n + "o_proj", a, "self_attn.o_proj", E, H * D, c_.oBias);
    std::string r = node("Add", n + "attn.residual", {x, o});
    std::string h2 = node("RMSNorm", n + "post_attention_norm",
                          {r, normWeight(n + "post_attention_norm", p + "post_attention_layernorm.weight")},
                          {{"eps", c_.rmsNormEps}});
    std::string gate = linear(n + "gate_proj", h2, "mlp.gate_proj", I, E, c_.mlpBias);
    std::string up = linear(n + "up_proj", h2, "mlp.up_proj", I, E, c_.mlpBias);
    std::string act =
        c_.gemma() ? node("Mul", n + "mlp.geglu", {node("Gelu", n + "mlp.gelu", {gate}, {{"approximate", "tanh"}}), up})
                   : node("Mul", n + "mlp.swiglu", {node("Silu", n + "mlp.silu", {gate}), up});
    std::string down = linear(n + "down_proj", act, "mlp.down_proj", E, I, c_.mlpBias);
    return node("Add", n + "mlp.residual", {r, down});
  }

  // An RMSNorm's weight: the tensor, or for Gemma 1 + the tensor.
  std::string normWeight(const std::string& name, const std::string& w) {
    std::string v = weight(w, {c_.hiddenSize});
    return c_.gemma() ? node("Add", name + ".one_plus_w", {"const.one", v}) : v;
  }

  // Rows [at, at + rows) of the [shape[0], shape[1]] weight `fused` as a
  // weight of its own named `view`: the same file bytes from a later offset
  // (a row range of a row-major matrix is contiguous), nothing copied.
  std::string rowRange(const std::string& fused, const ops::Shape& shape, int64_t at, int64_t rows,
                       const std::string& view) {
    const ops::WeightRef& f = lookup(fused, shape);
    if (!f.quant.empty() || f.interleavedRopeHeads) fail("{}: tensor '{}' cannot be read in row ranges", src_, fused);
    ops::WeightRef r = f;
    r.name = view;
    r.shape = {rows, shape[1]};
    const uint64_t rowBytes = (uint64_t)shape[1] * ops::dtypeSize(f.dtype);
    r.offset = f.offset + (uint64_t)at * rowBytes;
    r.nbytes = (uint64_t)rows * rowBytes;
    g_.weights.push_back(r);
    used_.insert(view);
    return view;
  }

  // The checkpoint's tensor `name`, which must have `shape`.
  const ops::WeightRef& lookup(const std::string& name, const ops::Shape& shape) const {
    auto it = w_.find(name);
    const std::string shown = fileName_ ? fileName_(name) : name;
    if (it == w_.end()) fail("{}: the checkpoint has no tensor '{}'", src_, shown);
    if (it->second.shape != shape)
      fail("{}: tensor '{}' has shape {}, {} implies {} (tensors and a configuration that do not belong together)", src_,
           shown, ops::shapeStr(it->second.shape), configName_, ops::shapeStr(shape));
    return it->second;
  }

  std::string weight(const std::string& name, const ops::Shape& shape) {
    if (used_.count(name)) return name;
    g_.weights.push_back(lookup(name, shape));
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
