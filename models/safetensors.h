// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}}, then the data. Parsed
// into weight references (absolute file offsets); the data is not read.
#pragma once
#include <map>
#include <string>

#include "ops/graph_def.h"

namespace strata::models {

// Throws strata::Error naming the file and tensor on a bad header, unknown
// dtype, size/shape mismatch or offsets outside the file.
std::map<std::string, ops::WeightRef> readSafetensorsHeader(const std::string& path);
// The same over bytes in memory (`fileSize` = size of the whole file).
std::map<std::string, ops::WeightRef> parseSafetensorsHeader(const uint8_t* data, size_t size, const std::string& path);

}  // namespace strata::models
