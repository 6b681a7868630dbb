#include "models/gguf.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ops/error.h"
#include "runtime/mapped_file.h"

namespace strata::models {

bool ggmlBlock(uint32_t type, int64_t& blockElems, int64_t& blockBytes, std::string& name) {
  struct Row {
    uint32_t type;
    const char* name;
    int64_t elems, bytes;
  };
  // ggml's block layouts (ggml-common.h; QK_K = 256).
  static const Row rows[] = {
      {0, "F32", 1, 4},           {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},        {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 40},
      {10, "Q2_K", 256, 84},      {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},     {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
      {18, "IQ3_XXS", 256, 98},   {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},     {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
      {26, "I32", 1, 4},          {27, "I64", 1, 8},         {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
      {30, "BF16", 1, 2},         {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
  };
  for (const Row& r : rows)
    if (r.type == type) {
      blockElems = r.elems, blockBytes = r.bytes, name = r.name;
      return true;
    }
  return false;
}

namespace {

// A cursor over the file's bytes: every read is bounds-checked, so a count
// or length from the file is compared with what is left before anything is
// allocated for it.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& path) : p_(data), size_(size), path_(path) {}
  size_t at() const { return at_; }
  size_t left() const { return size_ - at_; }
  template <typename T>
  T scalar(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& what) {
    const uint64_t n = scalar<uint64_t>(what + " (its length)");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return s;
  }
  void need(uint64_t n, const std::string& what) const {
    if (n > left()) fail("{}: {} needs {} bytes at offset {}, the file has {} left (truncated or corrupt)", path_, what, n, at_, left());
  }

 private:
  const uint8_t* p_;
  size_t size_, at_ = 0;
  const std::string& path_;
};

uint64_t typeSize(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;  // strings and arrays: variable
  }
}

GgufType checkedType(uint32_t t, const std::string& path, const std::string& key) {
  if (t > 12) fail("{}: metadata '{}' has value type {}, which GGUF does not define (0..12)", path, key, t);
  return static_cast<GgufType>(t);
}

nlohmann::json readValue(Reader& r, GgufType t, const std::string& path, const std::string& key, int depth,
                         GgufType* elemType = nullptr) {
  const std::string what = fmt::format("metadata '{}'", key);
  switch (t) {
    case GgufType::U8: return r.scalar<uint8_t>(what);
    case GgufType::I8: return r.scalar<int8_t>(what);
    case GgufType::U16: return r.scalar<uint16_t>(what);
    case GgufType::I16: return r.scalar<int16_t>(what);
    case GgufType::U32: return r.scalar<uint32_t>(what);
    case GgufType::I32: return r.scalar<int32_t>(what);
    case GgufType::U64: return r.scalar<uint64_t>(what);
    case GgufType::I64: return r.scalar<int64_t>(what);
    case GgufType::F32: return r.scalar<float>(what);
    case GgufType::F64: return r.scalar<double>(what);
    case GgufType::Bool: {
      const uint8_t b = r.scalar<uint8_t>(what);
      if (b > 1) fail("{}: metadata '{}' is a bool with byte {} (0 or 1)", path, key, b);
      return b == 1;
    }
    case GgufType::String: return r.string(what);
    case GgufType::Array: {
      if (depth >= kMaxGgufArrayDepth)
        fail("{}: metadata '{}' nests arrays deeper than {}", path, key, kMaxGgufArrayDepth);
      const GgufType et = checkedType(r.scalar<uint32_t>(what + " (its element type)"), path, key);
      const uint64_t n = r.scalar<uint64_t>(what + " (its length)");
      // Each element takes at least its fixed size, or 8 bytes (a string's
      // or an array's length): a count past the bytes left is corrupt.
      const uint64_t least = typeSize(et) ? typeSize(et) : 8;
      if (n > r.left() / least)
        fail("{}: metadata '{}' claims {} elements, more than the {} bytes left can hold", path, key, n, r.left());
      if (elemType) *elemType = et;
      nlohmann::json a = nlohmann::json::array();
      for (uint64_t i = 0; i < n; ++i) a.push_back(readValue(r, et, path, key, depth + 1));
      return a;
    }
  }
  fail("{}: metadata '{}': unknown value type", path, key);
}

}  // namespace

GgufFile parseGguf(const uint8_t* data, size_t size, const std::string& path) {
  GgufFile f;
  f.path = path;
  Reader r(data, size, path);
  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) fail("{}: not a GGUF file (no 'GGUF' magic)", path);
  r.scalar<uint32_t>("the magic");
  f.version = r.scalar<uint32_t>("the version");
  if (f.version != 2 && f.version != 3)
    fail("{}: GGUF version {} is not supported (2 and 3 are; version 1 files predate 2023-08)", path, f.version);
  const uint64_t tensorCount = r.scalar<uint64_t>("the tensor count");
  const uint64_t metaCount = r.scalar<uint64_t>("the metadata count");
  // A key takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 8 + 4 + 8.
  if (metaCount > r.left() / 13) fail("{}: the header claims {} metadata entries; the file is too short for them", path, metaCount);
  if (tensorCount > r.left() / 32) fail("{}: the header claims {} tensors; the file is too short for them", path, tensorCount);

  for (uint64_t i = 0; i < metaCount; ++i) {
    std::string key = r.string(fmt::format("metadata key {}", i));
    if (key.empty()) fail("{}: metadata key {} is empty", path, i);
    GgufValue v;
    v.type = checkedType(r.scalar<uint32_t>(fmt::format("metadata '{}' (its type)", key)), path, key);
    v.value = readValue(r, v.type, path, key, 0, &v.elemType);
    if (!f.meta.emplace(key, std::move(v)).second) fail("{}: metadata '{}' is given twice", path, key);
  }
  if (auto it = f.meta.find("general.alignment"); it != f.meta.end()) {
    if (it->second.type != GgufType::U32) fail("{}: general.alignment must be a u32", path);
    const uint64_t a = it->second.value.get<uint64_t>();
    if (a == 0 || (a & (a - 1)) != 0) fail("{}: general.alignment {} is not a power of two", path, a);
    f.alignment = a;
  }

  std::set<std::string> names;
  for (uint64_t i = 0; i < tensorCount; ++i) {
    GgufTensor t;
    t.name = r.string(fmt::format("tensor info {} (its name)", i));
    const std::string what = fmt::format("tensor '{}'", t.name);
    if (t.name.empty()) fail("{}: tensor {} has an empty name", path, i);
    if (!names.insert(t.name).second) fail("{}: tensor '{}' is listed twice", path, t.name);
    const uint32_t nd = r.scalar<uint32_t>(what + " (its dims)");
    if (nd == 0 || nd > 4) fail("{}: tensor '{}' has {} dims (1 to 4)", path, t.name, nd);
    uint64_t count = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t n = r.scalar<uint64_t>(what + " (a dim)");
      if (n == 0 || n > (uint64_t)INT64_MAX || count > (uint64_t)INT64_MAX / n)
        fail("{}: tensor '{}' has dims that are zero or overflow", path, t.name);
      count *= n;
      t.dims.push_back((int64_t)n);
    }
    t.type = r.scalar<uint32_t>(what + " (its type)");
    int64_t blockElems = 0, blockBytes = 0;
    if (!ggmlBlock(t.type, blockElems, blockBytes, t.typeName))
      fail("{}: tensor '{}' has ggml type {}, which is unknown", path, t.name, t.type);
    if (t.dims[0] % blockElems)
      fail("{}: tensor '{}' ({}) has rows of {} elements, not a whole number of {}-element blocks", path, t.name,
           t.typeName, t.dims[0], blockElems);
    const uint64_t blocks = count / (uint64_t)blockElems;
    if (blocks > UINT64_MAX / (uint64_t)blockBytes) fail("{}: tensor '{}' is too large", path, t.name);
    t.nbytes = blocks * (uint64_t)blockBytes;
    t.offset = r.scalar<uint64_t>(what + " (its offset)");
    if (t.offset % f.alignment)
      fail("{}: tensor '{}' starts at data offset {}, not a multiple of the alignment {}", path, t.name, t.offset,
           f.alignment);
    f.tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment.
  const uint64_t end = r.at();
  f.dataOffset = (end + f.alignment - 1) / f.alignment * f.alignment;
  if (f.dataOffset > size && !f.tensors.empty()) fail("{}: the file ends before its data section", path);
  const uint64_t dataSize = f.dataOffset <= size ? size - f.dataOffset : 0;
  // In range and not overlapping (ggml's writer places them in order,
  // each padded to the alignment; any order is accepted).
  std::vector<size_t> order(f.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f.tensors[a].offset < f.tensors[b].offset; });
  uint64_t covered = 0;
  for (size_t i : order) {
    GgufTensor& t = f.tensors[i];
    if (t.offset > dataSize || t.nbytes > dataSize - t.offset)
      fail("{}: tensor '{}' ({}, {} bytes at data offset {}) runs past the end of the file (data section: {} bytes)",
           path, t.name, t.typeName, t.nbytes, t.offset, dataSize);
    if (t.offset < covered) fail("{}: tensor '{}' overlaps the tensor before it", path, t.name);
    covered = t.offset + t.nbytes;
    t.offset += f.dataOffset;
  }
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = meta.find(key);
  return it == meta.end() ? nullptr : &it->second;
}

const GgufValue& GgufFile::need(const std::string& key, GgufType type) const {
  const GgufValue* v = find(key);
  if (!v) fail("{}: metadata '{}' is missing", path, key);
  if (v->type != type) fail("{}: metadata '{}' has the wrong type", path, key);
  return *v;
}

bool isIntegerType(GgufType t) {
  return t == GgufType::U8 || t == GgufType::I8 || t == GgufType::U16 || t == GgufType::I16 || t == GgufType::U32 ||
         t == GgufType::I32 || t == GgufType::U64 || t == GgufType::I64;
}

bool isGgufPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

GgufFile readGguf(const std::string& path) {
  auto m = runtime::MappedFile::open(path);
  return parseGguf(m->data(), m->size(), path);
}

}  // namespace strata::models
