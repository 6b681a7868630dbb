#include "codegen/UArch.h"

#include "ops/error.h"

namespace strata::tile {

const std::vector<UArch>& allUArchs() {
  // Sources: Intel Xe2/PVC ISA (DPAS systolic depth 8, execution size 16,
  // 2D block loads of up to 32 rows x 64 bytes); NVIDIA PTX ISA 8.x
  // (mma.sync.m16n8k16, ldmatrix .x4, wgmma.m64nNk16); x86 AVX2/AVX-512
  // (L2: 256 KiB per core on AVX2 client cores, 1 MiB on AVX-512 server
  // cores such as the dev machine's Cascade Lake Xeon; 64-byte lines). L1
  // lines: 128 bytes on Hopper, 64 on Xe. Local memory: 227 KiB of shared
  // memory per block on sm_90, 64 KiB SLM per workgroup on Xe.
  static const std::vector<UArch> table = {
      {"cpu-avx2", "x86-64 AVX2 + FMA: 8-wide f32 FMA register blocks", 8, 128, 1, 8, 1, 1, 32, 0, 0, 0, 256 << 10, 64, 0},
      {"cpu-avx512", "x86-64 AVX-512F: 16-wide f32 FMA register blocks", 8, 256, 1, 16, 1, 1, 64, 0, 0, 0, 1 << 20, 64, 0},
      {"sm_90", "NVIDIA Hopper: mma.sync m16n8k16, ldmatrix.x4, wgmma m64nNk16", 16, 32, 16, 8, 16, 32, 16, 64,
       256, 16, 0, 128, 227 << 10},
      {"xe", "Intel Xe2/PVC: DPAS 8x16x16, 2D block load 32x64 bytes, subgroup 16", 32, 64, 8, 16, 16, 16, 64, 0,
       0, 0, 0, 64, 64 << 10},
  };
  return table;
}

const UArch& uarchFor(std::string_view target) {
  std::string known;
  for (const UArch& u : allUArchs()) {
    if (u.name == target) return u;
    known += (known.empty() ? "" : ", ") + u.name;
  }
  fail("unknown target '{}' (known: {})", target, known);
}

}  // namespace strata::tile
