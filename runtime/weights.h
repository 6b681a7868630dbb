// WeightStore: turns GraphDef weight references into tensors backed by
// mmapped files. Weights at aligned offsets are zero-copy views; f16/bf16
// weights are widened to f32 once by load() (the reference kernels compute
// in f32); rows stored in llama.cpp's interleaved RoPE order
// (WeightRef::interleavedRopeHeads) are copied into rotate-half order.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/graph_def.h"
#include "runtime/mapped_file.h"

namespace strata::runtime {

class WeightStore {
 public:
  // Validates the reference against the file (exists, in range, size matches
  // dtype x shape) and returns the tensor. Throws strata::Error otherwise.
  ops::Tensor load(const ops::WeightRef& w);
  // The same checks; the tensor in its stored type (f16 / bf16 not
  // widened: what a GPU backend uploads), a zero-copy view when aligned.
  // Quantized weights (WeightRef::quant) are an error naming the weight:
  // load() dequantizes them (ops/quant.h; what the reference backend runs).
  ops::Tensor stored(const ops::WeightRef& w);
  // A quantized weight's blocks as stored (rows of whole blocks; rows in
  // llama.cpp's interleaved RoPE order moved back, into memory the store
  // keeps), after the same checks: what the CPU kernels' panels are packed
  // from. Valid as long as the store.
  const uint8_t* quantRows(const ops::WeightRef& w);

 private:
  // The weight's bytes in its mapped file, after the size and bounds checks.
  const uint8_t* bytes(const ops::WeightRef& w);
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;
  std::vector<std::vector<uint8_t>> reordered_;  // quantRows' copies
};

// A float tensor in the storage type `t` (f32, f16 or bf16), rounded as
// ops::Tensor::cast rounds, on up to 16 threads without an f32 copy
// between: a GPU model's weights in a type other than the checkpoint's
// (Llama-3-8B bf16 -> f16 took 68 s on one core through Tensor::cast).
// Other types go through Tensor::cast.
ops::Tensor castStored(const ops::Tensor& x, ops::DType t);

}  // namespace strata::runtime
