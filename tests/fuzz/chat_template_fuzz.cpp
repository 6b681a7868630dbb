// libFuzzer target: the Jinja interpreter of chat templates. The input is a
// template; it is parsed and rendered over a fixed conversation. Passes
// when every input renders or raises strata::Error, within the
// interpreter's bounds (nesting, loop iterations, output size).
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/jinja.h"
#include "ops/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using strata::models::jinja::Template;
  using strata::models::jinja::Value;
  static const Value context = Value::fromJson(nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "héllo"},
                 {"role": "assistant", "content": " a ", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                 {"role": "user", "content": "q"}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})"));
  try {
    Template t(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)t.render(context);
  } catch (const strata::Error&) {
  }
  return 0;
}
