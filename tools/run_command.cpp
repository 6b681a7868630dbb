#include "tools/run_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "models/chat_template.h"
#include "models/tokenizer.h"
#include "tools/load_model.h"
#include "tools/run_loop.h"

namespace strata::tools {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// --chat: the prompt as a user turn, after the system message when given.
nlohmann::ordered_json chatMessages(const std::string& user, const std::string& system) {
  nlohmann::ordered_json m = nlohmann::ordered_json::array();
  if (!system.empty()) m.push_back({{"role", "system"}, {"content", system}});
  m.push_back({{"role", "user"}, {"content", user}});
  return m;
}

std::vector<RunPrompt> readPrompts(const RunOpts& o, const std::optional<models::Tokenizer>& tok,
                                const std::optional<models::ChatTemplate>& chat) {
  std::vector<RunPrompt> ps;
  auto encode = [&](const std::string& text, const std::string& where) {
    if (!tok) fail("{}: no tokenizer.json beside {}; give --prompt-ids instead", where, o.model);
    // A chat template brings its own special tokens (bos included).
    std::vector<int64_t> ids = chat ? tok->encode(chat->render(chatMessages(text, o.system), true), false)
                                    : tok->encode(text);
    if (ids.empty()) fail("{}: the text encodes to no tokens", where);
    return ids;
  };
  if (!o.batchFile.empty()) {
    if (std::filesystem::is_directory(o.batchFile))
      fail("--batch-file {} is a directory; give a text file of prompts, one per line", o.batchFile);
    std::ifstream in(o.batchFile);
    if (!in) fail("--batch-file {}: cannot read", o.batchFile);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;  // blank lines separate nothing
      ps.push_back({line, encode(line, fmt::format("--batch-file {} line {}", o.batchFile, n))});
    }
    if (ps.empty()) fail("--batch-file {}: no prompts (one per line)", o.batchFile);
  } else if (!o.prompt.empty()) {
    ps.push_back({o.prompt, encode(o.prompt, "--prompt")});
  } else {
    ps.push_back({o.promptIds, parsePromptIds(o.promptIds)});
  }
  return ps;
}

}  // namespace

int runCommand(const RunOpts& o) {
  checkRunOpts(o);
  LoadedModel l = loadForRun(o);
  const json& meta = l.exec->graph().meta;
  int64_t vocab = meta.value("vocab_size", (int64_t)-1);
  if (l.tok && vocab > 0 && l.tok->vocabSize() > vocab)
    fail("the tokenizer has {} tokens but the model's vocabulary is {}: they do not belong together", l.tok->vocabSize(),
         vocab);
  if (!o.stop.empty() && !l.tok) fail("--stop needs the model's tokenizer.json to compare text");
  std::optional<models::ChatTemplate> chat;
  std::optional<int64_t> endOfTurn;
  if (!o.chatTemplate.empty() && !o.chat) fail("--chat-template is for --chat");
  if (o.chat) {
    if (!l.tok) fail("--chat needs the model's tokenizer.json");
    chat = models::loadChatTemplate(o.chatTemplate, l.tokenizerPath, "--chat");
    if (!chat->eosToken().empty()) endOfTurn = l.tok->tokenId(chat->eosToken());
  }
  std::vector<RunPrompt> prompts = readPrompts(o, l.tok, chat);
  RunText text;
  if (l.tok) text.decode = [&](const std::vector<int64_t>& ids) { return l.tok->decode(ids); };
  text.endOfTurn = endOfTurn;
  return runPrompts(*l.exec, l.blockSize, o, prompts, text);
}

}  // namespace strata::tools
