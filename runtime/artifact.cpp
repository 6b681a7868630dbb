#include "runtime/artifact.h"

#include <filesystem>
#include <fstream>

#include "runtime/kernel_library.h"

namespace strata::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

bool isArtifact(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "plan.json", ec);
}

Artifact loadArtifact(const std::string& dir) {
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
  std::string target = meta["kernels"].value("target", ""), why;
  if (!hostRuns(target, why)) fail("{}: kernels built for {}: {}", dir, target, why);
  a.blockSize = meta["kernels"].value("block_size", (int64_t)0);
  if (a.blockSize <= 0) fail("{}: no KV block size in the kernels section", planPath.string());
  for (const auto& w : a.graph.weights) {
    std::error_code ec;
    auto size = fs::file_size(w.file, ec);
    if (ec || size < w.offset + w.nbytes)
      fail("{}: weight '{}' refers to {} (bytes {}..{}), which is missing or shorter; the artifact references its "
           "model's weight files, so recompile if they moved",
           planPath.string(), w.name, w.file, w.offset, w.offset + w.nbytes);
  }
  if (meta.contains("tokenizer") && meta["tokenizer"].is_string()) a.tokenizer = meta["tokenizer"].get<std::string>();
  a.kernels = loadKernelLibrary((fs::path(dir) / meta["artifact"].value("kernels", "kernels.so")).string());
  return a;
}

}  // namespace strata::runtime
