// The server's pieces without HTTP: streamed text with stop strings, and the
// OpenAI request parser (every field checked, errors naming it). The live
// server is tested through the OpenAI client (tests/e2e/serve_test.py).
#include <gtest/gtest.h>

#include "runtime/server/openai.h"
#include "runtime/server/text_stream.h"

namespace strata::runtime::server {
namespace {

// Ids are bytes; an incomplete UTF-8 character at the end decodes to U+FFFD
// (as tokenizers' byte-level decoders do).
std::string decodeBytes(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (char)id;
  size_t i = s.size();
  size_t back = 0;
  while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) --i, ++back;
  if (i > 0) {
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
    if (need > back) s = s.substr(0, i - 1) + "\xEF\xBF\xBD";
  }
  return s;
}

std::vector<int64_t> bytes(const std::string& s) {
  std::vector<int64_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

std::string streamAll(TextStream& t, const std::string& text, std::vector<std::string>* pieces = nullptr) {
  std::string out;
  for (int64_t id : bytes(text)) {
    std::string d = t.push(id);
    if (pieces && !d.empty()) pieces->push_back(d);
    out += d;
    if (t.stopped()) break;
  }
  return out + t.finish();
}

TEST(TextStream, WholeCharactersOnly) {
  TextStream t(decodeBytes, {}, {});
  std::vector<std::string> pieces;
  EXPECT_EQ(streamAll(t, "a\xC3\xA9\xE6\x9D\xB1!", &pieces), "a\xC3\xA9\xE6\x9D\xB1!");
  for (const auto& p : pieces) EXPECT_EQ(p.find("\xEF\xBF\xBD"), std::string::npos) << p;
  EXPECT_EQ(pieces.size(), 4u);  // a, é, 東, !
}

TEST(TextStream, StopStringsAreCutAndHeldBack) {
  TextStream t(decodeBytes, {"STOP", "##"}, {});
  std::vector<std::string> pieces;
  EXPECT_EQ(streamAll(t, "one ST two STOP three", &pieces), "one ST two ");
  EXPECT_TRUE(t.stopped());
  for (const auto& p : pieces) EXPECT_EQ(p.find("STO"), std::string::npos) << "shown before it was known: " << p;
  TextStream u(decodeBytes, {"##"}, {});
  EXPECT_EQ(streamAll(u, "a#b#"), "a#b#");  // a held-back prefix comes out at the end
  EXPECT_FALSE(u.stopped());
}

TEST(TextStream, PromptContextDoesNotShow) {
  TextStream t(decodeBytes, {}, bytes("prompt "));
  EXPECT_EQ(streamAll(t, "reply"), "reply");
}

class FakeText : public ServedText {
 public:
  std::vector<int64_t> encode(const std::string& s) const override {
    std::vector<int64_t> ids{1};
    for (unsigned char c : s) ids.push_back(c);
    return ids;
  }
  bool hasChatTemplate() const override { return true; }
  std::vector<int64_t> encodeChat(const ojson& messages) const override {
    std::string s;
    for (const auto& m : messages) s += m["role"].get<std::string>() + ":" + m["content"].get<std::string>() + ";";
    return encode(s);
  }
  std::vector<int64_t> chatStopIds() const override { return {2}; }
  std::string decode(const std::vector<int64_t>& ids) const override { return decodeBytes(ids); }
  std::string tokenText(int64_t id) const override { return std::string(1, (char)id); }
};

ServeLimits limits() {
  ServeLimits l;
  l.modelName = "m";
  l.maxContext = 64;
  l.maxPromptTokens = 40;
  l.maxTokens = 32;
  l.vocabSize = 300;
  l.eosIds = {0};
  return l;
}

ParsedRequest parse(const std::string& body, bool chat = false) { return parseRequest(body, chat, limits(), FakeText()); }

// The field an error names (or "" when it parses).
std::string errorParam(const std::string& body, bool chat = false, int* status = nullptr) {
  try {
    parse(body, chat);
  } catch (const ApiError& e) {
    if (status) *status = e.status;
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.param.empty() ? "<none>" : e.param;
  }
  return "";
}

TEST(OpenAiRequest, DefaultsAndFields) {
  ParsedRequest r = parse(R"({"model": "m", "prompt": "hi"})");
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].promptIds, (std::vector<int64_t>{1, 'h', 'i'}));
  EXPECT_EQ(r.jobs[0].maxTokens, 16);  // OpenAI's completions default
  EXPECT_FALSE(r.jobs[0].sampling.greedy);  // temperature 1 by default
  EXPECT_EQ(r.jobs[0].eosIds, (std::vector<int64_t>{0}));
  r = parse(R"({"model": "m", "prompt": ["a", [5, 6]], "temperature": 0, "n": 2, "seed": 9, "stop": "x",
               "max_tokens": 8, "logprobs": 2, "top_k": -1, "ignore_eos": true, "user": "u"})");
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[1].promptIds, (std::vector<int64_t>{5, 6}));
  EXPECT_TRUE(r.jobs[0].sampling.greedy);
  EXPECT_EQ(r.jobs[0].n, 2);
  EXPECT_EQ(r.jobs[0].sampling.seed, 9u);
  EXPECT_EQ(r.jobs[0].stop, (std::vector<std::string>{"x"}));
  EXPECT_EQ(r.jobs[0].maxTokens, 8);
  EXPECT_EQ(r.topLogprobs, 2);
  EXPECT_TRUE(r.jobs[0].eosIds.empty());
  // The penalties and min_p reach the sampler (0 and 1: off).
  r = parse(R"({"model": "m", "prompt": "hi", "presence_penalty": -1.5, "frequency_penalty": 0.25, "min_p": 0.1,
               "repetition_penalty": 1.3})");
  EXPECT_EQ(r.jobs[0].sampling.presencePenalty, -1.5f);
  EXPECT_EQ(r.jobs[0].sampling.frequencyPenalty, 0.25f);
  EXPECT_EQ(r.jobs[0].sampling.minP, 0.1f);
  EXPECT_EQ(r.jobs[0].sampling.repetitionPenalty, 1.3f);
  EXPECT_TRUE(r.jobs[0].sampling.penalized());
  // A chat takes the rest of the context by default (within --max-tokens), and stops at the template's eos too.
  r = parse(R"({"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": true,
               "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 3})", true);
  EXPECT_EQ(r.jobs[0].maxTokens, 32);
  EXPECT_EQ(r.jobs[0].eosIds, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(r.stream && r.includeUsage);
  EXPECT_EQ(r.topLogprobs, 3);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  int status = 0;
  EXPECT_EQ(errorParam("{", false, &status), "<none>");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(errorParam("[1]"), "<none>");
  EXPECT_EQ(errorParam(R"({"model": "other", "prompt": "x"})", false, &status), "model");
  EXPECT_EQ(status, 404);
  EXPECT_EQ(errorParam(R"({"prompt": "x"})"), "model");
  EXPECT_EQ(errorParam(R"({"model": "m"})"), "prompt");
  EXPECT_EQ(errorParam(R"({"model": "m", "prompt": "x", "bogus": 1})"), "bogus");
  EXPECT_EQ(errorParam(R"({"model": "m", "prompt": "x", "messages": []})"), "messages");  // a chat field on completions
  for (const char* f : {R"("temperature": -1)", R"("temperature": "hot")", R"("top_p": 0)", R"("n": 0)", R"("n": 17)",
                        R"("max_tokens": 0)", R"("max_tokens": 1.5)", R"("seed": -1)", R"("stop": [""])",
                        R"("stop": 5)", R"("logprobs": 21)", R"("frequency_penalty": 2.5)", R"("min_p": 1.1)",
                        R"("repetition_penalty": 0)", R"("stream_options": {"include_usage": true})", R"("echo": true)",
                        R"("best_of": 2)", R"("max_tokens": 33)", R"("prompt": [])", R"("prompt": [-1])",
                        R"("prompt": [300])", R"("top_k": -2)"}) {
    std::string body = std::string(R"({"model": "m", "prompt": "x", )") + f + "}";
    if (std::string(f).rfind(R"("prompt")", 0) == 0) body = std::string(R"({"model": "m", )") + f + "}";
    std::string name = std::string(f).substr(1, std::string(f).find('"', 1) - 1);
    EXPECT_EQ(errorParam(body), name) << body;
  }
  EXPECT_EQ(errorParam(R"({"model": "m", "prompt": ")" + std::string(50, 'a') + R"("})"), "prompt");  // over 40 tokens
  EXPECT_EQ(errorParam(R"({"model": "m", "messages": []})", true), "messages");
  EXPECT_EQ(errorParam(R"({"model": "m", "messages": [{"role": "bot", "content": "x"}]})", true), "messages[0].role");
  EXPECT_EQ(errorParam(R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true),
            "messages[0].content[0]");
  EXPECT_EQ(errorParam(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true),
            "top_logprobs");
  EXPECT_EQ(errorParam(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": []})", true), "tools");
}

}  // namespace
}  // namespace strata::runtime::server
