// A model's chat template: the Jinja `chat_template` of its
// tokenizer_config.json (or a file the user names), rendered over a list of
// messages as transformers' apply_chat_template renders it (models/jinja.h),
// with the bos / eos token texts of the same config. The rendered text
// carries its own special tokens: encode it without adding any.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/jinja.h"

namespace strata::models {

class ChatTemplate {
 public:
  // Parses `source` (an unsupported construct is an error naming `origin`).
  ChatTemplate(const std::string& source, std::string origin, std::string bosToken, std::string eosToken);

  // The template of the tokenizer_config.json in `dir` (a model folder, or
  // the folder of an artifact's tokenizer.json): nullopt when there is no
  // such file or it has no chat_template. A list of named templates takes
  // the one named "default".
  static std::optional<ChatTemplate> fromModelDir(const std::string& dir);
  // The template that goes with the tokenizer at `tokenizer`: a GGUF
  // file's tokenizer.chat_template metadata (bos / eos the texts of its
  // bos / eos token ids), else fromModelDir of tokenizer.json's folder.
  static std::optional<ChatTemplate> ofTokenizer(const std::string& tokenizer);
  // A template file the user gives (--chat-template): a .jinja file, or a
  // tokenizer_config.json; bos / eos from the tokenizer's (as ofTokenizer
  // finds them; `tokenizer` may be empty) when the file has none.
  static ChatTemplate fromFile(const std::string& file, const std::string& tokenizer);

  // `messages`: [{"role", "content", ...}] as the OpenAI API and HF define
  // them (extra fields such as tool_calls reach the template). `extra`
  // adds variables (e.g. tools). Throws strata::Error with the template's
  // own message when it refuses the conversation (raise_exception).
  std::string render(const nlohmann::ordered_json& messages, bool addGenerationPrompt,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  const std::string& bosToken() const { return bos_; }
  // The text of the token that ends the assistant's turn (eos_token): a
  // chat stops there.
  const std::string& eosToken() const { return eos_; }
  const std::string& origin() const { return tmpl_.origin(); }

 private:
  jinja::Template tmpl_;
  std::string bos_, eos_;
};

// The template for a chat: `file` when given (--chat-template), else the
// tokenizer's (ofTokenizer); throws naming `who` when there is neither.
ChatTemplate loadChatTemplate(const std::string& file, const std::string& tokenizer, const std::string& who);

}  // namespace strata::models
