#include "codegen/Artifact.h"

#include <filesystem>
#include <fstream>

#include "codegen/CpuBackend.h"
#include "ops/error.h"

namespace strata::tile {

namespace fs = std::filesystem;

namespace {

void writeText(const fs::path& p, const std::string& text) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary);
    if (!(os << text)) fail("cannot write {}", tmp.string());
  }
  fs::rename(tmp, p);  // never leaves a half-written file under the final name
}

}  // namespace

void writeCpuArtifact(const KernelPlan& plan, const std::string& dir, const nlohmann::json& extraMeta) {
  fs::path d(dir);
  std::error_code ec;
  if (fs::exists(d, ec) && !fs::is_directory(d, ec)) fail("-o {}: exists and is not a directory", dir);
  if (fs::is_directory(d, ec) && !fs::is_empty(d, ec) && !fs::exists(d / "plan.json", ec))
    fail("-o {}: the directory is not empty and holds no strata artifact; refusing to write into it", dir);
  fs::create_directories(d, ec);
  if (ec) fail("cannot create {}: {}", dir, ec.message());

  ops::GraphDef g = plan.graph;
  for (const auto& [k, v] : extraMeta.items()) g.meta[k] = v;
  g.meta["artifact"] = {{"format", kArtifactFormat}, {"kernels", "kernels.so"}};
  writeText(d / "kernels.mlir", plan.tileIr);
  fs::path so = d / "kernels.so", tmp = d / "kernels.so.tmp";
  CpuKernels::writeSharedLibrary(plan.tileIr, tmp.string(), g.meta["kernels"].value("target", ""));
  fs::rename(tmp, so);
  writeText(d / "plan.json", ops::toJson(g).dump(1));  // last: a plan.json means the artifact is complete
}

}  // namespace strata::tile
