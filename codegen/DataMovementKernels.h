// Emits the workgroup-level tile IR of the data-movement region kernels:
// row gathers (embedding lookup, the rows lm_head needs) and the paged KV
// cache write (no MLIR here; the kernels are tile IR text).
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

// out[t, :] = table[ids[t], :] for a [rows, F] table of `dtype` (f32, f16,
// bf16) into out of `outDtype` (empty: dtype, the rows copied bit for bit;
// else converted through f32: widened exactly, narrowed to nearest even).
// Signature (table: dtype; out: outDtype; ids: i64; tokens, rows, F:
// index), grid tokens x ceil(F / blockN). ids must lie in [0, rows) (the
// caller checks; a row outside the table reads as zeros).
//
// A block-quantized table (quantBlock > 0, dtype "i8"): llama.cpp's blocks
// in their GPU form (abi::gpuInt8Form, codegen/QuantText.h), rows of F / 2
// bytes with quantNibbles, else F; its scales (f16 with quantSuper =
// quantBlock, else f32) and, with quantOffsets, its offsets follow F in the
// signature, [rows, F / quantBlock] each. Each row is widened as the
// quantized GEMV widens it and stored in outDtype (f16, bf16, f32);
// blockN (values a program) is a whole number of blocks.
struct GatherRowsKernelSpec {
  std::string name = "gather_rows";
  int64_t blockN = 64;
  std::string dtype = "f32";
  std::string outDtype;  // empty: dtype
  int64_t quantBlock = 0, quantSuper = 0;
  bool quantNibbles = false, quantOffsets = false;
  const std::string& out() const { return outDtype.empty() ? dtype : outDtype; }
};
GatherRowsKernelSpec cpuGatherRowsSpec(const std::string& target);
std::string emitGatherRowsKernel(const GatherRowsKernelSpec& spec);

// ops::kvWrite: token t's k and v rows [kvHeads * headDim] go to cache slot
// slots[t] (block slot / blockSize, offset slot % blockSize) of the layer's
// cache [num_blocks, 2, kvHeads, blockSize, headDim]. Signature (cache, k, v:
// dtype; slots: i64; tokens, cache_rows: index) with cache_rows = num_blocks
// * 2 * kvHeads * blockSize; grid tokens x kvHeads. Slots must be >= 0.
struct KvWriteKernelSpec {
  std::string name = "kv_write";
  int64_t kvHeads = 0, headDim = 0, blockSize = 0;
  std::string dtype = "f32";  // storage type of the cache, k and v (f32, f16, bf16)
};
std::string emitKvWriteKernel(const KvWriteKernelSpec& spec);

}  // namespace strata::tile
