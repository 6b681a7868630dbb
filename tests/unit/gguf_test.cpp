// The GGUF reader (models/gguf.h) on files written by gguf-py, llama.cpp's
// own writer (tests/data/gguf/make_gguf.py), and on hand-built files that
// break each rule of the format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "models/gguf.h"
#include "models/gguf_config.h"
#include "models/gguf_model.h"
#include "models/gguf_tokenizer.h"
#include "models/model_source.h"
#include "ops/abi.h"
#include "ops/quant.h"
#include "ops/error.h"
#include "ops/tensor.h"
#include "runtime/weights.h"
#include "tests/unit/quant_blocks.h"

using namespace strata;

namespace {

std::string dataDir() { return STRATA_GGUF_DATA; }

std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

models::GgufFile parse(const std::string& bytes) {
  return models::parseGguf(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.gguf");
}

void expectError(const std::string& bytes, const std::vector<std::string>& needles) {
  try {
    parse(bytes);
    ADD_FAILURE() << "parsed, expected an error with " << needles.front();
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// A GGUF file built field by field.
struct Builder {
  std::string b;
  template <typename T>
  Builder& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Builder& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Builder& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    b += "GGUF";
    return put<uint32_t>(version).put<uint64_t>(tensors).put<uint64_t>(kvs);
  }
  Builder& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>((uint32_t)dims.size());
    for (uint64_t d : dims) put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Builder& pad(size_t alignment = 32) {
    b.append((alignment - b.size() % alignment) % alignment, '\0');
    return *this;
  }
  Builder& data(size_t bytes) {
    b.append(bytes, '\x01');
    return *this;
  }
};

TEST(Gguf, ReadsWhatGgufPyWrote) {
  models::GgufFile f = models::readGguf(dataDir() + "/types.gguf");
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.alignment, 32u);
  EXPECT_EQ(f.meta.at("general.architecture").value, "llama");
  EXPECT_EQ(f.meta.at("t.u8").value, 200);
  EXPECT_EQ(f.meta.at("t.i8").value, -100);
  EXPECT_EQ(f.meta.at("t.u16").value, 60000);
  EXPECT_EQ(f.meta.at("t.i16").value, -30000);
  EXPECT_EQ(f.meta.at("t.u32").value, 4000000000u);
  EXPECT_EQ(f.meta.at("t.i32").value, -2000000000);
  EXPECT_EQ(f.meta.at("t.f32").value, 1.5);
  EXPECT_EQ(f.meta.at("t.bool").value, true);
  EXPECT_EQ(f.meta.at("t.str").value, "h\xc3\xa9llo");
  EXPECT_EQ(f.meta.at("t.u64").value.get<uint64_t>(), (uint64_t(1) << 63) + 5);
  EXPECT_EQ(f.meta.at("t.i64").value, -(int64_t(1) << 62));
  EXPECT_EQ(f.meta.at("t.f64").value, -0.25);
  EXPECT_EQ(f.meta.at("t.strs").value, nlohmann::json({"a", "", "\xc3\xbcn\xc3\xaf"}));
  EXPECT_EQ(f.meta.at("t.strs").elemType, models::GgufType::String);
  EXPECT_EQ(f.meta.at("t.ints").value, nlohmann::json({1, -2, 3}));
  EXPECT_EQ(f.meta.at("t.nested").value, nlohmann::json({{1, 2}, {3}}));
  ASSERT_EQ(f.tensors.size(), 5u);
  struct Want {
    const char* name;
    const char* type;
    std::vector<int64_t> dims;
    uint64_t nbytes;
  };
  const Want want[] = {{"f32", "F32", {5, 3}, 60}, {"f16", "F16", {4}, 8}, {"bf16", "BF16", {2, 2}, 8},
                       {"q8_0", "Q8_0", {64, 2}, 136}, {"q4_k", "Q4_K", {256, 1}, 144}};
  const std::string bytes = readAll(dataDir() + "/types.gguf");
  for (size_t i = 0; i < 5; ++i) {
    const models::GgufTensor& t = f.tensors[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.typeName, want[i].type);
    EXPECT_EQ(t.dims, want[i].dims) << t.name;
    EXPECT_EQ(t.nbytes, want[i].nbytes) << t.name;
    EXPECT_EQ(t.offset % 32, 0u);
    EXPECT_LE(t.offset + t.nbytes, bytes.size());
  }
  // The data is where the offsets say: f32 holds 0..14, the Q8_0 bytes count up.
  float v[15];
  std::memcpy(v, bytes.data() + f.tensors[0].offset, sizeof v);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(v[i], (float)i);
  EXPECT_EQ((uint8_t)bytes[f.tensors[3].offset + 5], 5);
}

TEST(Gguf, HonoursTheAlignmentKey) {
  models::GgufFile f = models::readGguf(dataDir() + "/aligned64.gguf");
  EXPECT_EQ(f.alignment, 64u);
  EXPECT_EQ(f.dataOffset % 64, 0u);
  ASSERT_EQ(f.tensors.size(), 2u);
  const std::string bytes = readAll(dataDir() + "/aligned64.gguf");
  for (const auto& t : f.tensors) {
    EXPECT_EQ(t.offset % 64, 0u);
    float x;
    std::memcpy(&x, bytes.data() + t.offset, 4);
    EXPECT_EQ(x, t.name == "a" ? 1.f : 2.f);
  }
}

// Every prefix of a valid file is an error (never a crash or a read past
// the end), and so is every rule broken on its own.
TEST(Gguf, BadFilesAreErrorsNamingTheKeyOrTensor) {
  const std::string good = readAll(dataDir() + "/types.gguf");
  for (size_t n = 0; n < good.size(); n += (n < 200 ? 1 : 7)) {
    bool threw = false;
    try {
      parse(good.substr(0, n));
    } catch (const Error& e) {
      threw = std::string(e.what()).find("t.gguf") != std::string::npos;
    }
    if (n < good.size() - 200) EXPECT_TRUE(threw) << "prefix of " << n << " bytes";
  }
  expectError("GGML" + good.substr(4), {"no 'GGUF' magic"});
  expectError(Builder().header(0, 0, 1).b, {"version 1"});
  expectError(Builder().header(0, 1u << 30).b, {"metadata entries"});
  expectError(Builder().header(1u << 30, 0).b, {"tensors"});
  expectError(Builder().header(0, 1).str("k").put<uint32_t>(13).b + std::string(16, '\0'), {"'k'", "value type 13"});
  expectError(Builder().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).b, {"'k'", "bool"});
  expectError(Builder().header(0, 2).str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2).b,
              {"'k'", "twice"});
  expectError(Builder().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(1u << 20).b, {"metadata 'k'", "needs"});
  expectError(Builder().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1u << 28).b,
              {"'k'", "elements"});
  Builder deep;
  deep.header(0, 1).str("k").put<uint32_t>(9);
  for (int i = 0; i < 6; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
  expectError(deep.put<uint32_t>(4).put<uint64_t>(1).put<uint32_t>(0).b + std::string(64, '\0'), {"'k'", "deeper"});
  expectError(Builder().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48).b, {"power of two"});
  expectError(Builder().header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(64).b, {"u32"});
  // Tensors: dims, type, blocks, alignment, bounds, overlap, names.
  auto one = [](const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t bytes) {
    return Builder().header(1, 0).tensor(name, dims, type, offset).pad().data(bytes).b;
  };
  EXPECT_EQ(parse(one("w", {8, 2}, 0, 0, 64)).tensors.at(0).nbytes, 64u);
  expectError(one("w", {}, 0, 0, 64), {"'w'", "dims"});
  expectError(one("w", {1, 1, 1, 1, 1}, 0, 0, 64), {"'w'", "dims"});
  expectError(one("w", {8, 0}, 0, 0, 64), {"'w'", "zero"});
  expectError(one("w", {8}, 99, 0, 64), {"'w'", "type 99"});
  expectError(one("w", {48}, 12, 0, 4096), {"'w'", "Q4_K", "256-element blocks"});
  expectError(one("w", {8}, 0, 16, 64), {"'w'", "alignment"});
  expectError(one("w", {8, 3}, 0, 0, 64), {"'w'", "past the end"});
  expectError(one("w", {uint64_t(1) << 40, uint64_t(1) << 40}, 0, 0, 64), {"'w'", "overflow"});
  expectError(Builder().header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {16}, 0, 0).pad().data(64).b,
              {"'", "overlaps"});
  expectError(Builder().header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad().data(64).b,
              {"'a'", "twice"});
}

