#include "codegen/Artifact.h"

#include <fstream>

#include "ops/error.h"

namespace strata::tile {

namespace fs = std::filesystem;

void writeText(const fs::path& p, const std::string& text) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary);
    if (!(os << text)) fail("cannot write {}", tmp.string());
  }
  fs::rename(tmp, p);  // never leaves a half-written file under the final name
}

fs::path outputDir(const std::string& dir, const char* marker) {
  fs::path d(dir);
  std::error_code ec;
  if (fs::exists(d, ec) && !fs::is_directory(d, ec)) fail("-o {}: exists and is not a directory", dir);
  auto ours = [&] {
    for (const char* f : {marker, "plan.json", "kernels.json", "kernels.ptx", "kernels.mlir", "kernels.so"})
      if (fs::exists(d / f, ec)) return true;
    return false;
  };
  if (fs::is_directory(d, ec) && !fs::is_empty(d, ec) && !ours())
    fail("-o {}: the directory is not empty and holds no strata output ({}); refusing to write into it", dir, marker);
  fs::create_directories(d, ec);
  if (ec) fail("cannot create {}: {}", dir, ec.message());
  return d;
}

}  // namespace strata::tile
