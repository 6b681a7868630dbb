#include "runtime/artifact.h"

#include <filesystem>
#include <fstream>

#include "runtime/devices/cpu/kernel_library.h"

namespace strata::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

bool isArtifact(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "plan.json", ec);
}

Artifact loadArtifact(const std::string& dir, const ArtifactOptions& o) {
  fs::path planPath = fs::path(dir) / "plan.json";
  std::ifstream is(planPath);
  if (!is) fail("{}: cannot read", planPath.string());
  json j;
  try {
    j = json::parse(is);
  } catch (const std::exception& e) {
    fail("{}: not valid JSON: {}", planPath.string(), e.what());
  }
  Artifact a;
  try {
    a.graph = ops::graphFromJson(j);
  } catch (const Error& e) {
    fail("{}: {}", planPath.string(), e.what());
  } catch (const std::exception& e) {
    fail("{}: not a strata plan: {}", planPath.string(), e.what());
  }
  const json& meta = a.graph.meta;
  if (!meta.contains("artifact") || meta["artifact"].value("format", 0) != 1)
    fail("{}: unknown artifact format (this build reads format 1; recompile with strata compile)", planPath.string());
  if (!meta.contains("kernels")) fail("{}: no kernels section", planPath.string());
  a.target = meta["kernels"].value("target", "");
  std::string why;
  if (!a.gpu() && !hostRuns(a.target, why)) fail("{}: kernels built for {}: {}", dir, a.target, why);
  a.blockSize = meta["kernels"].value("block_size", (int64_t)0);
  if (a.blockSize <= 0) fail("{}: no KV block size in the kernels section", planPath.string());
  if (!o.weightsDir.empty()) {
    if (!fs::is_directory(o.weightsDir)) fail("--weights {}: not a directory", o.weightsDir);
    for (auto& w : a.graph.weights) w.file = (fs::path(o.weightsDir) / fs::path(w.file).filename()).string();
  }
  for (const auto& w : o.weightFiles ? a.graph.weights : std::vector<ops::WeightRef>{}) {
    std::error_code ec;
    auto size = fs::file_size(w.file, ec);
    if (ec || size < w.offset + w.nbytes)
      fail("{}: weight '{}' refers to {} (bytes {}..{}), which is missing or shorter; the artifact references its "
           "model's weight files: give their new folder with --weights, or recompile",
           planPath.string(), w.name, w.file, w.offset, w.offset + w.nbytes);
  }
  if (meta.contains("tokenizer") && meta["tokenizer"].is_string()) a.tokenizer = meta["tokenizer"].get<std::string>();
  // The model's files moved together: a tokenizer in the --weights folder
  // (by the compiled one's file name, or tokenizer.json) is the model's.
  if (!o.weightsDir.empty()) {
    const fs::path moved = fs::path(o.weightsDir) / (a.tokenizer ? fs::path(*a.tokenizer).filename() : "tokenizer.json");
    if (fs::is_regular_file(moved)) a.tokenizer = moved.string();
  }
  if (a.gpu()) {
    a.kernelDir = dir;
    a.dtype = meta["kernels"].value("dtype", "");
    if (a.dtype != "bf16" && a.dtype != "f16") fail("{}: the kernels section names no storage type (bf16, f16)", planPath.string());
    return a;
  }
  a.kernels = loadKernelLibrary((fs::path(dir) / meta["artifact"].value("kernels", "kernels.so")).string());
  return a;
}

}  // namespace strata::runtime
