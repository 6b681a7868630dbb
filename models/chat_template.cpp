#include "models/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "models/gguf.h"
#include "ops/error.h"

namespace strata::models {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

std::string readFile(const fs::path& p, const char* what) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail("{} {}: cannot read", what, p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A special token in tokenizer_config.json: a string, an AddedToken object
// ({"content": ...}) or null.
std::string tokenText(const ojson& cfg, const char* key, const std::string& file) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const ojson& t = cfg[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  fail("{}: {} must be a string or an object with a string \"content\"", file, key);
}

ojson readConfig(const fs::path& p) {
  std::string text = readFile(p, "tokenizer config");
  ojson cfg = ojson::parse(text, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) fail("{}: not a JSON object", p.string());
  return cfg;
}

// The chat_template field: a string, or [{"name", "template"}] (the
// "default" one); nullopt when absent or null.
std::optional<std::string> templateField(const ojson& cfg, const std::string& file) {
  if (!cfg.contains("chat_template") || cfg["chat_template"].is_null()) return std::nullopt;
  const ojson& t = cfg["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const ojson& e : t)
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
        return e["template"].get<std::string>();
    fail("{}: chat_template is a list without a template named \"default\"", file);
  }
  fail("{}: chat_template must be a string or a list of {{\"name\", \"template\"}}", file);
}

// A GGUF vocabulary's bos / eos token texts ("" where it names none).
std::pair<std::string, std::string> ggufBosEos(const GgufFile& f) {
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  auto text = [&](const char* key) -> std::string {
    const GgufValue* id = f.find(key);
    if (!id || !tokens || tokens->type != GgufType::Array || !isIntegerType(id->type)) return "";
    auto i = id->value.get<int64_t>();
    if (i < 0 || i >= (int64_t)tokens->value.size() || !tokens->value[i].is_string())
      fail("{}: metadata '{}' = {} is not a token of tokenizer.ggml.tokens", f.path, key, i);
    return tokens->value[i].get<std::string>();
  };
  return {text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id")};
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, std::string origin, std::string bosToken, std::string eosToken)
    : tmpl_(source, std::move(origin)), bos_(std::move(bosToken)), eos_(std::move(eosToken)) {}

std::optional<ChatTemplate> ChatTemplate::fromModelDir(const std::string& dir) {
  fs::path p = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(p)) return std::nullopt;
  ojson cfg = readConfig(p);
  std::optional<std::string> source = templateField(cfg, p.string());
  if (!source) return std::nullopt;
  return ChatTemplate(*source, p.string() + " chat_template", tokenText(cfg, "bos_token", p.string()),
                      tokenText(cfg, "eos_token", p.string()));
}

std::optional<ChatTemplate> ChatTemplate::ofTokenizer(const std::string& tokenizer) {
  if (isGgufPath(tokenizer)) {
    GgufFile f = readGguf(tokenizer);
    const GgufValue* t = f.find("tokenizer.chat_template");
    if (!t) return std::nullopt;
    if (t->type != GgufType::String) fail("{}: metadata 'tokenizer.chat_template' is not a string", tokenizer);
    auto [bos, eos] = ggufBosEos(f);
    return ChatTemplate(t->value.get<std::string>(), tokenizer + " tokenizer.chat_template", bos, eos);
  }
  return fromModelDir(fs::path(tokenizer).parent_path().string());
}

ChatTemplate ChatTemplate::fromFile(const std::string& file, const std::string& tokenizer) {
  std::string bos, eos;
  fs::path beside = fs::path(tokenizer).parent_path() / "tokenizer_config.json";
  if (isGgufPath(tokenizer)) {
    std::tie(bos, eos) = ggufBosEos(readGguf(tokenizer));
  } else if (!tokenizer.empty() && fs::exists(beside)) {
    ojson cfg = readConfig(beside);
    bos = tokenText(cfg, "bos_token", beside.string());
    eos = tokenText(cfg, "eos_token", beside.string());
  }
  if (fs::path(file).extension() == ".json") {
    ojson cfg = readConfig(file);
    std::optional<std::string> source = templateField(cfg, file);
    if (!source) fail("--chat-template {}: the file has no chat_template", file);
    if (cfg.contains("bos_token")) bos = tokenText(cfg, "bos_token", file);
    if (cfg.contains("eos_token")) eos = tokenText(cfg, "eos_token", file);
    return ChatTemplate(*source, file, bos, eos);
  }
  return ChatTemplate(readFile(file, "--chat-template"), file, bos, eos);
}

std::string ChatTemplate::render(const ojson& messages, bool addGenerationPrompt, const ojson& extra) const {
  jinja::Value ctx = jinja::Value::fromJson(extra.is_object() ? extra : ojson::object());
  ctx.set("messages", jinja::Value::fromJson(messages));
  ctx.set("add_generation_prompt", jinja::Value(addGenerationPrompt));
  ctx.set("bos_token", jinja::Value(bos_));
  ctx.set("eos_token", jinja::Value(eos_));
  return tmpl_.render(ctx);
}

ChatTemplate loadChatTemplate(const std::string& file, const std::string& tokenizer, const std::string& who) {
  if (!file.empty()) return ChatTemplate::fromFile(file, tokenizer);
  if (auto t = ChatTemplate::ofTokenizer(tokenizer)) return std::move(*t);
  fail("{}: {} has no chat template ({}: a base model?); give one with --chat-template FILE", who,
       tokenizer.empty() ? std::string("the model") : tokenizer,
       isGgufPath(tokenizer) ? "no tokenizer.chat_template metadata" : "no tokenizer_config.json with a chat_template");
}

}  // namespace strata::models
