#include "models/random_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "ops/error.h"

namespace strata::models {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  enum { Matrix, Norm, Bias } kind;
};

std::vector<Spec> tensorsOf(const LlamaConfig& c) {
  int64_t E = c.hiddenSize, I = c.intermediateSize, D = c.headDim, H = c.numHeads, KV = c.numKvHeads;
  std::vector<Spec> t{{"model.embed_tokens.weight", {c.vocabSize, E}, Spec::Matrix}};
  for (int64_t l = 0; l < c.numLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {E}, Spec::Norm});
    for (auto [proj, out] : {std::pair{"q_proj", H * D}, {"k_proj", KV * D}, {"v_proj", KV * D}}) {
      t.push_back({p + "self_attn." + proj + ".weight", {out, E}, Spec::Matrix});
      if (c.qkvBias) t.push_back({p + "self_attn." + proj + ".bias", {out}, Spec::Bias});
    }
    t.push_back({p + "self_attn.o_proj.weight", {E, H * D}, Spec::Matrix});
    if (c.oBias) t.push_back({p + "self_attn.o_proj.bias", {E}, Spec::Bias});
    t.push_back({p + "post_attention_layernorm.weight", {E}, Spec::Norm});
    for (auto [proj, out, in] : {std::tuple{"gate_proj", I, E}, {"up_proj", I, E}, {"down_proj", E, I}}) {
      t.push_back({p + "mlp." + proj + ".weight", {out, in}, Spec::Matrix});
      if (c.mlpBias) t.push_back({p + "mlp." + proj + ".bias", {out}, Spec::Bias});
    }
  }
  t.push_back({"model.norm.weight", {E}, Spec::Norm});
  if (!c.tieEmbeddings) t.push_back({"lm_head.weight", {c.vocabSize, E}, Spec::Matrix});
  return t;
}

}  // namespace

int64_t writeRandomCheckpoint(const LlamaConfig& cfg, const std::string& dir, uint64_t seed) {
  // Validates the config the same way loading it will.
  LlamaConfig c = parseLlamaConfig(toJson(cfg), dir + "/config.json");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("{}: cannot create directory: {}", dir, ec.message());
  std::vector<Spec> specs = tensorsOf(c);
  json header = json::object();
  uint64_t offset = 0;
  int64_t params = 0;
  for (const auto& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    header[s.name] = {{"dtype", "F32"}, {"shape", s.shape}, {"data_offsets", {offset, offset + 4 * (uint64_t)n}}};
    offset += 4 * (uint64_t)n;
    params += n;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  std::ofstream f(dir + "/model.safetensors", std::ios::binary | std::ios::trunc);
  if (!f) fail("{}/model.safetensors: cannot write", dir);
  uint64_t len = h.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(h.data(), (std::streamsize)h.size());
  std::mt19937_64 rng(seed);
  std::vector<float> buf;
  for (const auto& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    float a = s.kind == Spec::Matrix ? 1.f / std::sqrt((float)s.shape.back()) : 0.1f;
    std::uniform_real_distribution<float> u(-a, a);
    buf.resize(n);
    for (auto& x : buf) x = (s.kind == Spec::Norm ? 1.f : 0.f) + u(rng);
    f.write(reinterpret_cast<const char*>(buf.data()), (std::streamsize)(n * 4));
  }
  if (!f) fail("{}/model.safetensors: write failed", dir);
  std::ofstream cf(dir + "/config.json", std::ios::trunc);
  cf << toJson(c).dump(2) << "\n";
  if (!cf) fail("{}/config.json: write failed", dir);
  return params;
}

}  // namespace strata::models
