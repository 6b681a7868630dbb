// The Jinja interpreter against jinja2 (tests/data/chat_templates/golden.json:
// published chat templates rendered as transformers renders them), and the
// constructs and limits it must refuse clearly.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/chat_template.h"
#include "models/jinja.h"
#include "ops/error.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using models::jinja::Template;
using models::jinja::Value;

const fs::path kData = STRATA_CHAT_TEMPLATE_DATA;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string render(const std::string& source, const ojson& ctx = ojson::object()) {
  return Template(source, "test").render(Value::fromJson(ctx));
}

TEST(ChatTemplate, PublishedTemplatesRenderAsJinja2Does) {
  ojson golden = ojson::parse(read(kData / "golden.json"));
  ASSERT_GE(golden.size(), 10u);
  for (const auto& [name, cases] : golden.items()) {
    Template t(read(kData / (name + ".jinja")), name);
    for (const ojson& c : cases) {
      const std::string label = name + " / " + c["case"].get<std::string>();
      if (c.contains("error")) {
        try {
          t.render(Value::fromJson(c["context"]));
          ADD_FAILURE() << label << ": rendered, but jinja2 raised: " << c["error"];
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
              << label << ": " << e.what();
        }
      } else {
        EXPECT_EQ(t.render(Value::fromJson(c["context"])), c["text"].get<std::string>()) << label;
      }
    }
  }
}

// tokenizer_config.json: the template with its bos / eos (strings or
// AddedToken objects), a named list's "default", none when absent.
TEST(ChatTemplate, ReadsTokenizerConfig) {
  fs::path dir = fs::temp_directory_path() / "strata-chat-template-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_FALSE(models::ChatTemplate::fromModelDir(dir.string()));
  ojson cfg = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
               {"eos_token", "</s>"},
               {"chat_template", ojson::array({{{"name", "tool_use"}, {"template", "tools"}},
                                               {{"name", "default"}, {"template", read(kData / "llama-2.jinja")}}})}};
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  auto chat = models::ChatTemplate::fromModelDir(dir.string());
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->bosToken(), "<s>");
  EXPECT_EQ(chat->eosToken(), "</s>");
  ojson messages = ojson::array({{{"role", "user"}, {"content", "Hi "}}});
  EXPECT_EQ(chat->render(messages, true), "<s>[INST] Hi [/INST]");
  // A .jinja file takes bos / eos from the model's config.
  models::ChatTemplate file =
      models::ChatTemplate::fromFile((kData / "gemma-2.jinja").string(), (dir / "tokenizer.json").string());
  EXPECT_EQ(file.render(messages, true), "<s><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  std::ofstream(dir / "tokenizer_config.json") << "{\"chat_template\": 7}";
  EXPECT_THROW(models::ChatTemplate::fromModelDir(dir.string()), Error);
  fs::remove_all(dir);
}

// A GGUF file's tokenizer.chat_template, its bos / eos the texts of the
// vocabulary's bos / eos ids (make_gguf.py wrote Llama 3's template into
// tok-llama3.gguf).
TEST(ChatTemplate, ReadsGgufMetadata) {
  const std::string gguf = std::string(STRATA_GGUF_DATA) + "/tok-llama3.gguf";
  auto chat = models::ChatTemplate::ofTokenizer(gguf);
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->bosToken(), "<|begin_of_text|>");
  EXPECT_EQ(chat->eosToken(), "<|eot_id|>");
  ojson messages = ojson::array({{{"role", "user"}, {"content", "Hi"}}});
  models::ChatTemplate want(read(kData / "llama-3.jinja"), "llama-3.jinja", "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(chat->render(messages, true), want.render(messages, true));
  // Without the key: none, and a chat says where it looked.
  EXPECT_FALSE(models::ChatTemplate::ofTokenizer(std::string(STRATA_GGUF_DATA) + "/tok-gpt2.gguf"));
  try {
    models::loadChatTemplate("", std::string(STRATA_GGUF_DATA) + "/tok-gpt2.gguf", "--chat");
    ADD_FAILURE() << "a chat template from a GGUF without one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.chat_template metadata"), std::string::npos) << e.what();
  }
}

