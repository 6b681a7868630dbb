// JSON from files a user hands strata (config.json, tokenizer.json,
// tokenizer_config.json): parsed with a bound on nesting, so nothing that
// walks the document afterwards (the tokenizer's component readers, error
// messages that print a part of it) recurses without limit on a hostile
// file. Real files nest a few levels (tokenizer.json: about 6).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace strata::models {

constexpr int kMaxJsonDepth = 64;

// Throws strata::Error naming `path`: unreadable, not JSON, or nested
// deeper than kMaxJsonDepth.
nlohmann::json readJsonFile(const std::string& path);
nlohmann::json parseJsonText(const std::string& text, const std::string& path);

}  // namespace strata::models
