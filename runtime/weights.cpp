#include "runtime/weights.h"

#include <cstring>

namespace strata::runtime {

ops::Tensor WeightStore::load(const ops::WeightRef& w) {
  ops::Tensor t = stored(w);
  return t.dtype() == ops::DType::F16 || t.dtype() == ops::DType::BF16 ? t.toF32() : t;
}

ops::Tensor WeightStore::stored(const ops::WeightRef& w) {
  auto& f = files_[w.file];
  if (!f) f = MappedFile::open(w.file);
  uint64_t expect = (uint64_t)ops::numel(w.shape) * ops::dtypeSize(w.dtype);
  if (w.nbytes != expect)
    fail("weight '{}': {} bytes recorded but {} {} needs {}", w.name, w.nbytes, ops::dtypeName(w.dtype),
         ops::shapeStr(w.shape), expect);
  if (w.offset > f->size() || w.nbytes > f->size() - w.offset)
    fail("weight '{}': bytes [{}, {}) lie outside '{}' ({} bytes)", w.name, w.offset, w.offset + w.nbytes,
         w.file, f->size());
  const uint8_t* p = f->data() + w.offset;
  bool aligned = reinterpret_cast<uintptr_t>(p) % ops::dtypeSize(w.dtype) == 0;
  ops::Tensor view(w.dtype, w.shape, f, p);
  if (aligned) return view;
  // Unaligned (possible inside protobuf): copy into aligned storage.
  ops::Tensor copy(w.dtype, w.shape);
  std::memcpy(copy.mut<uint8_t>(), p, w.nbytes);
  return copy;
}

}  // namespace strata::runtime
