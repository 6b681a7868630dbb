#include "runtime/weights.h"

#include <cstring>
#include <memory>
#include <vector>

#include "ops/quant.h"
#include "runtime/parallel.h"

namespace strata::runtime {

namespace {

// w's rows (at p) copied to `out` in rotate-half order: head h's stored row
// h * D + 2j + t is its rotate-half row h * D + t * D / 2 + j (the inverse
// of llama.cpp's convert_hf_to_gguf permute). Rows are moved whole, so this
// holds for any storage type, quantized blocks included.
void ropeRowsInHalfOrder(const ops::WeightRef& w, const uint8_t* p, uint8_t* o) {
  const int64_t rows = w.shape.empty() ? 0 : w.shape[0], heads = w.interleavedRopeHeads;
  if (heads <= 0 || rows % heads || (rows / heads) % 2)
    fail("weight '{}': interleaved_rope_heads {} does not split its {} rows into heads of an even size", w.name, heads,
         rows);
  const int64_t D = rows / heads, half = D / 2;
  const size_t rowBytes = w.nbytes / size_t(rows);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t t = 0; t < 2; ++t)
        std::memcpy(o + size_t(h * D + t * half + j) * rowBytes, p + size_t(h * D + 2 * j + t) * rowBytes, rowBytes);
}

}  // namespace

ops::Tensor WeightStore::load(const ops::WeightRef& w) {
  if (!w.quant.empty()) {
    const ops::QuantFormat* f = ops::quantFormat(w.quant);
    const uint8_t* p = bytes(w);
    if (!w.interleavedRopeHeads) return ops::dequantize(*f, p, w.shape);
    std::vector<uint8_t> rows(w.nbytes);
    ropeRowsInHalfOrder(w, p, rows.data());
    return ops::dequantize(*f, rows.data(), w.shape);
  }
  ops::Tensor t = stored(w);
  return t.dtype() == ops::DType::F16 || t.dtype() == ops::DType::BF16 ? t.toF32() : t;
}

const uint8_t* WeightStore::bytes(const ops::WeightRef& w) {
  auto& f = files_[w.file];
  if (!f) f = MappedFile::open(w.file);
  uint64_t expect = (uint64_t)ops::numel(w.shape) * ops::dtypeSize(w.dtype);
  if (!w.quant.empty()) {
    const ops::QuantFormat* q = ops::quantFormat(w.quant);
    if (!q) fail("weight '{}': quant '{}' is not a known block format", w.name, w.quant);
    auto bytes = ops::quantizedBytes(*q, w.shape);
    if (w.dtype != ops::DType::F32 || !bytes)
      fail("weight '{}': {} needs f32 values in rows of whole blocks of {}, got {} {}", w.name, w.quant,
           q->blockElems, ops::dtypeName(w.dtype), ops::shapeStr(w.shape));
    expect = uint64_t(*bytes);
  }
  if (w.nbytes != expect)
    fail("weight '{}': {} bytes recorded but {} {} needs {}", w.name, w.nbytes,
         w.quant.empty() ? ops::dtypeName(w.dtype) : w.quant, ops::shapeStr(w.shape), expect);
  if (w.offset > f->size() || w.nbytes > f->size() - w.offset)
    fail("weight '{}': bytes [{}, {}) lie outside '{}' ({} bytes)", w.name, w.offset, w.offset + w.nbytes,
         w.file, f->size());
  return f->data() + w.offset;
}

const uint8_t* WeightStore::quantRows(const ops::WeightRef& w) {
  if (w.quant.empty()) fail("weight '{}' is not quantized", w.name);
  const uint8_t* p = bytes(w);
  if (!w.interleavedRopeHeads) return p;
  std::vector<uint8_t>& rows = reordered_.emplace_back(w.nbytes);
  ropeRowsInHalfOrder(w, p, rows.data());
  return rows.data();
}

ops::Tensor WeightStore::stored(const ops::WeightRef& w) {
  if (!w.quant.empty())
    fail("weight '{}' is {}: this backend's kernels do not read quantized weights yet (--backend reference does)",
         w.name, w.quant);
  const uint8_t* p = bytes(w);
  if (w.interleavedRopeHeads) {
    ops::Tensor out(w.dtype, w.shape);
    ropeRowsInHalfOrder(w, p, out.mut<uint8_t>());
    return out;
  }
  auto& f = files_[w.file];
  bool aligned = reinterpret_cast<uintptr_t>(p) % ops::dtypeSize(w.dtype) == 0;
  ops::Tensor view(w.dtype, w.shape, f, p);
  if (aligned) return view;
  // Unaligned (possible inside protobuf): copy into aligned storage.
  ops::Tensor copy(w.dtype, w.shape);
  std::memcpy(copy.mut<uint8_t>(), p, w.nbytes);
  return copy;
}

ops::Tensor castStored(const ops::Tensor& x, ops::DType t) {
  using ops::DType;
  const DType from = x.dtype();
  const bool floats = ops::isFloat(from) && ops::isFloat(t);
  // Below a few million elements one thread is as fast as starting more.
  if (from == t || !floats || x.numel() < (int64_t(1) << 22)) return x.cast(t);
  // Not zero-filled (16 GB for Llama-3-8B on one thread): every element is
  // written below, on the threads, which also fault the pages in.
  const size_t bytes = size_t(x.numel()) * ops::dtypeSize(t);
  std::shared_ptr<uint8_t[]> buf(new uint8_t[bytes]);
  ops::Tensor out(t, x.shape(), std::shared_ptr<const void>(buf, buf.get()), buf.get());
  auto widen = [&](int64_t i) {
    switch (from) {
      case DType::F16: return ops::halfToFloat(x.data<uint16_t>()[i]);
      case DType::BF16: return ops::bf16ToFloat(x.data<uint16_t>()[i]);
      default: return x.data<float>()[i];
    }
  };
  parallelRanges(x.numel(), [&](int64_t lo, int64_t hi) {
    if (t == DType::F32) {
      for (int64_t i = lo; i < hi; ++i) out.mut<float>()[i] = widen(i);
    } else {
      uint16_t* o = out.mut<uint16_t>();
      const bool half = t == DType::F16;
      for (int64_t i = lo; i < hi; ++i) o[i] = half ? ops::floatToHalf(widen(i)) : ops::floatToBf16(widen(i));
    }
  });
  return out;
}

}  // namespace strata::runtime
