// WeightStore: turns GraphDef weight references into tensors backed by
// mmapped files. f32 weights at aligned offsets are zero-copy views; f16/bf16
// weights are widened to f32 once by load() (the reference kernels compute
// in f32).
#pragma once
#include <map>
#include <memory>
#include <string>

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
  ops::Tensor stored(const ops::WeightRef& w);

 private:
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;
};

}  // namespace strata::runtime
