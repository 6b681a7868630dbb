// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}}, then the data. Parsed
// into weight references (absolute file offsets); the data is not read.
#pragma once
#include <map>
#include <string>

#include "ops/graph_def.h"

namespace strata::models {

// The format's bound on the header's length (as its reference reader).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Checks the format's rules (huggingface/safetensors' README): the header
// length within the file and the bound above; the header a JSON object
// (trailing space padding only), keys unique, `__metadata__` an object of
// strings; every tensor {dtype, shape, data_offsets} with integer shape
// and offsets, its byte size that of its shape and dtype; the tensors
// tiling the data section exactly (no overlap, no hole, nothing after).
// Throws strata::Error naming the file and the tensor or field.
std::map<std::string, ops::WeightRef> readSafetensorsHeader(const std::string& path);
// The same over bytes in memory (`fileSize` = size of the whole file).
std::map<std::string, ops::WeightRef> parseSafetensorsHeader(const uint8_t* data, size_t size, const std::string& path);

}  // namespace strata::models
