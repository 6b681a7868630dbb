#include "codegen/UArch.h"

namespace strata::tile {

// x86 AVX2 / AVX-512: L2 256 KiB per core on AVX2 client cores, 1 MiB on
// AVX-512 server cores such as the dev machine's Cascade Lake Xeon; 64-byte
// lines; a load block is 8 rows of 4 vector registers from one base pointer.
std::vector<UArch> cpuUArchs() {
  return {
      {"cpu-avx2", "x86-64 AVX2 + FMA: 8-wide f32 FMA register blocks", 8, 128, 1, 8, 1, 1, 32, 0, 0, 0, 256 << 10, 64, 0},
      {"cpu-avx512", "x86-64 AVX-512F: 16-wide f32 FMA register blocks", 8, 256, 1, 16, 1, 1, 64, 0, 0, 0, 1 << 20, 64, 0},
  };
}

}  // namespace strata::tile
