// Loaders on good and bad input: every failure is a strata::Error whose
// message names the file and the part at fault.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "models/hf_config.h"
#include "models/llama_builder.h"
#include "models/model_source.h"
#include "models/onnx_loader.h"
#include "models/safetensors.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = STRATA_FIXTURE_DIR;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("strata_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return (path / name).string();
  }
  static inline int counter = 0;
};

std::string readFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Expects `fn` to throw a strata::Error whose message contains every needle.
template <typename F>
void expectError(F fn, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

onnx::ModelProto tinyModel(const std::string& op, int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(opset);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  auto* n = g->add_node();
  n->set_name("the_node");
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  return m;
}

}  // namespace

TEST(Onnx, LoadsAllFixtureExports) {
  for (const char* f : {"model_dynamo.onnx", "decoder_with_past.onnx", "decoder_with_past_dynamo.onnx", "external/decoder_with_past.onnx",
                        "model_opset23.onnx", "decoder_with_past_opset23.onnx", "model_ort_fused.onnx",
                        "decoder_with_past_ort_fused.onnx"}) {
    ops::GraphDef g = models::loadOnnx(kFixture + "/" + f);
    EXPECT_FALSE(g.nodes.empty()) << f;
    EXPECT_FALSE(g.weights.empty()) << f;
    for (const auto& w : g.weights) EXPECT_TRUE(fs::exists(w.file)) << w.file;
  }
}

TEST(Onnx, ExternalDataIsReferencedNotCopied) {
  ops::GraphDef g = models::loadOnnx(kFixture + "/external/decoder_with_past.onnx");
  int external = 0;
  for (const auto& w : g.weights) external += w.file.ends_with(".onnx.data");
  EXPECT_GE(external, 16);
}

TEST(Onnx, DynamicDimsKeepTheirNames) {
  ops::GraphDef g = models::loadOnnx(kFixture + "/decoder_with_past.onnx");
  const ops::ValueInfo* ids = g.findInput("input_ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->shape[0].symbol, "batch");
  EXPECT_EQ(ids->shape[1].symbol, "sequence");
}

TEST(Onnx, TruncatedAndCorruptFilesAreErrors) {
  TempDir d;
  std::string bytes = readFile(kFixture + "/decoder_with_past.onnx");
  expectError([&] { models::loadOnnx(d.write("trunc.onnx", bytes.substr(0, bytes.size() / 3))); }, {"trunc.onnx"});
  std::string corrupt = bytes;
  for (size_t i = 0; i < 64; ++i) corrupt[i] = (char)0xff;
  expectError([&] { models::loadOnnx(d.write("corrupt.onnx", corrupt)); }, {"corrupt.onnx", "not a valid ONNX"});
  expectError([&] { models::loadOnnx(d.write("empty.onnx", "")); }, {"empty.onnx"});
}

TEST(Onnx, MissingExternalDataFileIsAnError) {
  TempDir d;
  fs::copy_file(kFixture + "/external/decoder_with_past.onnx", d.path / "m.onnx");
  expectError([&] { models::loadOnnx((d.path / "m.onnx").string()); }, {"external data file", "decoder_with_past.onnx.data", "missing"});
  // Present but too short: offsets out of range.
  d.write("decoder_with_past.onnx.data", std::string(100, '\0'));
  expectError([&] { models::loadOnnx((d.path / "m.onnx").string()); }, {"outside"});
}

// External-data fields: a negative offset is refused as such (not read as
// a wrapped 2^64 range), a location with a NUL byte is refused naming the
// initializer (stat would see only the part before the NUL).
TEST(Onnx, ExternalDataFieldsAreChecked) {
  TempDir d;
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(readFile(kFixture + "/external/decoder_with_past.onnx")));
  fs::copy_file(kFixture + "/external/decoder_with_past.onnx.data", d.path / "decoder_with_past.onnx.data");
  auto edited = [&](const std::string& key, const std::string& value, std::string& name) {
    onnx::ModelProto e = m;
    for (auto& init : *e.mutable_graph()->mutable_initializer()) {
      if (init.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
      for (auto& kv : *init.mutable_external_data())
        if (kv.key() == key) kv.set_value(value);
      name = init.name();
      break;
    }
    return d.write("edited.onnx", e.SerializeAsString());
  };
  std::string name;
  std::string p = edited("offset", "-8", name);
  expectError([&] { models::loadOnnx(p); }, {"edited.onnx", name, "'offset' must be a non-negative integer", "-8"});
  p = edited("offset", "1e3", name);
  expectError([&] { models::loadOnnx(p); }, {name, "'offset'"});
  p = edited("location", std::string("decoder_with_past.onnx.data\0x", 29), name);
  expectError([&] { models::loadOnnx(p); }, {"edited.onnx", name, "NUL byte"});
}

TEST(Onnx, UnsupportedOpAndOpsetAreNamed) {
  TempDir d;
  std::string p = d.write("op.onnx", tinyModel("LSTM", 17).SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"the_node", "LSTM", "not supported"});
  p = d.write("opset.onnx", tinyModel("Relu", 13).SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"opset 13", "17 to 23"});
  p = d.write("opset24.onnx", tinyModel("Relu", 24).SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"opset 24", "17 to 23"});
  auto m = tinyModel("Relu", 17);
  m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  p = d.write("domain.onnx", m.SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"the_node", "com.microsoft"});
  p = d.write("ok.onnx", tinyModel("Relu", 23).SerializeAsString());
  EXPECT_EQ(models::loadOnnx(p).nodes.size(), 1u);
}

