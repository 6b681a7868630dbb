#include "models/safetensors.h"

#include <cstring>

#include "runtime/mapped_file.h"

namespace strata::models {

using nlohmann::json;

namespace {
ops::DType dtypeOf(const std::string& s, const std::string& path, const std::string& name) {
  if (s == "F32") return ops::DType::F32;
  if (s == "F16") return ops::DType::F16;
  if (s == "BF16") return ops::DType::BF16;
  if (s == "I64") return ops::DType::I64;
  if (s == "I32") return ops::DType::I32;
  if (s == "BOOL") return ops::DType::Bool;
  fail("{}: tensor '{}' has dtype '{}', which strata does not support (F32, F16, BF16, I64, I32, BOOL)", path, name, s);
}
}  // namespace

std::map<std::string, ops::WeightRef> parseSafetensorsHeader(const uint8_t* data, size_t size, const std::string& path) {
  if (size < 8) fail("{}: too short to be a safetensors file ({} bytes)", path, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8) fail("{}: bad safetensors header: it claims {} bytes but the file has {}", path, n, size);
  uint64_t base = 8 + n, dataSize = size - base;
  json h;
  try {
    h = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) {
    fail("{}: bad safetensors header: not valid JSON ({})", path, e.what());
  }
  if (!h.is_object()) fail("{}: bad safetensors header: expected a JSON object", path);
  std::map<std::string, ops::WeightRef> out;
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") continue;
    try {
      ops::WeightRef w;
      w.name = name;
      w.dtype = dtypeOf(v.at("dtype").get<std::string>(), path, name);
      w.shape = v.at("shape").get<ops::Shape>();
      auto off = v.at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2 || off[0] > off[1] || off[1] > dataSize)
        fail("{}: tensor '{}': data_offsets out of range (data section is {} bytes)", path, name, dataSize);
      uint64_t count = 1;
      for (int64_t d : w.shape) {
        if (d < 0) fail("{}: tensor '{}': negative dimension", path, name);
        if (d && count > UINT64_MAX / (uint64_t)d) fail("{}: tensor '{}': shape overflows", path, name);
        count *= (uint64_t)d;
      }
      if (count > UINT64_MAX / 8 || count * ops::dtypeSize(w.dtype) != off[1] - off[0])
        fail("{}: tensor '{}': {} bytes of data but shape {} needs {}", path, name, off[1] - off[0],
             ops::shapeStr(w.shape), count * ops::dtypeSize(w.dtype));
      w.file = path;
      w.offset = base + off[0];
      w.nbytes = off[1] - off[0];
      out[name] = w;
    } catch (const json::exception& e) {
      fail("{}: tensor '{}': malformed header entry ({})", path, name, e.what());
    }
  }
  return out;
}

std::map<std::string, ops::WeightRef> readSafetensorsHeader(const std::string& path) {
  auto f = runtime::MappedFile::open(path);
  return parseSafetensorsHeader(f->data(), f->size(), path);
}

}  // namespace strata::models
