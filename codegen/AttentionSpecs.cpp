// The attention kernels' blockings each target picks, and the tuning
// syntax that replaces them (codegen/AttentionKernel.h).
#include "codegen/AttentionKernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

AttentionKernelSpec cpuAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, float scale, int64_t blockN,
                                     int64_t queryRows, int64_t lanes) {
  AttentionKernelSpec s;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.scale = scale;
  s.blockN = blockN;
  s.blockM = queryRows <= 1 ? 1 : 4;
  s.name = queryRows <= 1 ? "attention_decode" : "attention";
  s.headPiece = lanes > 0 && headDim % lanes == 0 ? lanes : 0;
  return s;
}

AttentionKernelSpec cpuGroupedDecodeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, float scale, int64_t blockN,
                                         int64_t lanes) {
  AttentionKernelSpec s = cpuAttentionSpec(heads, kvHeads, headDim, scale, blockN, 1, lanes);
  s.groupHeads = true;
  s.blockM = kvHeads > 0 ? heads / kvHeads : 1;
  s.name = "attention_decode_grouped";
  return s;
}

namespace {

// What every GPU attention kernel of the set shares: the heads, scale 1 /
// sqrt(head dim), the storage type.
AttentionKernelSpec gpuAttentionShape(int64_t heads, int64_t kvHeads, int64_t headDim, bool causal,
                                      const std::string& dtype) {
  AttentionKernelSpec s;
  s.causal = causal;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.scale = 1.f / std::sqrt(float(headDim));
  s.dtype = dtype;
  return s;
}

}  // namespace

AttentionKernelSpec cudaAttentionSpec(int64_t heads, int64_t kvHeads, int64_t headDim, bool causal,
                                      const std::string& dtype, bool fewPrograms) {
  AttentionKernelSpec s = gpuAttentionShape(heads, kvHeads, headDim, causal, dtype);
  s.paged = false;
  s.name = fmt::format("attention_{}_h{}_kv{}_d{}_{}", dtype, heads, kvHeads, headDim, causal ? "causal" : "full");
  if (headDim % 64) {
    // Head dims that are not whole 128-byte panels (the tiny test models'
    // 16) keep the mma.sync form: 128 rows on 4 warps, Q in registers.
    s.numWarps = 4;
    s.blockM = 128;
    s.blockN = 64;
    s.stages = 2;
    return s;
  }
  // Warpgroup dots (docs/cuda.md of bd79745; H100, 2026-11-22): keys in steps of 64,
  // one block copied ahead; Q, K and V in swizzled panels of 64 head-dim
  // columns. 128 query rows on 8 warps (two warpgroups of 64 rows), two
  // blocks per SM: at head dim 128 ptxas then fits 128 registers (161
  // uncapped; 8-40 bytes of spills) and one block's loads overlap the
  // other's dots: 1.07-1.19x the TFLOP/s of one block per SM at 2k-16k
  // tokens. (The mma.sync form before it: 128 rows on 4 warps, Q re-read
  // every step at head dim 128.)
  s.numWarps = 8;
  s.blockM = 128;
  s.blockN = 64;
  s.stages = 2;
  s.qInRegisters = false;
  s.groupDots = true;
  s.tma = true;
  s.minBlocksPerSM = 2;
  // 64 rows on one warpgroup: for grids of few programs (fewPrograms, the
  // "_m64" variants: twice the programs of 128 rows), and always at head
  // dim 64. With the causal mask the shorter diagonal and the finer blocks
  // won at every length on the H100 (1.05-1.16x 128 rows up to 4k tokens,
  // 2026-11-22); without it 64 rows won up to 4k tokens and tied from 8k
  // (16 x 1024: 353-356 against 298-299 TFLOP/s; 2026-11-24; docs/cuda.md of bd79745
  // "Head dim 64 on 64 rows"). Blocks per SM: what shared memory holds,
  // four at head dim 64 (40 KiB a block: the same 128 registers a thread),
  // two at 128 (80 KiB: asking four capped the registers at 128 and
  // spilled, for 0.84-0.97x the TFLOP/s).
  if (fewPrograms || headDim == 64) {
    s.numWarps = 4;
    s.blockM = 64;
    s.minBlocksPerSM = headDim == 64 ? 4 : 2;
  }
  if (fewPrograms) s.name += "_m64";
  return s;
}

