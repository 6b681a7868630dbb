#include "codegen/UArch.h"

namespace strata::tile {

// Intel Xe GPUs, one row per ISA family (`--target xe:pvc|xe:bmg|xe:dg2`).
// Instruction shapes: the OpenCL extensions cl_intel_subgroup_matrix_multiply_
// accumulate (DPAS: 8 rows, execution size 16 on Xe-HPC / Xe2 and 8 on
// Xe-HPG, K 16 for bf16 / f16 into f32) and cl_intel_subgroup_2d_block_io
// (2D block loads of up to 32 rows x 64 bytes; Xe-HPG has none, only
// sub-group block reads of one contiguous run), as MLIR's XeGPU uArch
// tables (mlir/Dialect/XeGPU/uArch/IntelGpuXe2.h) have them for PVC and BMG.
// Register (GRF) width: 64 bytes on Xe-HPC / Xe2, 32 on Xe-HPG. Shared local
// memory a work-group may use: 128 KiB on PVC; 64 KiB on BMG and DG2, the
// limit every Level Zero driver for them reports at least (Level Zero
// discovery prints each GPU's maxSharedLocalMemory: `strata run --backend
// xe`). convert-tile-to-xevm lowers the sub-group-16 rows (pvc, bmg);
// dg2's 8-wide form is used by match-target-size's lit tests only.
std::vector<UArch> xeUArchs() {
  return {
      {"xe:pvc", "Intel Data Center GPU Max (PVC, Xe-HPC): DPAS 8x16x16, 2D block load 32x64 bytes, sub-group 16", 32,
       64, 8, 16, 16, 16, 64, 0, 0, 0, 0, 64, 128 << 10},
      {"xe:bmg", "Intel Arc B-series (BMG, Xe2): DPAS 8x16x16, 2D block load 32x64 bytes, sub-group 16", 32, 64, 8, 16,
       16, 16, 64, 0, 0, 0, 0, 64, 64 << 10},
      {"xe:dg2", "Intel Arc A-series (DG2, Xe-HPG): DPAS 8x8x16, sub-group block reads of one 256-byte run, sub-group 8",
       1, 256, 8, 8, 16, 8, 32, 0, 0, 0, 0, 64, 64 << 10},
  };
}

}  // namespace strata::tile
