// Emits the workgroup-level tile IR of the row-wise region kernels: RMSNorm,
// LayerNorm and rotate-half RoPE (no MLIR here; the kernels are tile IR text).
#pragma once

#include <cstdint>
#include <string>

namespace strata::tile {

// y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w, one row per program
// (the same arithmetic order as ops::rmsNorm). Signature (x, w, y: f32
// buffers; rows, hidden: index; eps: f32), grid = rows. `blockN` columns are
// streamed per step, twice (sum of squares, then scale), by `numWarps` warps
// (the row's columns spread over them; their partial sums meet in one
// cross-warp reduce).
// Columns a row-wise kernel (RMSNorm, fused elementwise) streams per step
// on a CPU target: four vector registers.
int64_t cpuRowBlockN(const std::string& target);

// `dtype` is the storage type of x, w and y (f32, bf16 or f16); the
// arithmetic is f32 either way.
struct RmsNormKernelSpec {
  std::string name = "rms_norm";
  int64_t blockN = 64;
  std::string dtype = "f32";
  int64_t numWarps = 1;
  // Contiguous elements a lane holds (tile.lane_vector; 0: none). With V >
  // 1 and N a multiple of V, the row's whole blocks load and store as
  // V-element vectors (in_bounds, contiguous) and only the tail is masked:
  // x, w and y must then be aligned to V elements (the runtime checks).
  int64_t laneVector = 0;
};
RmsNormKernelSpec cpuRmsNormSpec(const std::string& target);
// Lines defining %ib: 1 / sqrt(%{meanSq} + %eps) (tensor<1xf32> %meanSq,
// f32 %eps) broadcast to tensor<{shape}xf32> (shape "RxC"): the norms'
// scale, the same arithmetic in every kernel that normalizes a row.
std::string invStdText(const std::string& meanSq, const std::string& shape);
std::string emitRmsNormKernel(const RmsNormKernelSpec& spec);

// LayerNorm over the last dim (region.layernorm, ops::layerNorm with axis
// -1): y[r, :] = (x[r, :] - mean) * rsqrt(var + eps) * w + b, one row per
// program in three passes over the row (sum; sum of squared deviations of
// the row's columns, the masked tail left out by column index; the output),
// so the variance is the two-pass one the reference computes. Signature (x, w, b, y: dtype; rows,
// hidden: index; eps: f32), grid = rows. The spec's blockN, dtype and
// numWarps are RMSNorm's; no lane vectors.
std::string emitLayerNormKernel(const RmsNormKernelSpec& spec);

// Rotate-half RoPE on a token-major x [T, heads * headDim] (ops::ropeTokens):
// for i < headDim / 2, y_i = x_i cos - x_{i+half} sin and y_{i+half} =
// x_{i+half} cos + x_i sin, with cos/sin read from [P, half] tables
// (ops::ropeTables) at the token's position (a position past the table
// reads its last row). In place when y == x. Signature (x, y: dtype; cos,
// sin: f32; positions: i64; tokens, table_rows: index), grid tokens x
// (heads / headsPerProgram): a program rotates `headsPerProgram` heads of
// one token as [headsPerProgram, half] tiles (x viewed as [T heads,
// headDim]), so a GPU program's lanes hold `laneVector` contiguous elements
// each (tile.lane_vector; 0: none). `dtype` is the storage type of x and y
// (f32, bf16 or f16); the arithmetic is f32.
//
// With `kvHeads` > 0, q and k of one projection in one launch, and one
// more argument, kAt (index, >= T * heads): x (and y) hold the T tokens'
// `heads` heads ([T, heads * headDim], q) from row 0 and their `kvHeads`
// heads ([T, kvHeads * headDim], k) from row kAt of [rows, headDim]; the
// grid is tokens x ((heads + kvHeads) / headsPerProgram), and
// headsPerProgram divides both counts, so a program's heads are all q or
// all k of one token. At one token with kAt = heads this is the
// (heads + kvHeads)-head kernel on the row q | k.
//
// With 0 < `rotaryDim` < headDim (partial rotary: Phi-3, GPT-NeoX), only
// each head's first rotaryDim dims rotate (half = rotaryDim / 2, tables [P,
// half]) and the rest are copied from x to y.
//
// With `wholeHeads` (full rotary only) a program's tiles are whole heads
// [G, headDim] rather than halves [G, headDim / 2]: column j's partner
// (j + half, negated, in the first half; j - half in the second) comes from
// loads of the same rows at column offsets +half and -half, and the tables'
// row is read at both offsets and picked per column. For targets whose
// tiles are whole multiples of 16 columns where a half head is not (xe at
// head dim 16 or 48); three loads of x instead of two.
struct RopeKernelSpec {
  std::string name = "rope";
  int64_t heads = 0, headDim = 0;
  std::string dtype = "f32";
  int64_t headsPerProgram = 1, laneVector = 0;
  int64_t kvHeads = 0;
  int64_t rotaryDim = 0;  // 0: headDim
  bool wholeHeads = false;
};
std::string emitRopeKernel(const RopeKernelSpec& spec);

// region.rope_kv_write in one launch: q and k rotated as emitRopeKernel
// rotates them (full rotary only), rotated k and v written into the paged
// cache as emitKvWriteKernel writes them; rotated k is never stored
// elsewhere. Signature (q, k, v, y, cache: dtype; cos, sin: f32;
// positions, slots: i64; tokens, table_rows, cache_blocks: index), q [T,
// heads * headDim], k and v [T, kvHeads * headDim], y q's shape, cache
// [cache_blocks, 2, kvHeads, pageSize, headDim]; grid tokens x ((heads +
// kvHeads) / headsPerProgram), headsPerProgram dividing both: a program
// rotates q heads into y, or rotates k heads and writes them and the same
// heads of v at the token's slot. `wholeHeads` as for RopeKernelSpec.
struct RopeKvWriteKernelSpec {
  std::string name = "rope_kv_write";
  int64_t heads = 0, kvHeads = 0, headDim = 0, pageSize = 0;
  std::string dtype = "bf16";
  int64_t headsPerProgram = 1, laneVector = 0;
  bool wholeHeads = false;
};
std::string emitRopeKvWriteKernel(const RopeKvWriteKernelSpec& spec);

}  // namespace strata::tile