bool hasFewProgramsVariant(const AttentionKernelSpec& main) { return main.groupDots && main.blockM == 128; }

void applyAttentionBlocking(AttentionKernelSpec& s, const std::string& text, const std::string& what) {
  std::string t = text;
  // An optional ":B" asks room for B blocks per SM (minBlocksPerSM).
  long blocksPerSM = -1;
  if (size_t colon = t.find(':'); colon != std::string::npos) {
    int usedB = 0;
    const std::string b = t.substr(colon + 1);
    if (std::sscanf(b.c_str(), "%ld%n", &blocksPerSM, &usedB) != 1 || usedB != (int)b.size() || blocksPerSM < 0)
      fail("{} '{}': expected a block count of 0 or more after ':', e.g. 128x64x8@2g:3", what, text);
    t.resize(colon);
  }
  bool reloadQ = !t.empty() && t.back() == 'q';
  bool group = !t.empty() && t.back() == 'g';
  if (reloadQ || group) t.pop_back();
  long m = 0, n = 0, w = 0, st = 0;
  int used = 0;
  if (std::sscanf(t.c_str(), "%ldx%ldx%ld@%ld%n", &m, &n, &w, &st, &used) != 4 || used != (int)t.size() || m <= 0 ||
      n <= 0 || w <= 0 || st < 2)
    fail("{} '{}': expected MxNxW@S (block M query rows, N keys per step, W warps, S >= 2 buffers) with an optional "
         "trailing q (Q read from local memory each step) or g (warpgroup dots), e.g. 64x64x4@2, 128x64x4@2q or "
         "128x64x8@2g, and optionally :B, room for B blocks per SM",
         what, text);
  s.blockM = m, s.blockN = n, s.numWarps = w, s.stages = st;
  if (blocksPerSM >= 0) s.minBlocksPerSM = blocksPerSM;
  s.qInRegisters = !reloadQ && !group;
  s.groupDots = group;
  s.tma = group && !s.paged;
}

AttentionKernelSpec cudaPagedDecodeSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                        const std::string& dtype) {
  AttentionKernelSpec s = gpuAttentionShape(heads, kvHeads, headDim, true, dtype);
  s.paged = true;
  // H200 sweep (docs/cuda.md of bd79745): 32 keys per step in 3 buffers (55 KiB of
  // shared memory, 4 programs per SM) streamed 0.3-5 % more than 64 keys in
  // 3 or 2 buffers or 32 in 4, and far more than 128 (255 registers).
  s.numWarps = 1;
  s.blockM = 16;
  s.blockN = std::max<int64_t>(32, pageSize);
  s.pageSize = pageSize;
  s.stages = 3;
  s.decode = true;
  s.name = fmt::format("paged_decode_{}_h{}_kv{}_d{}_p{}", dtype, heads, kvHeads, headDim, pageSize);
  return s;
}

AttentionKernelSpec cudaPagedPrefillSpec(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t pageSize,
                                         const std::string& dtype, bool fewPrograms) {
  AttentionKernelSpec s = cudaAttentionSpec(heads, kvHeads, headDim, true, dtype, fewPrograms);
  s.paged = true;
  s.tma = false;  // pages are copied one by one (cp.async)
  s.pageSize = pageSize;
  s.blockN = std::max(s.blockN, pageSize);
  // The contiguous form's blocking, its K / V panels copied page by page.
  // The 64-row variant serves short prompts only: on the H100 (2026-11-22)
  // 64 rows took 0.67-0.84x the TFLOP/s of 128 from 2k tokens (each
  // program copies every page it reads, so halving the rows doubles the
  // page copies per FLOP), but at 512 tokens, where 128 rows leave 128
  // programs for 132 SMs, 1.3x (2026-11-24).
  s.name = fmt::format("paged_prefill_{}_h{}_kv{}_d{}_p{}{}", dtype, heads, kvHeads, headDim, pageSize,
                       fewPrograms ? "_m64" : "");
  return s;
}


}  // namespace strata::tile