// A Llama model's metadata (llama.cpp's keys) becomes the LlamaConfig a
// config.json with the same values gives, with the same domain checks.
struct Meta {
  std::vector<std::pair<std::string, std::string>> kv;  // key, encoded type + value
  template <typename T>
  Meta& set(const std::string& key, uint32_t type, T v) {
    Builder b;
    b.put<uint32_t>(type).put<T>(v);
    kv.push_back({key, b.b});
    return *this;
  }
  Meta& str(const std::string& key, const std::string& v) {
    Builder b;
    b.put<uint32_t>(8).str(v);
    kv.push_back({key, b.b});
    return *this;
  }
  std::string file(const std::vector<std::string>& tensors = {}) const {
    Builder b;
    b.header(tensors.size(), kv.size());
    for (const auto& [k, v] : kv) b.str(k).b += v;
    for (size_t i = 0; i < tensors.size(); ++i) b.tensor(tensors[i], {8}, 0, 32 * i);
    return b.pad().data(32 * tensors.size()).b;
  }
};

Meta llamaMeta() {
  Meta m;
  m.str("general.architecture", "llama")
      .set<uint32_t>("llama.embedding_length", 4, 64)
      .set<uint32_t>("llama.feed_forward_length", 4, 176)
      .set<uint32_t>("llama.block_count", 4, 2)
      .set<uint32_t>("llama.attention.head_count", 4, 4)
      .set<uint32_t>("llama.attention.head_count_kv", 4, 2)
      .set<uint32_t>("llama.context_length", 4, 256)
      .set<uint32_t>("llama.vocab_size", 4, 512)
      .set<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-5f)
      .set<float>("llama.rope.freq_base", 6, 500000.f)
      .set<uint32_t>("tokenizer.ggml.bos_token_id", 4, 0)
      .set<uint32_t>("tokenizer.ggml.eos_token_id", 4, 1);
  return m;
}