// onnxruntime's contrib domain: the ops strata reads get a qualified name;
// another version of the domain, and outputs strata does not compute that
// something reads, are errors naming the node.
TEST(Onnx, ContribOpsAndAttention23) {
  TempDir d;
  auto m = tinyModel("FusedMatMul", 20);
  m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  m.mutable_graph()->mutable_node(0)->add_input("x");
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  std::string p = d.write("fused.onnx", m.SerializeAsString());
  EXPECT_EQ(models::loadOnnx(p).nodes.at(0).op, "com.microsoft.FusedMatMul");
  ms->set_version(2);
  p = d.write("v2.onnx", m.SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"version 2", "com.microsoft"});

  auto sk = tinyModel("SkipSimplifiedLayerNormalization", 20);
  auto* n = sk.mutable_graph()->mutable_node(0);
  n->set_domain("com.microsoft");
  n->add_input("x");
  n->add_input("x");
  n->add_output("mean");
  n->add_output("inv_std");
  sk.mutable_graph()->add_output()->set_name("inv_std");
  sk.mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  p = d.write("skip.onnx", sk.SerializeAsString());
  expectError([&] { models::loadOnnx(p); }, {"the_node", "output #2", "inv_std", "does not compute"});

  auto at = tinyModel("Attention", 23);
  at.mutable_graph()->mutable_node(0)->add_input("x");
  at.mutable_graph()->mutable_node(0)->add_input("x");
  p = d.write("attention.onnx", at.SerializeAsString());
  EXPECT_EQ(models::loadOnnx(p).nodes.at(0).op, "onnx.Attention");
}

TEST(Safetensors, ParsesFixtureHeader) {
  auto w = models::readSafetensorsHeader(kFixture + "/model.safetensors");
  ASSERT_TRUE(w.count("model.embed_tokens.weight"));
  EXPECT_EQ(w["model.embed_tokens.weight"].shape, (ops::Shape{512, 64}));
}

TEST(Safetensors, BadHeadersAreErrors) {
  auto header = [](const std::string& json, size_t dataBytes) {
    std::string s(8, '\0');
    uint64_t n = json.size();
    for (int i = 0; i < 8; ++i) s[i] = (char)((n >> (8 * i)) & 0xff);
    return s + json + std::string(dataBytes, '\0');
  };
  auto parse = [](const std::string& b) { return models::parseSafetensorsHeader((const uint8_t*)b.data(), b.size(), "x.safetensors"); };
  expectError([&] { parse("abc"); }, {"x.safetensors", "too short"});
  expectError([&] { parse(std::string("\xff\xff\xff\xff\0\0\0\0{}", 10)); }, {"claims"});
  expectError([&] { parse(header("{not json", 0)); }, {"not valid JSON"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)); }, {"'w'", "out of range"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16)); }, {"'w'", "needs 12"});
  expectError([&] { parse(header(R"({"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", 16)); }, {"'Q4'"});
  expectError([&] { parse(header(R"({"w":{"shape":[4],"data_offsets":[0,16]}})", 16)); }, {"'w'", "malformed"});
  EXPECT_EQ(parse(header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16)).at("w").offset, 8u + 55u);
  // The format's rules: tensors tile the data section exactly, keys are
  // unique, numbers are integers, __metadata__ holds strings.
  const std::string two = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  EXPECT_EQ(parse(header(two, 16)).size(), 2u);
  EXPECT_EQ(parse(header(two + "    ", 16)).size(), 2u);  // space padding
  expectError([&] { parse(header(two, 17)); }, {"x.safetensors", "cover 16 bytes", "17"});  // a trailing byte
  expectError([&] { parse(header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)); },
              {"'b'", "overlaps"});
  expectError([&] { parse(header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)); },
              {"overlaps"});  // aliased
  expectError([&] { parse(header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20)); },
              {"belong to no tensor", "'b'"});
  expectError([&] { parse(header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 16)); },
              {"'a'", "twice"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0.0,16]}})", 16)); }, {"'w'", "integers"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-1,16]}})", 16)); }, {"'w'", "integers"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})", 16)); }, {"'w'", "shape"});
  expectError([&] { parse(header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}})", 16)); }, {"'w'", "'x'"});
  expectError([&] { parse(header(R"({"__metadata__":[1],"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16)); },
              {"__metadata__"});
  expectError([&] { parse(header(R"({"__metadata__":{"format":1},"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16)); },
              {"__metadata__", "'format'"});
  EXPECT_EQ(parse(header(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16)).size(), 1u);
  expectError([&] { parse(header(R"( {"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16)); }, {"start with"});
  // A header length one byte long: the JSON takes a data byte (a parse
  // error) or, when that byte is a space, the tensors no longer fit.
  std::string shifted = header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 0) + "    ";
  shifted[0] += 1;
  expectError([&] { parse(shifted); }, {"out of range"});
}

