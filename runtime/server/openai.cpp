#include "runtime/server/openai.h"

#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "ops/error.h"

namespace strata::runtime::server {

ApiError::ApiError(int status, std::string message, std::string type, std::string param, std::string code)
    : std::runtime_error(std::move(message)),
      status(status),
      type(std::move(type)),
      param(std::move(param)),
      code(std::move(code)) {}

ojson ApiError::body() const {
  return {{"error",
           {{"message", what()},
            {"type", type},
            {"param", param.empty() ? ojson() : ojson(param)},
            {"code", code.empty() ? ojson() : ojson(code)}}}};
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) { throw ApiError(400, message, "invalid_request_error", param); }

// Fields of each endpoint: the ones strata acts on, and the ones it
// accepts only at their default (a value that asks for more is refused).
const std::set<std::string> kCommon = {"model", "max_tokens", "temperature", "top_p", "n", "stop", "seed",
                                       "presence_penalty", "frequency_penalty", "logprobs", "user", "stream",
                                       "stream_options", "top_k", "min_p", "repetition_penalty", "ignore_eos",
                                       "logit_bias", "best_of"};
const std::set<std::string> kCompletion = {"prompt", "echo", "suffix"};
const std::set<std::string> kChat = {"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                                     "parallel_tool_calls", "response_format", "functions", "function_call"};

const ojson* field(const ojson& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

int64_t intField(const ojson& body, const char* name, int64_t lo, int64_t hi, int64_t dflt) {
  const ojson* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
                                   std::fabs(v->get<double>()) < 9e15))
    bad(name, fmt::format("'{}' must be an integer, got {}", name, v->dump()));
  if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)INT64_MAX)
    bad(name, fmt::format("'{}' must be in {}..{}, got {}", name, lo, hi, v->dump()));
  int64_t x = v->is_number_integer() ? v->get<int64_t>() : (int64_t)v->get<double>();
  if (x < lo || x > hi) bad(name, fmt::format("'{}' must be in {}..{}, got {}", name, lo, hi, x));
  return x;
}

double numField(const ojson& body, const char* name, double lo, double hi, double dflt, bool loOpen = false) {
  const ojson* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_number()) bad(name, fmt::format("'{}' must be a number, got {}", name, v->dump()));
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (loOpen && x == lo))
    bad(name, fmt::format("'{}' must be in {}{}, {}], got {}", name, loOpen ? "(" : "[", lo, hi, x));
  return x;
}

bool boolField(const ojson& body, const char* name, bool dflt) {
  const ojson* v = field(body, name);
  if (!v) return dflt;
  if (!v->is_boolean()) bad(name, fmt::format("'{}' must be true or false, got {}", name, v->dump()));
  return v->get<bool>();
}