TEST(GgufConfig, LlamaMetadataIsTheConfig) {
  models::LlamaConfig c = models::llamaConfigFromGguf(parse(llamaMeta().file({"token_embd.weight", "output.weight"})));
  EXPECT_EQ(c.modelType, "llama");
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.intermediateSize, 176);
  EXPECT_EQ(c.numLayers, 2);
  EXPECT_EQ(c.numHeads, 4);
  EXPECT_EQ(c.numKvHeads, 2);
  EXPECT_EQ(c.headDim, 16);
  EXPECT_EQ(c.vocabSize, 512);
  EXPECT_EQ(c.maxPositions, 256);
  EXPECT_NEAR(c.rmsNormEps, 1e-5, 1e-12);
  EXPECT_EQ(c.ropeTheta, 500000.0);
  EXPECT_EQ(c.bosId, 0);
  EXPECT_EQ(c.eosId, 1);
  EXPECT_FALSE(c.tieEmbeddings);
  EXPECT_FALSE(c.qkvBias);
  // No output.weight: the embedding is the lm_head (tied).
  EXPECT_TRUE(models::llamaConfigFromGguf(parse(llamaMeta().file({"token_embd.weight"}))).tieEmbeddings);
}

TEST(GgufConfig, MissingOrBadKeysAreNamed) {
  auto configError = [](const Meta& m, const std::vector<std::string>& needles) {
    try {
      models::llamaConfigFromGguf(parse(m.file()));
      ADD_FAILURE() << "accepted, expected " << needles.front();
    } catch (const Error& e) {
      for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  Meta m = llamaMeta();
  m.kv.erase(m.kv.begin() + 1);  // llama.embedding_length
  configError(m, {"t.gguf", "llama.embedding_length", "missing"});
  m = llamaMeta();
  m.kv[0] = {"general.architecture", Meta().str("x", "gpt2").kv[0].second};
  configError(m, {"general.architecture 'gpt2'"});
  m = llamaMeta().set<float>("llama.block_count", 6, 2.f);
  m.kv.erase(m.kv.begin() + 3);  // the u32 block_count: the float one stays
  configError(m, {"llama.block_count", "integer"});
  m = llamaMeta();
  m.kv[8] = {"llama.attention.layer_norm_rms_epsilon", Meta().set<float>("x", 6, -1.f).kv[0].second};
  configError(m, {"t.gguf", "rms_norm_eps"});
  m = llamaMeta();
  m.kv[11] = {"tokenizer.ggml.eos_token_id", Meta().set<uint32_t>("x", 4, 9999).kv[0].second};
  configError(m, {"eos_token_id", "vocab_size 512"});
  configError(llamaMeta().str("llama.rope.scaling.type", "yarn"), {"llama.rope.scaling.type", "yarn"});
  m = llamaMeta();
  m.kv.erase(m.kv.begin() + 7);  // llama.vocab_size, and no token list
  configError(m, {"vocabulary size"});
}

// A GGUF's byte-level BPE vocabulary (written by gguf-py from a
// tokenizer.json, tests/data/gguf/make_gguf.py) tokenizes as Hugging Face
// does: the golden ids and text of that tokenizer.json, bos included.
TEST(GgufTokenizer, EncodesLikeTheTokenizerItCameFrom) {
  const nlohmann::json golden = nlohmann::json::parse(readAll(std::string(STRATA_TOKENIZER_DATA) + "/golden.json"));
  for (auto [file, key] : {std::pair{"tok-llama3.gguf", "llama3_style.json"}, std::pair{"tok-gpt2.gguf", "tiny-llama"}}) {
    models::Tokenizer tok = models::tokenizerFromGguf(models::readGguf(dataDir() + "/" + file));
    ASSERT_FALSE(golden.at(key).empty());
    for (const auto& c : golden.at(key)) {
      const std::string text = c.at("text");
      EXPECT_EQ(tok.encode(text), c.at("ids").get<std::vector<int64_t>>()) << file << ": " << text;
      EXPECT_EQ(tok.decode(c.at("ids").get<std::vector<int64_t>>()), c.at("decoded").get<std::string>()) << file;
    }
  }
}

// llama.cpp's own ids (llama-tokenize, recorded by record_llama_cpp.py) for
// 60 tricky strings, on every vocabulary form: SentencePiece with scores
// (tok-spm) and byte-level BPE under each pre-tokenizer strata reads.
TEST(GgufTokenizer, EncodesLikeLlamaCpp) {
  const nlohmann::json rec = nlohmann::json::parse(readAll(dataDir() + "/llama_cpp_tokens.json"));
  const auto& strings = rec.at("strings");
  ASSERT_GE(strings.size(), 50u);
  ASSERT_EQ(rec.at("ids").size(), 6u);
  for (const auto& [file, ids] : rec.at("ids").items()) {
    models::Tokenizer tok = models::tokenizerFromGguf(models::readGguf(dataDir() + "/" + file));
    ASSERT_EQ(ids.size(), strings.size()) << file;
    for (size_t i = 0; i < strings.size(); ++i)
      EXPECT_EQ(tok.encode(strings[i].get<std::string>()), ids[i].get<std::vector<int64_t>>())
          << file << ": " << strings[i].dump();
  }
}

TEST(GgufTokenizer, UnsupportedFormsAreNamed) {
  auto tokError = [](const std::string& bytes, const std::string& needle) {
    try {
      models::tokenizerFromGguf(parse(bytes));
      ADD_FAILURE() << "accepted, expected " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  tokError(Meta().str("tokenizer.ggml.model", "bert").file(), "tokenizer.ggml.model 'bert'");
  tokError(Meta().str("tokenizer.ggml.model", "gpt2").file(), "'tokenizer.ggml.tokens' is missing");
  // Token types that are not integers (a JSON type error escaped before).
  Meta m = Meta().str("tokenizer.ggml.model", "gpt2");
  Builder strings;
  strings.put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1).str("a");
  m.kv.push_back({"tokenizer.ggml.tokens", strings.b});
  m.kv.push_back({"tokenizer.ggml.merges", strings.b});
  m.kv.push_back({"tokenizer.ggml.token_type", strings.b});
  tokError(m.file(), "token_type must list one integer type per token");
  // A pre-tokenizer llama.cpp names that strata does not implement yet.
  std::string bytes = readAll(dataDir() + "/tok-gpt2.gguf");
  const size_t at = bytes.find("gpt-2", bytes.find("tokenizer.ggml.pre"));
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "zzzzz");
  tokError(bytes, "tokenizer.ggml.pre 'zzzzz'");
}

// The tiny-llama fixture as a GGUF (make_gguf.py): every tensor is read in
// place under its Hugging Face name, and the q / k rows come back in
// rotate-half order: equal to the safetensors checkpoint's, value for value.
TEST(GgufModel, TensorsAreTheCheckpointsInPlace) {
  const std::string path = dataDir() + "/tiny-llama-f32.gguf";
  ops::GraphDef gguf = models::loadModel(path);
  ops::GraphDef hf = models::loadModel(std::string(STRATA_FIXTURE_DIR));
  ASSERT_EQ(gguf.weights.size(), hf.weights.size());
  runtime::WeightStore store;
  for (const ops::WeightRef& h : hf.weights) {
    auto it = std::find_if(gguf.weights.begin(), gguf.weights.end(), [&](const ops::WeightRef& w) { return w.name == h.name; });
    ASSERT_NE(it, gguf.weights.end()) << h.name;
    EXPECT_NE(it->file.find("tiny-llama-f32.gguf"), std::string::npos);
    const bool q = h.name.find("q_proj") != std::string::npos, k = h.name.find("k_proj") != std::string::npos;
    EXPECT_EQ(it->interleavedRopeHeads, q ? 4 : k ? 2 : 0) << h.name;
    ops::Tensor a = store.load(*it), b = store.load(h);
    ASSERT_EQ(a.shape(), b.shape()) << h.name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << h.name;
  }
  EXPECT_EQ(gguf.meta.value("bos_token_id", -1), 0);
  EXPECT_EQ(models::findTokenizer(path), path);
}

TEST(GgufModel, ErrorsNameTheGgufTensor) {
  std::string bytes = readAll(dataDir() + "/tiny-llama-f32.gguf");
  const size_t at = bytes.find("blk.1.ffn_up.weight");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 19, "blk.1.ffn_uq.weight");
  try {
    models::ggufModel(parse(bytes));
    ADD_FAILURE() << "loaded a model without blk.1.ffn_up.weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor 'blk.1.ffn_up.weight'"), std::string::npos) << e.what();
  }
}