TEST(HfConfig, MissingOrBadFieldsAreNamed) {
  auto cfg = nlohmann::json::parse(readFile(kFixture + "/config.json"));
  EXPECT_EQ(models::parseLlamaConfig(cfg, "c.json").numKvHeads, 2);
  for (const char* field : {"hidden_size", "num_hidden_layers", "vocab_size", "rms_norm_eps", "model_type"}) {
    auto broken = cfg;
    broken.erase(field);
    expectError([&] { models::parseLlamaConfig(broken, "c.json"); }, {"c.json", field});
  }
  auto bad = cfg;
  bad["num_key_value_heads"] = 3;
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"multiple"});
  bad = cfg;
  bad["model_type"] = "gpt2";
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"gpt2"});
  // Every field's domain (hardening): the field named, the value shown.
  const std::vector<std::pair<std::pair<const char*, nlohmann::json>, const char*>> cases = {
      {{"rms_norm_eps", 0.0}, "rms_norm_eps"},      {{"rms_norm_eps", -1e-5}, "rms_norm_eps"},
      {{"rms_norm_eps", 2.0}, "rms_norm_eps"},      {{"rope_theta", 0}, "rope_theta"},
      {{"rope_theta", -10000.0}, "rope_theta"},     {{"rope_theta", "big"}, "rope_theta"},
      {{"bos_token_id", 512}, "bos_token_id"},      {{"eos_token_id", -1}, "eos_token_id"},
      {{"eos_token_id", nlohmann::json::array({1, 9999})}, "eos_token_id"},
      {{"hidden_size", int64_t(1) << 40}, "hidden_size"},
      {{"vocab_size", int64_t(1) << 30}, "vocab_size"},
      {{"rope_parameters", "default"}, "rope_parameters"},
      {{"rope_parameters", {{"rope_type", "yarn"}}}, "yarn"},
      {{"rope_parameters", {{"rope_theta", -1}}}, "rope_theta"},
      {{"torch_dtype", "float8"}, "float8"},        {{"dtype", 5}, "dtype"},
      {{"architectures", {"GPT2LMHeadModel"}}, "GPT2LMHeadModel"},
      {{"architectures", {"Qwen2ForCausalLM"}}, "does not match"},
      {{"hidden_act", 3}, "hidden_act"},            {{"num_attention_heads", 5}, "multiple"}};
  for (const auto& [kv, needle] : cases) {
    bad = cfg;
    bad[kv.first] = kv.second;
    if (std::string(kv.first) == "rope_theta") bad.erase("rope_parameters");  // where the fixture keeps theta
    expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", needle});
  }
  // Nesting past the bound is refused when the file is read.
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  const std::string path = (std::filesystem::temp_directory_path() / "strata-deep-config.json").string();
  std::ofstream(path) << deep;
  expectError([&] { models::readLlamaConfig(path); }, {path, "nested deeper"});
}

// Gemma's config: tied embeddings by default, GELU's tanh form (Gemma 1's
// "gelu" names it too), nothing else; a bidirectional model is refused.
TEST(HfConfig, Gemma) {
  auto cfg = nlohmann::json::parse(readFile(kFixture + "/config.json"));
  cfg["model_type"] = "gemma";
  cfg["architectures"] = {"GemmaForCausalLM"};
  cfg.erase("tie_word_embeddings");
  for (const char* act : {"gelu_pytorch_tanh", "gelu"}) {
    cfg["hidden_act"] = act;
    const models::LlamaConfig c = models::parseLlamaConfig(cfg, "c.json");
    EXPECT_TRUE(c.gemma() && c.tieEmbeddings) << act;
    EXPECT_EQ(models::toJson(c)["hidden_act"], "gelu_pytorch_tanh");
  }
  auto bad = cfg;
  bad["hidden_act"] = "silu";
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "silu", "gelu_pytorch_tanh"});
  bad = cfg;
  bad["use_bidirectional_attention"] = true;
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "use_bidirectional_attention"});
}

