#include "codegen/UArch.h"

namespace strata::tile {

// NVIDIA PTX ISA 8.x: mma.sync.m16n8k16, ldmatrix .x4, wgmma.m64nNk16; L1
// lines of 128 bytes; 227 KiB of shared memory per block on sm_90.
std::vector<UArch> cudaUArchs() {
  return {
      {"sm_90", "NVIDIA Hopper: mma.sync m16n8k16, ldmatrix.x4, wgmma m64nNk16", 16, 32, 16, 8, 16, 32, 16, 64,
       256, 16, 0, 128, 227 << 10, true},
  };
}

}  // namespace strata::tile