// ops/quant.h's dequantization of llama.cpp's own blocks (llama-quantize
// wrote them; make_quant.py) equals gguf-py's: every format, one tensor
// each (sums and samples), and every tensor of the model in six of
// llama-quantize's types read through the weight store (q / k rows back in
// rotate-half order: compared by sums, which the row order does not
// change).
TEST(GgufQuant, DequantizesAsGgufPy) {
  const nlohmann::json want = nlohmann::json::parse(readAll(dataDir() + "/quant_expect.json"));
  auto check = [&](const std::string& key, const std::vector<float>& v, bool samples) {
    SCOPED_TRACE(key);
    const auto& w = want.at(key);
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += double(x) * x;
    EXPECT_NEAR(sum, w.at("sum").get<double>(), 1e-6 * std::max(1.0, w.at("sum_sq").get<double>()));
    EXPECT_NEAR(sq, w.at("sum_sq").get<double>(), 1e-6 * w.at("sum_sq").get<double>());
    if (!samples) return;
    const auto& every = w.at("every_61st");
    for (size_t i = 0; i < every.size(); ++i) ASSERT_EQ(v.at(i * 61), every[i].get<float>()) << "value " << i * 61;
  };
  models::GgufFile f = models::readGguf(dataDir() + "/quant-tensors.gguf");
  std::ifstream in(dataDir() + "/quant-tensors.gguf", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(f.tensors.size(), 8u);
  for (const auto& t : f.tensors) {
    const ops::QuantFormat* q = ops::quantFormat(t.typeName);
    ASSERT_NE(q, nullptr) << t.typeName;
    ops::Tensor v = ops::dequantize(*q, reinterpret_cast<const uint8_t*>(bytes.data()) + t.offset, {t.dims[1], t.dims[0]});
    check("quant-tensors.gguf:" + t.name, std::vector<float>(v.data<float>(), v.data<float>() + v.numel()), true);
  }
  // The CPU kernels' panels of every format, in its own form (nibbles for
  // the 4-bit ones), in i8 and in sub-blocks of 16 with offsets (the form
  // of a node mixing formats): the integers times their scales plus their
  // offsets are the dequantized values (bit for bit; where nibbles move
  // Q4_0's -8 into the offsets, to one rounding of the sum).
  int nibbleForms = 0;
  for (const auto& t : f.tensors) {
    const ops::QuantFormat* q = ops::quantFormat(t.typeName);
    const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data()) + t.offset;
    const int64_t K = t.dims[0], N = t.dims[1], width = 16;
    ops::Tensor want = ops::dequantize(*q, data, {N, K});
    const strata::abi::Int8BlockForm own = *strata::abi::int8BlockForm(q->name);
    EXPECT_EQ(own.nibbles, q->bits == 4) << t.name;
    EXPECT_EQ(own.superBlock, q->blockElems) << t.name;
    nibbleForms += own.nibbles;
    strata::abi::Int8BlockForm mixed16 = own;  // a Q4_K_M q / k / v node's form
    mixed16.block = 16, mixed16.offsets = true, mixed16.nibbles = false;
    for (strata::abi::Int8BlockForm form : {own, mixed16, strata::abi::Int8BlockForm{q->subBlock, q->offsets},
                                            strata::abi::Int8BlockForm{16, true}}) {
      if (form.superBlock && form.block != q->subBlock && !q->subScales()) continue;  // 32-value formats: one scale a block
      auto scaleOf = [&](const strata::abi::Int8BlockPanels& p, int64_t n, int64_t k, bool off) {
        if (!form.superBlock) {
          const size_t at = size_t(((n / width) * K / form.block + k / form.block) * width + n % width);
          return off ? p.offsets[at] : p.scales[at];
        }
        const size_t at = size_t(((n / width) * K / form.superBlock + k / form.superBlock) * width + n % width);
        float v = ops::halfToFloat(off ? p.halfOffsets[at] : p.halfScales[at]);
        if (form.subScales) {
          const size_t si = size_t(((n / width) * K / form.block + k / form.block) * width + n % width);
          v *= float(off ? p.subOffsets[si] : p.subScales[si]);
        }
        return v;
      };
      const strata::abi::Int8BlockPanels p = strata::abi::packInt8BlockPanels(data, K, N, width, *q, form);
      ASSERT_EQ((int64_t)p.values.size(), (N + width - 1) / width * width * K / (form.nibbles ? 2 : 1)) << t.name;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          int integer;
          if (form.nibbles) {
            // A K pair a byte: [K / 2, width] a panel, step 2k low.
            const auto byte = uint8_t(p.values[size_t(((n / width) * K / 2 + k / 2) * width + n % width)]);
            integer = k % 2 ? byte >> 4 : byte & 0xF;
          } else {
            // K pairs: [K / 2, 2 width] a panel.
            integer = p.values[size_t(((n / width) * K + k - k % 2) * width + 2 * (n % width) + k % 2)];
          }
          const float sc = scaleOf(p, n, k, false);
          float v = sc * float(integer);
          if (form.offsets) v += scaleOf(p, n, k, true);
          const float w = want.data<float>()[n * K + k];
          if (form.nibbles && q->qMin != 0)
            ASSERT_NEAR(v, w, 1e-6f * std::abs(sc) * 16) << t.name << " [" << n << ", " << k << "] nibbles";
          else
            ASSERT_EQ(v, w) << t.name << " [" << n << ", " << k << "] form " << form.block << (form.nibbles ? " nibbles" : "")
                            << " super " << form.superBlock;
        }
    }
  }
  EXPECT_GE(nibbleForms, 3);  // Q4_0, Q4_1, Q4_K
  runtime::WeightStore store;
  ops::GraphDef g;
  for (const char* type : {"q8_0", "q4_0", "q4_1", "q4_k_m", "q5_k_m", "q6_k"}) {
    const std::string name = std::string("tiny-") + type + ".gguf", model = dataDir() + "/" + name;
    g = models::loadModel(model);
    int quantized = 0;
    for (const auto& gt : models::readGguf(model).tensors) {
      auto it = std::find_if(g.weights.begin(), g.weights.end(), [&](const ops::WeightRef& w) {
        return w.offset == gt.offset && w.file.find(name) != std::string::npos;
      });
      ASSERT_NE(it, g.weights.end()) << name << " " << gt.name;
      quantized += !it->quant.empty();
      ops::Tensor v = store.load(*it);
      check(name + ":" + gt.name, std::vector<float>(v.data<float>(), v.data<float>() + v.numel()), false);
    }
    EXPECT_EQ(quantized, 9) << name;  // 7 matrices, the embedding and the head; norms stay f32
  }
  // The kernels' stored form refuses them by name.
  auto q = std::find_if(g.weights.begin(), g.weights.end(), [](const ops::WeightRef& w) { return !w.quant.empty(); });
  try {
    store.stored(*q);
    ADD_FAILURE() << "stored() gave a quantized weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(q->quant), std::string::npos) << e.what();
  }
}