// Phi-3: partial_rotary_factor gives the rotary dims (an even integer or an
// error), a sliding window caps the context; the config round-trips.
TEST(HfConfig, Phi3) {
  auto cfg = nlohmann::json::parse(readFile(kFixture + "/config.json"));
  cfg["model_type"] = "phi3";
  cfg["architectures"] = {"Phi3ForCausalLM"};
  cfg["partial_rotary_factor"] = 0.5;
  cfg["sliding_window"] = 100;
  const models::LlamaConfig c = models::parseLlamaConfig(cfg, "c.json");
  EXPECT_TRUE(c.phi3());
  EXPECT_EQ(c.rotaryDim, c.headDim / 2);
  EXPECT_EQ(c.maxPositions, 100);
  EXPECT_EQ(models::parseLlamaConfig(models::toJson(c), "round").rotaryDim, c.rotaryDim);
  cfg["partial_rotary_factor"] = 1.0;
  EXPECT_EQ(models::parseLlamaConfig(cfg, "c.json").rotaryDim, 0);
  auto bad = cfg;
  bad["partial_rotary_factor"] = 0.3;  // 4.8 of 16 dims
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "partial_rotary_factor", "even integer"});
  bad["partial_rotary_factor"] = 1.5;
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "partial_rotary_factor"});
}

// GPT-2's own keys; n_inner defaults to 4 n_embd; what strata does not run
// is named.
TEST(HfConfig, Gpt2) {
  nlohmann::json cfg = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"n_embd", 64},
                        {"n_layer", 2}, {"n_head", 4}, {"n_positions", 256}, {"vocab_size", 512},
                        {"layer_norm_epsilon", 1e-5}, {"activation_function", "gelu_new"}, {"n_inner", nullptr}};
  const models::LlamaConfig c = models::parseLlamaConfig(cfg, "c.json");
  EXPECT_TRUE(c.gpt2() && c.tieEmbeddings);
  EXPECT_EQ(c.intermediateSize, 256);
  EXPECT_EQ(c.headDim, 16);
  EXPECT_EQ(c.geluApproximate, "tanh");
  const models::LlamaConfig back = models::parseLlamaConfig(models::toJson(c), "round");
  EXPECT_EQ(back.intermediateSize, 256);
  EXPECT_EQ(back.geluApproximate, "tanh");
  auto bad = cfg;
  bad["activation_function"] = "relu";
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "activation_function", "relu"});
  bad = cfg;
  bad["scale_attn_by_inverse_layer_idx"] = true;
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "scale_attn_by_inverse_layer_idx"});
  bad = cfg;
  bad.erase("n_head");
  expectError([&] { models::parseLlamaConfig(bad, "c.json"); }, {"c.json", "n_head"});
}

TEST(HfCheckpoint, MissingTensorAndShapeMismatchAreNamed) {
  auto cfg = models::readLlamaConfig(kFixture + "/config.json");
  auto w = models::readSafetensorsHeader(kFixture + "/model.safetensors");
  auto missing = w;
  missing.erase("model.layers.1.mlp.up_proj.weight");
  expectError([&] { models::buildLlamaGraph(cfg, missing, "m"); }, {"model.layers.1.mlp.up_proj.weight"});
  auto wrong = cfg;
  wrong.intermediateSize = 100;
  expectError([&] { models::buildLlamaGraph(wrong, w, "m"); }, {"shape"});
}

TEST(ModelSource, UnknownPathsAreErrors) {
  expectError([] { models::loadModel("/nonexistent/model"); }, {"does not exist"});
  TempDir d;
  expectError([&] { models::loadModel(d.path.string()); }, {"without config.json"});
  expectError([&] { models::loadModel(d.write("x.txt", "hi")); }, {"not a model"});
}

// Inputs the fuzzers once crashed on: each must now load or fail cleanly.
TEST(Onnx, FuzzRegressionsFailCleanly) {
  int seen = 0;
  for (const auto& e : fs::directory_iterator(STRATA_FUZZ_REGRESSIONS)) {
    if (e.path().filename().string().rfind("onnx-", 0) != 0) continue;
    std::string b = readFile(e.path().string());
    EXPECT_THROW(models::loadOnnxFromBytes((const uint8_t*)b.data(), b.size(), "/nonexistent/m.onnx"), Error) << e.path();
    ++seen;
  }
  EXPECT_GT(seen, 0);
}
