#include "codegen/UArch.h"

namespace strata::tile {

// Intel Xe2 / PVC ISA: DPAS systolic depth 8, execution size 16, 2D block
// loads of up to 32 rows x 64 bytes; 64-byte lines; 64 KiB SLM per
// workgroup. (match-target-size's lit tests use it; the Xe lowering is the
// next target.)
std::vector<UArch> xeUArchs() {
  return {
      {"xe", "Intel Xe2/PVC: DPAS 8x16x16, 2D block load 32x64 bytes, subgroup 16", 32, 64, 8, 16, 16, 16, 64, 0,
       0, 0, 0, 64, 64 << 10},
  };
}

}  // namespace strata::tile
