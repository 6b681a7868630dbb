// `strata bench predict --target xe:pvc|xe:bmg|xe:dg2 MODEL`: a roofline
// model of a decode step on an Intel GPU strata has no access to. For each
// kernel of the model's region graph (as `strata compile --target xe`
// forms it, 16-bit storage): the bytes it reads and writes, its DPAS
// operations (the part's dot shape, rows padded to its M), and its predicted
// time, max(bytes / memory bandwidth, DPAS flops / peak matrix rate), with
// the part's figures from codegen's uArch table (the vendors' data sheets);
// then the decode step and tokens/s at each batch. Launch overhead, caches
// and occupancy are outside the model: it says how fast the kernels could
// be, not how fast they are (docs/codegen.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::tools {

struct BenchPredictOpts {
  std::string model;                   // HF folder, .onnx or .gguf (shapes only: no weight is read)
  std::string target = "xe:pvc";       // xe:pvc, xe:bmg, xe:dg2
  std::vector<int64_t> batches{1, 8, 32};
  int64_t context = 1024;              // tokens in each sequence's KV cache
  std::string jsonPath;
};

int benchPredict(const BenchPredictOpts& o);

}  // namespace strata::tools
