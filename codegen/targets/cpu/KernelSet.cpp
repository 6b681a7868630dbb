#include "codegen/targets/cpu/KernelSet.h"

#include "codegen/Artifact.h"
#include "codegen/targets/cpu/Backend.h"

namespace strata::tile {

namespace fs = std::filesystem;

void writeCpuArtifact(const KernelPlan& plan, const std::string& dir, const nlohmann::json& extraMeta) {
  fs::path d = outputDir(dir, "plan.json");

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
