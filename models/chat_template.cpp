#include "models/chat_template.h"

namespace strata::models {

namespace {
std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

std::string ChatTemplate::render(const std::string& user, const std::string& system) const {
  std::string out;
  switch (format) {
    case ChatFormat::Llama3: {
      auto turn = [](const char* role, const std::string& text) {
        return std::string("<|start_header_id|>") + role + "<|end_header_id|>\n\n" + trim(text) + "<|eot_id|>";
      };
      out = "<|begin_of_text|>";
      if (!system.empty()) out += turn("system", system);
      out += turn("user", user);
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    }
    case ChatFormat::ChatML: {
      auto turn = [](const char* role, const std::string& text) {
        return std::string("<|im_start|>") + role + "\n" + text + "<|im_end|>\n";
      };
      out += turn("system", system.empty() ? "You are a helpful assistant." : system);  // Qwen2's default
      out += turn("user", user);
      out += "<|im_start|>assistant\n";
      break;
    }
  }
  return out;
}

std::string ChatTemplate::endOfTurn() const { return format == ChatFormat::Llama3 ? "<|eot_id|>" : "<|im_end|>"; }

std::optional<ChatTemplate> detectChatTemplate(const Tokenizer& tok) {
  if (tok.tokenId("<|start_header_id|>") && tok.tokenId("<|end_header_id|>") && tok.tokenId("<|eot_id|>") &&
      tok.tokenId("<|begin_of_text|>"))
    return ChatTemplate{ChatFormat::Llama3};
  if (tok.tokenId("<|im_start|>") && tok.tokenId("<|im_end|>")) return ChatTemplate{ChatFormat::ChatML};
  return std::nullopt;
}

}  // namespace strata::models