// The GPU form of every format (abi::packGpuInt8Rows, what the CUDA
// quantized GEMV reads): integers [N, K] row-major, or nibbles pairing a
// block's value i with value i + block / 2 in byte i; an f16 scale (and
// offset) a block, and the form of a node mixing formats. Where the file
// holds f16 values a block, integer times scale plus offset is the
// dequantized value bit for bit (Q4_0's -8 x d in the offsets: to one
// rounding of the sum); the K formats' products of the super-block's f16
// and a 6-bit sub-block integer are rounded to f16, so each value is within
// half an f16 unit of its scale times the integer, plus that of its offset.
TEST(GgufQuant, GpuFormsAreTheDequantizedValues) {
  models::GgufFile f = models::readGguf(dataDir() + "/quant-tensors.gguf");
  std::ifstream in(dataDir() + "/quant-tensors.gguf", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<strata::abi::Int8BlockForm> all = strata::abi::gpuInt8Forms();
  const strata::abi::Int8BlockForm mixed = all.back();
  EXPECT_EQ(strata::abi::int8FormName(mixed), "i8b16ho");  // Q6_K's 16-value blocks, the offsets of Q4_K and friends
  EXPECT_EQ(all.size(), 5u);  // i8b32h (Q8_0, Q5_0), n4b32ho (Q4_0, Q4_1, Q4_K), i8b32ho (Q5_1, Q5_K), i8b16h (Q6_K)
  // Half an f16 unit of x (2^-11 of it; 2^-25 among the subnormals).
  auto halfUnit = [](float x) { return std::max(std::abs(x) * 0x1p-11f, 0x1p-25f); };
  int64_t rounded = 0;
  for (const auto& t : f.tensors) {
    const ops::QuantFormat* q = ops::quantFormat(t.typeName);
    const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data()) + t.offset;
    const int64_t K = t.dims[0], N = t.dims[1];
    ops::Tensor want = ops::dequantize(*q, data, {N, K});
    const strata::abi::Int8BlockForm own = strata::abi::gpuInt8Form(*strata::abi::int8BlockForm(q->name));
    EXPECT_FALSE(own.subScales) << t.name;
    EXPECT_EQ(own.superBlock, own.block) << t.name << ": an f16 scale a block";
    EXPECT_NE(std::find(all.begin(), all.end(), own), all.end()) << t.name;
    for (const strata::abi::Int8BlockForm& form : {own, mixed}) {
      const strata::abi::Int8BlockPanels p = strata::abi::packGpuInt8Rows(data, K, N, *q, form);
      ASSERT_EQ((int64_t)p.values.size(), N * (form.nibbles ? K / 2 : K)) << t.name;
      ASSERT_TRUE(p.scales.empty() && p.offsets.empty()) << t.name << ": no f32 rows";
      const ops::Tensor got = strata::testing::gpuFormValues(p, form, K, N);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const size_t at = size_t(n * (K / form.block) + k / form.block);
          const float sc = ops::halfToFloat(p.halfScales[at]);
          const float off = form.offsets ? ops::halfToFloat(p.halfOffsets[at]) : 0.f;
          const float v = got.data<float>()[n * K + k], w = want.data<float>()[n * K + k];
          if (q->subScales()) {
            // |integer| <= 64 for every K format; one more unit for the f32
            // roundings of the product and the sum.
            const float bound = 64 * halfUnit(sc) + halfUnit(off) + 2 * std::abs(w) * 0x1p-24f;
            ASSERT_LE(std::abs(v - w), bound) << t.name << " [" << n << ", " << k << "] " << strata::abi::int8FormName(form);
            rounded += v != w;
          } else if (form.nibbles && q->qMin != 0) {
            ASSERT_NEAR(v, w, 1e-6f * std::abs(sc) * 16) << t.name << " [" << n << ", " << k << "]";
          } else {
            ASSERT_EQ(v, w) << t.name << " [" << n << ", " << k << "] " << strata::abi::int8FormName(form);
          }
        }
    }
  }
  EXPECT_GT(rounded, 0) << "the K formats' f16 products round some values (else the bound above is not tested)";
}

