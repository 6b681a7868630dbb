#include "tools/kernel_cache.h"

#include <cstdlib>

#include <fmt/format.h>

namespace strata::tools {

namespace fs = std::filesystem;

fs::path kernelCacheDir() {
  const char* env = std::getenv("STRATA_KERNEL_CACHE");
  if (env && std::string(env) == "off") return {};
  if (env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "strata" / "kernels";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "strata" / "kernels";
  return {};
}

std::string compilerStamp() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown";
  auto size = fs::file_size(exe, ec);
  auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
  return fmt::format("{}:{}:{}", exe.string(), size, time);
}

}  // namespace strata::tools