TEST(Jinja, WhitespaceControlAndBlocks) {
  // trim_blocks + lstrip_blocks, as transformers renders.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
  EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");
  EXPECT_EQ(render("{# note #}\nvisible"), "visible");
}

TEST(Jinja, LoopsScopesAndNamespaces) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
                   {{"xs", {"a", "b", "c"}}}),
            "1a,2b,3c");
  EXPECT_EQ(render("{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}"), "0");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"a", 1}, {"b", 2}}}}),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in range(6) if x is odd %}{{ x }}{% if x > 2 %}{% break %}{% endif %}{% endfor %}"), "13");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% set s %}in {{ 1 + 1 }}{% endset %}[{{ s }}]"), "[in 2]");
}

TEST(Jinja, ExpressionsFollowPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 ~ 'a' }}"),
            "3 -4 2 3.5 1024 1a");
  EXPECT_EQ(render("{{ 'abc'[::-1] }} {{ [1, 2, 3][1:] }} {{ 'hé!'[-2] }} {{ none }} {{ true }}"), "cba [2, 3] é None True");
  EXPECT_EQ(render("{{ 'x' if 0 else 'y' }} {{ '' or 'z' }} {{ 'q' and 'r' }} {{ 'b' in 'abc' }} {{ 3 not in [1] }}"),
            "y z r True True");
  EXPECT_EQ(render("{{ {'b': [1, 2.5, none, 'é']} | tojson }}"), "{\"b\": [1, 2.5, null, \"é\"]}");
  EXPECT_EQ(render("{{ {'a': 1} | tojson(indent=2) }}"), "{\n  \"a\": 1\n}");
  EXPECT_EQ(render("{{ ' a b '.strip().split(' ') }} {{ 'ab'.startswith('a') }} {{ xs | map(attribute='n') | join(',') }}",
                   {{"xs", {{{"n", 1}}, {{"n", 2}}}}}),
            "['a', 'b'] True 1,2");
  EXPECT_EQ(render("{{ xs | selectattr('role', 'equalto', 'user') | list | length }} {{ missing | default('d') }}",
                   {{"xs", {{{"role", "user"}}, {{"role", "tool"}}}}}),
            "1 d");
  EXPECT_EQ(render("{{ x is defined }} {{ x is not defined }} {{ none is none }} {{ 'a' is string }} {{ 4 is divisibleby 2 }}"),
            "False True True True True");
}

// What the interpreter does not have fails at parse time, naming the line;
// errors while rendering name the line too; hostile templates stay bounded.
TEST(Jinja, RefusesClearly) {
  auto parseError = [](const std::string& src) {
    try {
      Template t(src, "tmpl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  EXPECT_NE(parseError("ok\n{% macro m() %}{% endmacro %}").find("tmpl line 2"), std::string::npos);
  EXPECT_NE(parseError("{{ x | frobnicate }}").find("unknown filter 'frobnicate'"), std::string::npos);
  EXPECT_NE(parseError("{% if x %}never closed").find("ends inside a block"), std::string::npos);
  EXPECT_NE(parseError("{{ 'open }}").find("never closed"), std::string::npos);
  EXPECT_NE(parseError("{% endfor %}").find("unexpected"), std::string::npos);
  EXPECT_NE(parseError("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nested deeper"),
            std::string::npos);
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "{% if true %}";
  EXPECT_NE(parseError(deep).find("nested deeper"), std::string::npos);

  EXPECT_THROW(render("{{ raise_exception('no system role') }}"), Error);
  EXPECT_THROW(render("{{ 'a' + 1 }}"), Error);
  EXPECT_THROW(render("{{ x.y.z }}"), Error);
  EXPECT_THROW(render("{% for i in range(100000000) %}{% endfor %}"), Error);
  EXPECT_THROW(render("{{ 'x' * 100000000000 }}"), Error);
  EXPECT_THROW(render("{% for a in range(100000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}"), Error);
}

}  // namespace
}  // namespace strata