// A block scale beyond f16's range is refused by name: the GPU form's
// scales are f16.
TEST(GgufQuant, GpuFormRefusesScalesBeyondHalf) {
  const ops::QuantFormat& q4k = *ops::quantFormat("Q4_K");
  std::vector<uint8_t> block = ops::randomBlocks(q4k, 1, 3, 0.002f);
  const uint16_t big = ops::floatToHalf(60000.f);  // d = 60000, times a 6-bit sub-block scale of 2..63
  std::memcpy(block.data(), &big, 2);
  std::memset(block.data() + 4, 0xFF, 12);  // every sub-block's scale and min 63
  try {
    strata::abi::packGpuInt8Rows(block.data(), 256, 1, q4k, strata::abi::gpuInt8Form(*strata::abi::int8BlockForm("Q4_K")));
    ADD_FAILURE() << "a scale past 65504 packed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q4_K scale"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("beyond f16's range"), std::string::npos) << e.what();
  }
}

// Which GPU form each quantized GEMM weight of a model takes: its own, the
// common one for a SwiGLU node's gate and up; a weight two nodes would need
// in two forms, or a quantized [K, N] GEMM, is an error naming it.
TEST(GgufQuant, GpuWeightFormsFollowTheGemms) {
  ops::GraphDef g;
  auto weight = [&](const std::string& name, const char* quant) {
    ops::WeightRef w;
    w.name = name, w.quant = quant, w.shape = {64, 256};
    g.weights.push_back(w);
  };
  weight("q", "Q4_K"), weight("v", "Q6_K"), weight("gate", "Q4_K"), weight("up", "Q6_K"), weight("norm", "");
  auto gemm = [&](const std::string& name, std::vector<std::string> ins, nlohmann::json attrs) {
    ops::NodeDef n;
    n.op = "region.gemm", n.name = name, n.inputs = std::move(ins), n.outputs = {name + ".out"};
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
  };
  gemm("qv", {"x", "q", "v"}, {{"weights", 2}, {"layout", "nk"}});
  gemm("mlp", {"x", "gate", "up"}, {{"weights", 2}, {"layout", "nk"}, {"epilogue", "swiglu"}});
  const auto forms = strata::abi::gpuQuantWeightForms(g);
  ASSERT_EQ(forms.size(), 4u);
  EXPECT_EQ(strata::abi::int8FormName(forms.at("q")), "n4b32ho");
  EXPECT_EQ(strata::abi::int8FormName(forms.at("v")), "i8b16h");
  EXPECT_EQ(strata::abi::int8FormName(forms.at("gate")), "i8b16ho");
  EXPECT_EQ(forms.at("gate"), forms.at("up"));
  // Embedding tables: their own form, or the lm_head GEMM's when tied.
  weight("embd", "Q5_0"), weight("tied", "Q8_0"), weight("tied_up", "Q4_K");
  ops::NodeDef e;
  e.op = "region.embedding", e.name = "embed", e.inputs = {"embd", "ids"}, e.outputs = {"h"};
  g.nodes.push_back(e);
  e.name = "embed_tied", e.inputs = {"tied", "ids"};
  g.nodes.push_back(e);
  gemm("tied_mlp", {"x", "tied", "tied_up"}, {{"weights", 2}, {"layout", "nk"}, {"epilogue", "swiglu"}});
  const auto withTables = strata::abi::gpuQuantWeightForms(g);
  const auto own = [](const char* q) { return strata::abi::gpuInt8Form(*strata::abi::int8BlockForm(q)); };
  EXPECT_EQ(withTables.at("embd"), own("Q5_0"));
  EXPECT_EQ(withTables.at("tied"), withTables.at("tied_up"));
  EXPECT_NE(strata::abi::int8FormName(withTables.at("tied")), strata::abi::int8FormName(own("Q8_0")));
  g.nodes.resize(g.nodes.size() - 3);
  gemm("again", {"x", "gate"}, {{"weights", 1}, {"layout", "nk"}});
  try {
    strata::abi::gpuQuantWeightForms(g);
    ADD_FAILURE() << "a weight in two forms";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'gate' would be read in two GPU forms"), std::string::npos) << e.what();
  }
  g.nodes.pop_back();
  gemm("kn", {"x", "q"}, {{"weights", 1}, {"layout", "kn"}});
  EXPECT_THROW(strata::abi::gpuQuantWeightForms(g), Error);
}

}  // namespace
