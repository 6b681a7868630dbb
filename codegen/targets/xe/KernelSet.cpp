#include "codegen/targets/xe/KernelSet.h"

#include <filesystem>

#include "codegen/Artifact.h"
#include "codegen/targets/xe/Backend.h"
#include "ops/error.h"

namespace strata::tile {

namespace fs = std::filesystem;

void writeXeArtifact(const ops::GraphDef& regions, const KernelSetSpec& set, const std::string& target,
                     const std::string& dtype, int64_t pageSize, const std::string& dir,
                     const nlohmann::json& extraMeta) {
  const fs::path d = outputDir(dir, "plan.json");
  std::error_code ec;
  fs::remove(d / "plan.json", ec);  // incomplete until plan.json is written again
  fs::remove(d / "kernels.json", ec);
  std::string ir;
  forEachKernelText(set, [&](std::string text, int64_t) { ir += text; });
  writeText(d / "kernels.mlir", ir);  // first: a compile that fails leaves the IR it failed on
  const XeModule m = compileXe(ir, target);
  writeText(d / "kernels.spv", m.spirv);
  auto entry = [&](const char* kind, const std::string& name, const std::string& kernelDtype, const nlohmann::json& own) {
    for (const XeKernelInfo& k : m.kernels)
      if (k.name == name) {
        nlohmann::json e = {{"kind", kind}, {"name", name}, {"dtype", kernelDtype}, {"threads", k.workGroupSize}};
        e.update(own);
        return e;
      }
    fail("xe backend: kernel {} missing from the compiled module", name);
  };
  const nlohmann::json manifest = {{"format", kArtifactFormat}, {"target", target}, {"spirv", "kernels.spv"},
                                   {"sub_group_size", 16}, {"kernels", kernelManifestEntries(set, entry)}};
  writeText(d / "kernels.json", manifest.dump(1));
  ops::GraphDef g = regions;
  for (const auto& [k, v] : extraMeta.items()) g.meta[k] = v;
  g.meta["kernels"] = {{"target", target}, {"block_size", pageSize}, {"dtype", dtype}};
  g.meta["artifact"] = {{"format", kArtifactFormat}, {"kernels", "kernels.json"}};
  writeText(d / "plan.json", ops::toJson(g).dump(1));  // last: a plan.json means the artifact is complete
}

}  // namespace strata::tile