// A token-id prompt: every id inside the vocabulary the model has.
std::vector<int64_t> idsPrompt(const ojson& v, const std::string& param) {
  std::vector<int64_t> ids;
  for (const ojson& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0)
      bad(param, fmt::format("'{}' token ids must be non-negative integers, got {}", param, t.dump()));
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

std::vector<std::vector<int64_t>> completionPrompts(const ojson& body, const ServedText& text) {
  const ojson* p = field(body, "prompt");
  if (!p) bad("prompt", "'prompt' is required (a string, a list of strings, or token ids)");
  std::vector<std::vector<int64_t>> prompts;
  auto encode = [&](const std::string& s) {
    try {
      return text.encode(s);
    } catch (const Error& e) {
      bad("prompt", fmt::format("'prompt' cannot be tokenized: {}", e.what()));
    }
  };
  if (p->is_string()) {
    prompts.push_back(encode(p->get<std::string>()));
  } else if (p->is_array() && !p->empty()) {
    if ((*p)[0].is_number()) {
      prompts.push_back(idsPrompt(*p, "prompt"));
    } else {
      for (const ojson& e : *p) {
        if (e.is_string()) prompts.push_back(encode(e.get<std::string>()));
        else if (e.is_array() && !e.empty()) prompts.push_back(idsPrompt(e, "prompt"));
        else bad("prompt", "'prompt' lists must hold strings or non-empty lists of token ids");
      }
    }
  } else {
    bad("prompt", "'prompt' must be a string, a non-empty list of strings, or token ids");
  }
  if (prompts.size() > 256) bad("prompt", "'prompt' holds more than 256 prompts");
  for (const auto& ids : prompts)
    if (ids.empty()) bad("prompt", "a prompt encodes to no tokens");
  return prompts;
}

// Messages as the template sees them: content as a string (text parts
// joined with newlines, as vLLM does for string-content templates).
ojson chatMessages(const ojson& body) {
  const ojson* m = field(body, "messages");
  if (!m || !m->is_array() || m->empty()) bad("messages", "'messages' must be a non-empty list of messages");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  ojson out = ojson::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const ojson& msg = (*m)[i];
    std::string param = fmt::format("messages[{}]", i);
    if (!msg.is_object()) bad(param, fmt::format("'{}' must be an object with a role and content", param));
    const ojson* role = field(msg, "role");
    if (!role || !role->is_string() || !roles.count(role->get<std::string>()))
      bad(param + ".role", fmt::format("'{}.role' must be one of system, developer, user, assistant, tool", param));
    ojson copy = msg;
    const ojson* content = field(msg, "content");
    if (!content) {
      if (role->get<std::string>() != "assistant" || !field(msg, "tool_calls"))
        bad(param + ".content", fmt::format("'{}.content' is required", param));
      copy["content"] = "";
    } else if (content->is_array()) {
      std::string joined;
      for (size_t k = 0; k < content->size(); ++k) {
        const ojson& part = (*content)[k];
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          bad(fmt::format("{}.content[{}]", param, k),
              fmt::format("'{}.content[{}]' must be a text part {{\"type\": \"text\", \"text\": ...}}: strata's "
                          "models read text only",
                          param, k));
        joined += (k ? "\n" : "") + part["text"].get<std::string>();
      }
      copy["content"] = joined;
    } else if (!content->is_string()) {
      bad(param + ".content", fmt::format("'{}.content' must be a string or a list of text parts", param));
    }
    if (role->get<std::string>() == "developer") copy["role"] = "system";  // OpenAI's newer name for it
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

ParsedRequest parseRequest(const std::string& body, bool chat, const ServeLimits& lim, const ServedText& text) {
  ojson b = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (b.is_discarded()) bad("", "the request body is not valid JSON");
  if (!b.is_object()) bad("", "the request body must be a JSON object");
  for (const auto& [k, v] : b.items())
    if (!kCommon.count(k) && !(chat ? kChat : kCompletion).count(k))
      bad(k, fmt::format("unknown field '{}' for {}", k, chat ? "/v1/chat/completions" : "/v1/completions"));

  ParsedRequest r;
  r.chat = chat;
  const ojson* model = field(b, "model");
  if (!model || !model->is_string()) bad("model", "'model' is required (a string)");
  if (model->get<std::string>() != lim.modelName)
    throw ApiError(404, fmt::format("The model '{}' does not exist; this server serves '{}'", model->get<std::string>(),
                                    lim.modelName),
                   "invalid_request_error", "model", "model_not_found");

  // Asked-for features strata does not have: refused, never ignored.
  auto refuse = [&](const char* name, const std::string& why) {
    if (field(b, name)) bad(name, fmt::format("'{}' is not supported: {}", name, why));
  };
  if (const ojson* lb = field(b, "logit_bias"); lb && !(lb->is_object() && lb->empty()))
    bad("logit_bias", "'logit_bias' is not supported");
  if (intField(b, "best_of", 1, 1, 1) != 1) bad("best_of", "'best_of' must be 1");
  if (!chat) {
    if (boolField(b, "echo", false)) bad("echo", "'echo' is not supported");
    refuse("suffix", "strata's models do not fill in the middle");
  } else {
    refuse("tools", "strata does not parse tool calls yet");
    refuse("functions", "strata does not parse tool calls yet");
    refuse("response_format", "structured output is not supported yet");
    if (const ojson* tc = field(b, "tool_choice"); tc && !(tc->is_string() && tc->get<std::string>() == "none"))
      bad("tool_choice", "'tool_choice' is not supported (only \"none\")");
    if (const ojson* fc = field(b, "function_call"); fc && !(fc->is_string() && fc->get<std::string>() == "none"))
      bad("function_call", "'function_call' is not supported");
  }

  Job job;
  job.n = intField(b, "n", 1, lim.maxN, 1);
  double temperature = numField(b, "temperature", 0, 2, 1.0);
  double topP = numField(b, "top_p", 0, 1, 1.0, /*loOpen=*/true);
  int64_t topK = intField(b, "top_k", -1, 1 << 30, 0);
  job.sampling.greedy = temperature == 0;
  job.sampling.temperature = temperature == 0 ? 1.0f : (float)temperature;
  job.sampling.topP = (float)topP;
  job.sampling.topK = topK < 0 ? 0 : topK;
  job.sampling.repetitionPenalty = (float)numField(b, "repetition_penalty", 0, 10, 1.0, /*loOpen=*/true);
  job.sampling.presencePenalty = (float)numField(b, "presence_penalty", -2, 2, 0);
  job.sampling.frequencyPenalty = (float)numField(b, "frequency_penalty", -2, 2, 0);
  job.sampling.minP = (float)numField(b, "min_p", 0, 1, 0);
  if (field(b, "seed")) {
    job.sampling.seed = (uint64_t)intField(b, "seed", 0, INT64_MAX, 0);
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    job.sampling.seed = rng() >> 1;
  }
  if (const ojson* s = field(b, "stop")) {
    if (s->is_string()) job.stop.push_back(s->get<std::string>());
    else if (s->is_array() && s->size() <= 16) {
      for (const ojson& e : *s) {
        if (!e.is_string()) bad("stop", "'stop' must be a string or a list of at most 16 strings");
        job.stop.push_back(e.get<std::string>());
      }
    } else {
      bad("stop", "'stop' must be a string or a list of at most 16 strings");
    }
    for (const std::string& s2 : job.stop)
      if (s2.empty() || s2.size() > 256) bad("stop", "stop strings must be 1 to 256 bytes");
  }
  bool ignoreEos = boolField(b, "ignore_eos", false);

  // Log-probabilities: an integer on completions, a flag + top_logprobs on chats.
  if (chat) {
    bool want = boolField(b, "logprobs", false);
    int64_t top = intField(b, "top_logprobs", 0, kMaxTopLogprobs, 0);
    if (field(b, "top_logprobs") && !want) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (want) r.topLogprobs = top;
  } else if (field(b, "logprobs")) {
    r.topLogprobs = intField(b, "logprobs", 0, kMaxTopLogprobs, 0);
  }
  if (r.topLogprobs >= 0) job.logprobs = r.topLogprobs;

  r.stream = boolField(b, "stream", false);
  if (const ojson* so = field(b, "stream_options")) {
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed with 'stream': true");
    if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
    for (const auto& [k, v] : so->items())
      if (k != "include_usage" && k != "continuous_usage_stats")
        bad("stream_options", fmt::format("unknown field 'stream_options.{}'", k));
    r.includeUsage = boolField(*so, "include_usage", false);
  }

  std::vector<std::vector<int64_t>> prompts;
  if (chat) {
    if (!text.hasChatTemplate())
      bad("messages", "this model has no chat template (tokenizer_config.json has no chat_template; start the server "
                      "with --chat-template FILE); use /v1/completions");
    ojson messages = chatMessages(b);
    try {
      prompts.push_back(text.encodeChat(messages));
    } catch (const Error& e) {
      bad("messages", fmt::format("the model's chat template refuses these messages: {}", e.what()));
    }
    if (!ignoreEos)
      for (int64_t id : text.chatStopIds()) job.eosIds.push_back(id);
  } else {
    prompts = completionPrompts(b, text);
  }
  if (!ignoreEos)
    for (int64_t id : lim.eosIds) job.eosIds.push_back(id);

  // Lengths: the prompt and the completion within the limits and the context.
  const char* maxName = chat && field(b, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (chat && field(b, "max_completion_tokens") && field(b, "max_tokens"))
    bad("max_tokens", "give 'max_tokens' or 'max_completion_tokens', not both");
  int64_t maxCap = lim.maxTokens > 0 ? lim.maxTokens : (lim.maxContext > 0 ? lim.maxContext : INT64_MAX / 2);
  std::optional<int64_t> asked;
  if (field(b, maxName)) asked = intField(b, maxName, 1, INT64_MAX / 2, 16);
  if (asked && lim.maxTokens > 0 && *asked > lim.maxTokens)
    bad(maxName, fmt::format("'{}' is {}, over this server's limit of {} (--max-tokens)", maxName, *asked, lim.maxTokens));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t len = (int64_t)prompts[i].size();
    if (lim.vocabSize > 0)
      for (int64_t id : prompts[i])
        if (id >= lim.vocabSize)
          bad(chat ? "messages" : "prompt",
              fmt::format("token id {} is outside the model's vocabulary of {}", id, lim.vocabSize));
    const char* promptName = chat ? "messages" : "prompt";
    if (lim.maxPromptTokens > 0 && len > lim.maxPromptTokens)
      bad(promptName, fmt::format("the prompt has {} tokens, over this server's limit of {} (--max-prompt-tokens)", len,
                                  lim.maxPromptTokens));
    if (lim.maxContext > 0 && len >= lim.maxContext)
      bad(promptName, fmt::format("the prompt has {} tokens; the model's context is {} (room for no completion)", len,
                                  lim.maxContext));
    Job j = job;
    j.promptIds = prompts[i];
    // OpenAI's defaults: 16 tokens for completions, the rest of the context for chats.
    int64_t room = lim.maxContext > 0 ? lim.maxContext - len : maxCap;
    j.maxTokens = asked ? *asked : chat ? std::min(room, maxCap) : std::min<int64_t>(16, room);
    if (asked && lim.maxContext > 0 && len + *asked > lim.maxContext)
      j.maxTokens = room;  // the context ends the completion ("length"), as vLLM's default does not refuse
    r.jobs.push_back(std::move(j));
  }
  return r;
}

const char* finishReasonText(FinishReason r) {
  switch (r) {
    case FinishReason::Eos:
    case FinishReason::Stop: return "stop";
    case FinishReason::Length:
    case FinishReason::Context: return "length";
  }
  return "stop";
}

ojson usageJson(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

namespace {

ojson bytesOf(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back((int)c);
  return b;
}

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
ojson chatLogprobs(const std::vector<TokenInfo>& tokens, int64_t top, const ServedText& text) {
  ojson content = ojson::array();
  for (const TokenInfo& t : tokens) {
    std::string s = text.tokenText(t.id);
    ojson alts = ojson::array();
    for (int64_t k = 0; k < top && k < (int64_t)t.logprobs.top.size(); ++k) {
      std::string a = text.tokenText(t.logprobs.top[k].first);
      alts.push_back({{"token", a}, {"logprob", t.logprobs.top[k].second}, {"bytes", bytesOf(a)}});
    }
    content.push_back({{"token", s}, {"logprob", t.logprobs.logprob}, {"bytes", bytesOf(s)}, {"top_logprobs", alts}});
  }
  return {{"content", content}};
}

// Completions logprobs: parallel lists (tokens, token_logprobs, top_logprobs, text_offset).
ojson completionLogprobs(const std::vector<TokenInfo>& tokens, int64_t top, const ServedText& text, int64_t offset) {
  ojson toks = ojson::array(), lps = ojson::array(), tops = ojson::array(), offs = ojson::array();
  for (const TokenInfo& t : tokens) {
    std::string s = text.tokenText(t.id);
    toks.push_back(s);
    lps.push_back(t.logprobs.logprob);
    ojson alts = ojson::object();
    for (int64_t k = 0; k < top && k < (int64_t)t.logprobs.top.size(); ++k)
      alts[text.tokenText(t.logprobs.top[k].first)] = t.logprobs.top[k].second;
    tops.push_back(alts);
    offs.push_back(offset);
    offset += (int64_t)s.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

}  // namespace

ojson completionResponse(const ResponseIds& ids, bool chat, const std::vector<ChoiceResult>& choices, int64_t prompt,
                         int64_t completion, int64_t top, const ServedText& text) {
  ojson cs = ojson::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    ojson lp = top < 0 ? ojson() : chat ? chatLogprobs(c.tokens, top, text) : completionLogprobs(c.tokens, top, text, 0);
    if (chat)
      cs.push_back({{"index", (int64_t)i},
                    {"message", {{"role", "assistant"}, {"content", c.text}}},
                    {"logprobs", lp},
                    {"finish_reason", c.finishReason}});
    else
      cs.push_back({{"index", (int64_t)i}, {"text", c.text}, {"logprobs", lp}, {"finish_reason", c.finishReason}});
  }
  return {{"id", ids.id},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", cs},
          {"usage", usageJson(prompt, completion)}};
}

ojson streamChunk(const ResponseIds& ids, bool chat, int64_t index, const std::string* role, const std::string& delta,
                  const std::vector<TokenInfo>& tokens, const char* finishReason, int64_t top, bool includeUsage,
                  const ServedText& text) {
  ojson lp = top < 0 || tokens.empty() ? ojson()
             : chat                    ? chatLogprobs(tokens, top, text)
                                       : completionLogprobs(tokens, top, text, 0);
  ojson choice;
  if (chat) {
    ojson d = ojson::object();
    if (role) d["role"] = *role;
    if (role || !delta.empty() || !finishReason) d["content"] = delta;
    choice = {{"index", index}, {"delta", d}, {"logprobs", lp}, {"finish_reason", finishReason ? ojson(finishReason) : ojson()}};
  } else {
    choice = {{"index", index}, {"text", delta}, {"logprobs", lp}, {"finish_reason", finishReason ? ojson(finishReason) : ojson()}};
  }
  ojson chunk = {{"id", ids.id},
                 {"object", chat ? "chat.completion.chunk" : "text_completion"},
                 {"created", ids.created},
                 {"model", ids.model},
                 {"choices", ojson::array({choice})}};
  if (includeUsage) chunk["usage"] = nullptr;
  return chunk;
}

ojson usageChunk(const ResponseIds& ids, bool chat, int64_t prompt, int64_t completion) {
  return {{"id", ids.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", ojson::array()},
          {"usage", usageJson(prompt, completion)}};
}

}  // namespace strata::runtime::server
