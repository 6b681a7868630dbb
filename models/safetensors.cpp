#include "models/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

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
  // The format's own bound (the reference reader refuses larger headers).
  if (n > kMaxSafetensorsHeader)
    fail("{}: bad safetensors header: {} bytes, more than the format's {}", path, n, kMaxSafetensorsHeader);
  if (n < 2 || data[8] != '{') fail("{}: bad safetensors header: it must start with '{{' (a JSON object)", path);
  const uint64_t base = 8 + n, dataSize = size - base;
  // Keys are unique: the parser sees each one of the top object, so a
  // duplicate (which a plain parse would silently resolve to the last) is
  // an error here.
  std::string duplicate;
  std::set<std::string> keys;
  auto noDuplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !keys.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json h;
  try {
    // The format pads the header with spaces; the parser accepts
    // whitespace after the object and nothing else.
    h = json::parse(data + 8, data + 8 + n, noDuplicates);
  } catch (const json::exception& e) {
    fail("{}: bad safetensors header: not valid JSON ({})", path, e.what());
  }
  if (!h.is_object()) fail("{}: bad safetensors header: expected a JSON object", path);
  if (!duplicate.empty()) fail("{}: bad safetensors header: tensor '{}' is listed twice", path, duplicate);
  if (const auto m = h.find("__metadata__"); m != h.end()) {
    if (!m->is_object()) fail("{}: bad safetensors header: __metadata__ must be an object of strings", path);
    for (const auto& [k, v] : m->items())
      if (!v.is_string()) fail("{}: bad safetensors header: __metadata__ '{}' is not a string", path, k);
  }
  std::map<std::string, ops::WeightRef> out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // data offsets, to check they tile the data
  std::vector<std::string> owner;
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") continue;
    try {
      if (!v.is_object()) fail("{}: tensor '{}': expected an object {{dtype, shape, data_offsets}}", path, name);
      for (const auto& [k, _] : v.items())
        if (k != "dtype" && k != "shape" && k != "data_offsets") fail("{}: tensor '{}': unknown field '{}'", path, name, k);
      ops::WeightRef w;
      w.name = name;
      w.dtype = dtypeOf(v.at("dtype").get<std::string>(), path, name);
      const json& shape = v.at("shape");
      if (!shape.is_array()) fail("{}: tensor '{}': shape must be a list of non-negative integers", path, name);
      for (const json& d : shape) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t)INT64_MAX)
          fail("{}: tensor '{}': shape {} must be non-negative integers", path, name, shape.dump());
        w.shape.push_back(d.get<int64_t>());
      }
      const json& offsets = v.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
          !offsets[1].is_number_unsigned())
        fail("{}: tensor '{}': data_offsets {} must be two non-negative integers [begin, end]", path, name,
             offsets.dump());
      const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
      if (begin > end || end > dataSize)
        fail("{}: tensor '{}': data_offsets [{}, {}] out of range (data section is {} bytes)", path, name, begin, end,
             dataSize);
      uint64_t count = 1;
      for (int64_t d : w.shape) {
        if (d && count > UINT64_MAX / (uint64_t)d) fail("{}: tensor '{}': shape overflows", path, name);
        count *= (uint64_t)d;
      }
      if (count > UINT64_MAX / 8 || count * ops::dtypeSize(w.dtype) != end - begin)
        fail("{}: tensor '{}': {} bytes of data but shape {} needs {}", path, name, end - begin,
             ops::shapeStr(w.shape), count * ops::dtypeSize(w.dtype));
      w.file = path;
      w.offset = base + begin;
      w.nbytes = end - begin;
      out[name] = w;
      ranges.push_back({begin, end});
      owner.push_back(name);
    } catch (const json::exception& e) {
      fail("{}: tensor '{}': malformed header entry ({})", path, name, e.what());
    }
  }
  // The data section is exactly the tensors, back to back: no overlap or
  // aliasing (two tensors over the same bytes), no hole, nothing after.
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  uint64_t at = 0;
  for (size_t i : order) {
    if (ranges[i].first < at)
      fail("{}: tensor '{}' (bytes {}..{}) overlaps the tensor before it (which ends at {})", path, owner[i],
           ranges[i].first, ranges[i].second, at);
    if (ranges[i].first > at)
      fail("{}: bytes {}..{} of the data section belong to no tensor (a hole before tensor '{}')", path, at,
           ranges[i].first, owner[i]);
    at = ranges[i].second;
  }
  if (at != dataSize)
    fail("{}: the tensors cover {} bytes but the data section has {} (the header length or an offset is wrong)", path,
         at, dataSize);
  return out;
}

std::map<std::string, ops::WeightRef> readSafetensorsHeader(const std::string& path) {
  auto f = runtime::MappedFile::open(path);
  return parseSafetensorsHeader(f->data(), f->size(), path);
}

}  // namespace strata::models
