// Per-target hardware constants that codegen decides by: one row per target
// (DESIGN.md: "hardware constants in one uArch table per target"), each
// target's rows in its folder (codegen/targets/<target>/UArch.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tile {

struct UArch {
  std::string name;
  std::string description;
  // Largest 2-D block one load moves: rows x bytes per row (Xe 2D block
  // load: 32 rows of 64 bytes = 32x32 f16; ldmatrix.x4: 16x16 b16; CPU: 8
  // rows of 4 vector registers from one base pointer, its register pieces
  // extracted at static offsets).
  int64_t maxLoadRows, maxLoadRowBytes;
  // The intrinsic dot: m x n x k (f16/bf16 operands; f32 operands on the
  // CPU use k = 1 as well).
  int64_t dotM, dotN, dotK;
  // Lanes per warp (1 on the CPU: a warp is one register block run by a
  // single thread) and vector register width in bytes.
  int64_t lanes, vectorBytes;
  // Warpgroup MMA (sm_90 wgmma m64nNk16, N up to 256); 0 where absent.
  int64_t groupDotM, groupDotMaxN, groupDotK;
  // The warps of a warpgroup: each holds dotM of its groupDotM accumulator
  // rows (sm_90: 4 warps of 16 rows); 0 without warpgroup MMA.
  int64_t warpsPerGroup() const { return groupDotM ? groupDotM / dotM : 0; }
  // Per-core L2 cache bytes (CPU rows: what GEMM kernels size their K chunks
  // and row groups by; 0 where codegen does not use it).
  int64_t l2Bytes;
  // Cache line bytes (what one prefetch brings in).
  int64_t cacheLineBytes;
  // Workgroup-local memory (tile.alloc) a workgroup can have: sm_90 shared
  // memory per block (227 KiB, dynamic shared memory above 48 KiB), Xe SLM;
  // 0 where there is none (CPU).
  int64_t localMemoryBytes;
  // The lowering holds every tile of a kernel with dots as dot fragments
  // (sm_90: mma.m16n8k16's A, B and C): match-target-size splits tiles no
  // dot reads (stored-only ones: a quantized GEMM's widened weight blocks)
  // into the dot's m x n accumulator pieces rather than load blocks.
  bool dotFragmentTiles = false;
  // The row's reference part for roofline predictions (`strata bench
  // predict`): its name, peak dense bf16 / f16 matrix rate (TFLOP/s, f32
  // sums) and memory bandwidth (GB/s), from the vendor's data sheet; empty
  // and 0 where none is modeled.
  std::string rooflinePart;
  double peakMatrixTflops = 0, memoryGBps = 0;
};

// The table row for a target name; throws strata::Error naming the known
// targets when unknown.
const UArch& uarchFor(std::string_view target);
// Every target's rows, in the order below.
const std::vector<UArch>& allUArchs();
// Each target's rows (codegen/targets/<target>/UArch.cpp).
std::vector<UArch> cpuUArchs();
std::vector<UArch> cudaUArchs();
std::vector<UArch> xeUArchs();

}  // namespace strata::tile
