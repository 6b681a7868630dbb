// The tokenizer against Hugging Face tokenizers' own ids and decoded text
// (tests/data/tokenizers/golden.json, made by make_golden.py with
// tokenizers 0.22.1) for byte-level (GPT-2, Llama 3, Qwen2 with NFC,
// SmolLM) and SentencePiece-style (Llama 2, Mistral, Gemma) tokenizers and
// for every Split behavior, Punctuation and WhitespaceSplit, and clear
// errors for what it does not implement.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/pretokenizer.h"
#include "models/tokenizer.h"
#include "ops/error.h"

using namespace strata;
using nlohmann::json;

namespace {

std::string dataDir() { return STRATA_TOKENIZER_DATA; }
std::string fixtureTokenizer() { return std::string(STRATA_FIXTURE_DIR) + "/tokenizer.json"; }

const json& golden() {
  static json j = json::parse(std::ifstream(dataDir() + "/golden.json"));
  return j;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EncodesAndDecodesLikeHuggingFace) {
  std::string path = GetParam() == "tiny-llama" ? fixtureTokenizer() : dataDir() + "/" + GetParam();
  models::Tokenizer tok = models::Tokenizer::load(path);
  for (const json& c : golden().at(GetParam())) {
    std::string text = c.at("text").get<std::string>();
    std::vector<int64_t> ids = tok.encode(text);
    EXPECT_EQ(ids, c.at("ids").get<std::vector<int64_t>>()) << "text: " << text;
    EXPECT_EQ(tok.decode(ids), c.at("decoded").get<std::string>()) << "text: " << text;
    EXPECT_EQ(tok.decode(ids, /*skipSpecial=*/false), c.at("decoded_all").get<std::string>()) << "text: " << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenizerGolden,
                         ::testing::Values("tiny-llama", "llama3_style.json", "chatml_style.json", "llama2_style.json", "smollm_style.json",
                                           "mistral_style.json", "gemma_style.json", "split_behaviors_style.json",
                                           "whitespace_split_style.json"),
                         [](const auto& info) {
                           return info.param == "tiny-llama" ? std::string("gpt2_style")
                                                             : info.param.substr(0, info.param.find('.'));
                         });

// The families' characteristic steps, shown on their own.
TEST(Tokenizer, SentencePieceStyleFallsBackToBytes) {
  models::Tokenizer tok = models::Tokenizer::load(dataDir() + "/llama2_style.json");
  std::vector<int64_t> ids = tok.encode("\xe4\xb8\xad", false);  // U+4E2D, not in the training text
  EXPECT_EQ(ids.size(), 4u);                                          // the U+2581 word start, then 3 bytes
  EXPECT_EQ(tok.decode(ids), "\xe4\xb8\xad");
  EXPECT_EQ(tok.decode({ids[0], ids[1]}), "\xef\xbf\xbd");  // an incomplete byte run decodes to U+FFFD
}

TEST(Tokenizer, NfcNormalizerComposes) {
  models::Tokenizer tok = models::Tokenizer::load(dataDir() + "/chatml_style.json");  // Qwen2-style: NFC
  EXPECT_EQ(tok.encode("cafe\xcc\x81"), tok.encode("caf\xc3\xa9"));
  EXPECT_NE(models::Tokenizer::load(fixtureTokenizer()).encode("cafe\xcc\x81"),
            models::Tokenizer::load(fixtureTokenizer()).encode("caf\xc3\xa9"));  // no normalizer there
}

TEST(Tokenizer, WithoutSpecialTokens) {
  models::Tokenizer tok = models::Tokenizer::load(fixtureTokenizer());
  std::vector<int64_t> with = tok.encode("paged attention"), without = tok.encode("paged attention", false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 0);
  EXPECT_TRUE(std::equal(without.begin(), without.end(), with.begin() + 1));
}

TEST(Tokenizer, InvalidUtf8IsAnError) {
  models::Tokenizer tok = models::Tokenizer::load(fixtureTokenizer());
  EXPECT_THROW(tok.encode(std::string("ok \xff\xfe bad")), Error);
}

TEST(RegexSplitter, PiecesCoverTheText) {
  models::RegexSplitter split(models::kGpt2SplitPattern);
  std::string text = "I'm here:  42 cats\n\n and 東京!";
  std::string joined;
  for (auto p : split.split(text)) joined += p;
  EXPECT_EQ(joined, text);
  EXPECT_THROW(models::RegexSplitter("(unclosed"), Error);
}

// Components it does not implement are named at load, never mis-encoded.
TEST(Tokenizer, UnsupportedComponentsAreNamed) {
  json base = json::parse(std::ifstream(fixtureTokenizer()));
  auto expectError = [&](const json& j, const char* needle) {
    std::string p = (std::filesystem::temp_directory_path() / "strata-test-tokenizer.json").string();
    std::ofstream(p) << j.dump();
    try {
      models::Tokenizer::load(p);
      ADD_FAILURE() << "loaded: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  json j = base;
  j["normalizer"] = {{"type", "BertNormalizer"}};
  expectError(j, "normalizer 'BertNormalizer'");
  j = base;
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", " "}};
  expectError(j, "a String pattern is");
  j = base;
  j["pre_tokenizer"] = nullptr;
  j["model"]["byte_fallback"] = true;  // and no <0xXX> tokens in the vocabulary
  expectError(j, "byte-fallback token '<0x00>'");
  j = base;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expectError(j, "pre_tokenizer 'Whitespace'");
  j = base;
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", ","}}}, {"behavior", "Merged"}};
  expectError(j, "split behavior 'Merged' is unknown");
  j = base;
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Glob", ","}}}};
  expectError(j, "is not a Regex or String");
  j = base;
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}};
  expectError(j, "pre-tokenizer regex");
  j = base;
  j["decoder"] = {{"type", "WordPiece"}};
  expectError(j, "decoder 'WordPiece'");
  j = base;
  j["model"]["type"] = "WordPiece";
  expectError(j, "model type 'WordPiece'");
  j = base;
  j["model"]["vocab"] = 5;
  expectError(j, "malformed tokenizer");
  // Ids: non-negative integers below 2^24, one token each.
  for (json id : {json(-1), json(1.5), json(int64_t(1) << 40), json("7")}) {
    j = base;
    j["model"]["vocab"]["!"] = id;
    expectError(j, "ids are integers in 0..");
  }
  j = base;
  j["model"]["vocab"]["!"] = j["model"]["vocab"]["\""];
  expectError(j, "is given to both");
  // Added tokens: an id in range and non-empty content.
  j = base;
  j["added_tokens"][0]["id"] = -3;
  expectError(j, "'id' must be an integer");
  j = base;
  j["added_tokens"][0]["content"] = "";
  expectError(j, "'content' must be a non-empty string");
  j = base;
  j["added_tokens"] = {{"content", "x"}};
  expectError(j, "added_tokens must be a list");
  // Components without a type.
  j = base;
  j["normalizer"] = {{"normalizers", json::array()}};
  expectError(j, "a normalizer without a 'type'");
  j = base;
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {json::object()}}};
  expectError(j, "a decoder without a 'type'");
  j = base;
  j["pre_tokenizer"] = {{"add_prefix_space", false}};
  expectError(j, "a pre_tokenizer without a 'type'");
  j = base;
  j["post_processor"] = json::array();
  expectError(j, "a post_processor without a 'type'");
  // Nesting past the JSON bound (a Sequence in a Sequence, 200 deep) is
  // refused at parse, before anything recurses over it.
  json deep = {{"type", "NFC"}};
  for (int i = 0; i < 200; ++i) deep = {{"type", "Sequence"}, {"normalizers", {deep}}};
  j = base;
  j["normalizer"] = deep;
  expectError(j, "nested deeper than 64");
  // A Sequence nested a few levels is fine.
  json shallow = {{"type", "NFC"}};
  for (int i = 0; i < 5; ++i) shallow = {{"type", "Sequence"}, {"normalizers", {shallow}}};
  j = base;
  j["normalizer"] = shallow;
  std::string p = (std::filesystem::temp_directory_path() / "strata-test-tokenizer-ok.json").string();
  std::ofstream(p) << j.dump();
  EXPECT_NO_THROW(models::Tokenizer::load(p));
}

}  // namespace
