// The OpenAI API's completions and chat completions: request bodies checked
// field by field (an error names the field and what was expected) and
// turned into engine jobs; responses, stream chunks and errors in the
// API's shapes. Transport-free: runtime/server/http_server.cpp carries it.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/server/engine.h"

namespace strata::runtime::server {

using ojson = nlohmann::ordered_json;

// What the server needs from the model's tokenizer and chat template.
// models/ implements it (runtime does not depend on models).
class ServedText {
 public:
  virtual ~ServedText() = default;
  // A completion prompt, with the tokenizer's special tokens (bos).
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  virtual bool hasChatTemplate() const = 0;
  // A chat rendered with the model's template (add_generation_prompt) and
  // encoded without added special tokens; throws strata::Error when the
  // template refuses the conversation.
  virtual std::vector<int64_t> encodeChat(const ojson& messages) const = 0;
  // The tokens that end a chat's assistant turn (the template's eos).
  virtual std::vector<int64_t> chatStopIds() const = 0;
  // Text of generated ids (special tokens skipped), and of one token.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual std::string tokenText(int64_t id) const = 0;
};

// An error answered in the API's shape: {"error": {message, type, param, code}}.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "");
  int status;
  std::string type, param, code;
  ojson body() const;
};

struct ServeLimits {
  std::string modelName;
  int64_t maxPromptTokens = 0;  // 0: the context alone bounds a prompt
  int64_t maxTokens = 0;        // 0: the context alone bounds a completion
  int64_t maxContext = 0;       // the model's positions (0: unknown)
  int64_t maxN = 16;
  int64_t vocabSize = 0;        // the model's (token-id prompts must be inside it)
  std::vector<int64_t> eosIds;  // the model's own
};

struct ParsedRequest {
  bool chat = false;
  bool stream = false, includeUsage = false;
  std::vector<Job> jobs;  // one per prompt (completions may have several); n samples each
  int64_t topLogprobs = -1;  // -1: no logprobs
};

// Parses and checks a request body for `chat` or completions; throws ApiError.
ParsedRequest parseRequest(const std::string& body, bool chat, const ServeLimits& limits, const ServedText& text);

// One choice's result.
struct ChoiceResult {
  std::string text;
  std::vector<TokenInfo> tokens;
  std::string finishReason;  // "stop" | "length"
};
const char* finishReasonText(FinishReason r);

// Builders of response bodies and stream chunks.
struct ResponseIds {
  std::string id, model;
  int64_t created;
};
ojson usageJson(int64_t prompt, int64_t completion);
ojson completionResponse(const ResponseIds& ids, bool chat, const std::vector<ChoiceResult>& choices,
                         int64_t promptTokens, int64_t completionTokens, int64_t topLogprobs, const ServedText& text);
// A stream chunk for choice `index`: text (and the role in a chat's first
// chunk), its tokens' logprobs when asked, the finish reason on the last.
ojson streamChunk(const ResponseIds& ids, bool chat, int64_t index, const std::string* role, const std::string& delta,
                  const std::vector<TokenInfo>& tokens, const char* finishReason, int64_t topLogprobs,
                  bool includeUsage, const ServedText& text);
ojson usageChunk(const ResponseIds& ids, bool chat, int64_t prompt, int64_t completion);

}  // namespace strata::runtime::server
