#include "models/model_source.h"

#include <filesystem>
#include <fstream>

#include "models/gguf.h"
#include "models/gguf_model.h"
#include "models/llama_builder.h"
#include "models/onnx_loader.h"

namespace strata::models {

namespace fs = std::filesystem;

namespace {
fs::path modelDir(const std::string& p) { return fs::is_directory(p) ? fs::path(p) : fs::path(p).parent_path(); }

// bos/eos from config.json / generation_config.json next to an ONNX file.
void addTokenIds(ops::GraphDef& g, const fs::path& dir) {
  for (const char* name : {"config.json", "generation_config.json"}) {
    std::ifstream f(dir / name);
    if (!f) continue;
    auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    for (const char* key : {"bos_token_id", "eos_token_id", "vocab_size"}) {
      auto it = j.find(key);
      if (it == j.end()) continue;
      const auto& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
      if (v.is_number_integer()) g.meta[key] = v;
    }
  }
}
}  // namespace

ops::GraphDef loadModel(const std::string& path) {
  if (!fs::exists(path)) fail("'{}' does not exist (expected an HF model folder, an .onnx or a .gguf file)", path);
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / "config.json")) return loadHfCheckpoint(path);
    fail("'{}' is a folder without config.json (expected an HF model folder or an .onnx file)", path);
  }
  if (isGgufPath(path)) return loadGgufModel(path);
  if (fs::path(path).extension() == ".onnx") {
    ops::GraphDef g = loadOnnx(path);
    addTokenIds(g, modelDir(path));
    return g;
  }
  fail("'{}' is not a model strata can open (an HF model folder, an .onnx or a .gguf file)", path);
}

std::optional<std::string> findTokenizer(const std::string& modelPath) {
  if (isGgufPath(modelPath) && fs::is_regular_file(modelPath)) return modelPath;  // its tokenizer.ggml.* metadata
  fs::path t = modelDir(modelPath) / "tokenizer.json";
  if (fs::exists(t)) return t.string();
  return std::nullopt;
}

nlohmann::json sourceNotes(const std::string& modelPath) {
  nlohmann::json notes = nlohmann::json::object();
  if (auto t = findTokenizer(modelPath)) notes["tokenizer"] = fs::absolute(*t).string();
  notes["source_model"] = fs::absolute(modelPath).string();
  return notes;
}

}  // namespace strata::models
