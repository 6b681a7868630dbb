// The text pieces of the attention emitters (codegen/AttentionKernel.h has
// the contract): the forms' predicates, the head-dim panels, and one key
// block's step and loop, shared by AttentionKernel.cpp and
// AttentionSteps.cpp. Not a public header.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/AttentionKernel.h"
#include "codegen/StorageText.h"

namespace strata::tile::attention {

// The GPU form (see AttentionKernelSpec::stages): operands staged through
// workgroup-local memory, dots on the storage type.
inline bool gpuForm(const AttentionKernelSpec& s) { return s.stages > 0; }
// Dots on the storage type (the staged GPU form, or the unstaged one:
// AttentionKernelSpec::storageDots), else f32 dots on widened tiles.
inline bool dotsOnStorage(const AttentionKernelSpec& s) { return gpuForm(s) || s.storageDots; }
// Its paged forms copy the cache page by page (AttentionKernelSpec::pageSize).
inline bool gpuPaged(const AttentionKernelSpec& s) { return gpuForm(s) && s.paged; }
// Decode: one new token per sequence, a KV head's query heads packed into
// the rows (AttentionKernelSpec::decode).
inline bool gpuDecode(const AttentionKernelSpec& s) { return gpuPaged(s) && s.decode; }
// The decode form's single token sees every cached key: only the key
// boundary is masked.
inline bool causalMask(const AttentionKernelSpec& s) { return s.causal && !gpuDecode(s); }

// The CPU paged form that walks the head dim in pieces
// (AttentionKernelSpec::headPiece): its accumulator lives in the output
// rows, so its key loops carry only m and l.
inline bool pieceForm(const AttentionKernelSpec& s) {
  return !gpuForm(s) && s.paged && s.dtype == "f32" && s.headPiece > 0 && s.headDim % s.headPiece == 0;
}

// The warpgroup-dot form holds the head dim in panels of 64 columns (one
// 128-byte swizzled row each): its Q, K and V buffers and its accumulators
// come one per panel. Other forms have one panel, the whole head dim, and
// no suffix on those names.
inline int64_t panels(const AttentionKernelSpec& s) { return pieceForm(s) ? 0 : s.groupDots ? s.headDim / 64 : 1; }
inline int64_t panelWidth(const AttentionKernelSpec& s) { return pieceForm(s) ? s.headPiece : s.headDim / panels(s); }

// The piece form's [blockM, headPiece] block pointer `name` (an SSA name)
// at head-dim column `col` (an index value) of the program's rows: of q or
// o ("%q" / "%o", in the form's token layout) or of the split partials
// ("%po", f32 [T, heads kvSplits headDim], from %poD: the prologue's).
std::string pieceRows(const AttentionKernelSpec& s, const std::string& buf, const std::string& name,
                      const std::string& col);
inline std::string panel(const AttentionKernelSpec& s, int64_t i) { return panels(s) > 1 ? std::to_string(i) : ""; }

// Panel i's first head-dim column (an index constant's name).
inline std::string panelOffset(int64_t i) { return i ? fmt::format("%cPo{}", i) : "%c0"; }

// The loop's carried values: the accumulator panels, then m and l.
inline std::string carriedTypes(const AttentionKernelSpec& s) {
  std::string t;
  for (int64_t i = 0; i < panels(s); ++i) t += fmt::format("tensor<{}x{}xf32>, ", s.blockM, panelWidth(s));
  return t + fmt::format("tensor<{0}xf32>, tensor<{0}xf32>", s.blockM);
}

// Rows that may see no key in a program (m stays -inf there): with a key
// mask, or when the keys are split (the GPU decode form always splits) and
// a row's range ends before this program's share. Such kernels guard exp2
// against -inf - -inf.
inline bool rowsMaySeeNothing(const AttentionKernelSpec& s) { return s.keyMask || s.kvSplits > 1 || gpuDecode(s); }

// The CPU form loads K^T and V through %kp / %vp (built by `kvRows`);
// the GPU form reads them from local stage %st (see loop()). `blk`: the
// GPU paged forms' physical block of the page at key j, when the caller
// looked it up already ("": kvRows looks it up).
using KvRows = std::function<std::string(const std::string& prefix, const std::string& j, const std::string& blk)>;

// The CPU paged form's cache rows of the key block at key `j` (names
// prefixed `p`): %{p}blk, the physical block from the table, then
// %{p}krow / %{p}vrow, its K and V rows of (block, KV head %kh) in the
// [blocks, 2, KV heads, N, D] cache.
std::string pagedRows(const std::string& p, const std::string& j);

// The GPU paged forms' table lookup of the page at key `j`: %{p}blk, the
// physical block (the page index clamped to the sequence's last page, so
// any j reads inside the table row).
std::string pageLookup(const std::string& p, const std::string& j);

// The GPU form's Q fragments, read from local memory through %qu: once
// before the key loops, or in every step when they do not stay in registers.
std::string qFragments(const AttentionKernelSpec& s);

// Text of one key-block step: K^T and V, S, optional masks, online
// softmax, O += P V.
std::string stepBody(const AttentionKernelSpec& s, bool masked, const std::string& moreYields,
                     const std::string& moreTypes);

// K^T [D, N] and V [N, D] block pointers of the key block at %j, for rows
// %krow.. / %vrow.. of a [rows, D] view, limited to %valid keys (so keys past
// the context read as zero: P V never touches stale cache rows).
// `clamp` (a value name or "") caps the row ends at the buffer's rows.
// Names carry the prefix `p` (the GPU form builds these for the copies of
// two different blocks), the block starts at key `j`.
// `keys` (a constant's name, its value `n`) is the block's key count: the
// step's (%cN), or the GPU decode form's page.
std::string kvPointers(const AttentionKernelSpec& s, const char* kBuf, const char* vBuf, const char* clamp,
                       const std::string& p, const std::string& j, const char* keys = "%cN", int64_t n = 0);

// The GPU form's K / V copies run over one key range for both loops of a
// program (mask-free, then masked): [from, to), block i of it in stage i
// mod stages. `previous`: the result name of the loop this one continues
// ("" for the first), whose copies ahead already cover this loop's first
// blocks, so the pipeline does not drain between the loops (a causal
// program would otherwise wait out one copy round trip at its diagonal).
struct KeyPipeline {
  const char* from;
  const char* to;
  const char* previous = "";
};

// A loop over key blocks [from, to) carrying (acc, m, l) from `inits`.
// The GPU form pipelines the K / V copies like the staged GEMM: the first
// loop of the pipeline, after a barrier (earlier warps are done with the
// buffers), copies stages - 1 blocks ahead; step i waits until block i has
// landed (stages - 2 groups left in flight), a barrier makes it visible and
// frees the buffer step i - 1 read, which receives block i + stages - 1
// (up to the pipeline's end, past this loop's).
// `inits`: the accumulator panels', m's and l's (carriedTypes).
// `afterCopies`: text between the copies ahead and the loop (the decode
// form's wait for Q, whose copy went out before them).
std::string loop(const AttentionKernelSpec& s, const KvRows& kvRows, bool masked, const char* from, const char* to,
                 const KeyPipeline& pipe, const std::vector<std::string>& inits, const char* result,
                 const std::string& afterCopies = "");

}  // namespace strata::tile::attention
