// GGUF files (llama.cpp's model format, versions 2 and 3): a header
// ("GGUF", version, tensor count, metadata count), typed key-value
// metadata, tensor infos (name, dims, ggml type, offset), then the tensor
// data, aligned to `general.alignment` (32 by default). Parsed into
// metadata values and tensor references (absolute file offsets and byte
// sizes); the data is not read (it is mmap'd in place by its users).
//
// Every rule of the format is checked before anything is trusted, and a
// bad file is an error naming the file and the key or tensor: the magic
// and version; counts, string lengths and array lengths within the bytes
// left (so a corrupt count cannot allocate); value types known, bools 0 or
// 1, arrays at most kMaxGgufArrayDepth deep; keys and tensor names unique;
// `general.alignment` a u32 power of two; tensors of at most 4 dims with
// positive sizes, a known ggml type, rows a whole number of its blocks,
// offsets aligned, inside the data section and not overlapping.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::models {

// GGUF's metadata value types (the numbers in the file).
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9, U64 = 10, I64 = 11,
  F64 = 12,
};

// ggml's tensor types that GGUF files hold (the numbers in the file).
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12,
  Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
  IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34,
  TQ2_0 = 35, MXFP4 = 39,
};

// Elements per block and bytes per block of a ggml type (false: unknown).
bool ggmlBlock(uint32_t type, int64_t& blockElems, int64_t& blockBytes, std::string& name);

struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType elemType = GgufType::U8;  // arrays: the elements' type
  nlohmann::json value;              // numbers, bools, strings; arrays as JSON arrays
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;          // GgmlType
  std::string typeName;       // "Q4_K"
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the innermost (contiguous) one
  uint64_t offset = 0;        // absolute, in the file
  uint64_t nbytes = 0;
};

struct GgufFile {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t dataOffset = 0;  // where the data section starts
  std::map<std::string, GgufValue> meta;
  std::vector<GgufTensor> tensors;  // in file order

  // The value of `key`, or null.
  const GgufValue* find(const std::string& key) const;
  // The value of `key` of type `type`; throws naming the file and the key
  // when it is missing or of another type.
  const GgufValue& need(const std::string& key, GgufType type) const;
};

bool isIntegerType(GgufType t);
// Whether `path` names a GGUF file (by its .gguf extension: the model and
// tokenizer loaders pick their reader by it).
bool isGgufPath(const std::string& path);

constexpr int kMaxGgufArrayDepth = 4;

// Throws strata::Error naming `path` and the key or tensor.
GgufFile parseGguf(const uint8_t* data, size_t size, const std::string& path);
GgufFile readGguf(const std::string& path);

}  // namespace strata::models
