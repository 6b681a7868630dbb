// strata::Error — the one exception type every layer throws for bad input or
// unsupported models. Messages name the file / node / field at fault; the CLI
// prints them and exits non-zero. Never used for programming errors (assert).
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace strata {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace strata
