#include "models/json_input.h"

#include <fstream>
#include <sstream>

#include "ops/error.h"

namespace strata::models {

nlohmann::json parseJsonText(const std::string& text, const std::string& path) {
  bool tooDeep = false;
  auto bounded = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth) tooDeep = true;
    return !tooDeep;  // past the bound nothing more is kept
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, bounded);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
  if (tooDeep) fail("{}: JSON nested deeper than {} levels", path, kMaxJsonDepth);
  return j;
}

nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open '{}'", path);
  std::ostringstream s;
  s << f.rdbuf();
  if (!f && !f.eof()) fail("{}: cannot read", path);
  return parseJsonText(s.str(), path);
}

}  // namespace strata::models
