// Chat formats for `strata run --chat`: a user message (and optional system
// message) wrapped in the turn markers the model was trained with, ending
// with the assistant's header so generation is the reply. The format is
// chosen by the special tokens the tokenizer has.
#pragma once
#include <optional>
#include <string>

#include "models/tokenizer.h"

namespace strata::models {

enum class ChatFormat {
  Llama3,  // <|begin_of_text|> then <|start_header_id|>role<|end_header_id|>\n\n trimmed text <|eot_id|>
  ChatML,  // <|im_start|>role\n text <|im_end|>\n, Qwen2's default system message when none is given
};

struct ChatTemplate {
  ChatFormat format;
  // The prompt text, special tokens included (encode with addSpecial =
  // false: the template carries its own bos where the format has one).
  std::string render(const std::string& user, const std::string& system = "") const;
  // The token that ends the assistant's turn (generation stops there).
  std::string endOfTurn() const;
};

// The template whose markers the tokenizer has; nullopt when it has neither
// set.
std::optional<ChatTemplate> detectChatTemplate(const Tokenizer& tok);

}  // namespace strata::models
