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
//
// Roofline parts (docs/codegen.md cites the data sheets): matrix engines x
// dense 16-bit flops an engine a clock x peak clock.
// - Data Center GPU Max 1550: 1024 XMX engines (128 Xe cores x 8) of 4096
//   bits (256 bf16 FMAs, 512 flops) at 1.6 GHz = 838.9 TFLOP/s; 128 GB
//   HBM2e at 3276.8 GB/s.
// - Arc B580: 160 XMX engines (20 Xe2 cores x 8) of 2048 bits (256 flops)
//   at 2.67 GHz = 109.4 TFLOP/s; 12 GB GDDR6, 192 bits at 19 Gbps = 456 GB/s.
// - Arc A770 16 GB: 512 XMX engines (32 Xe cores x 16) of 1024 bits (128
//   flops) at 2.1 GHz = 137.6 TFLOP/s; GDDR6, 256 bits at 17.5 Gbps = 560 GB/s.
std::vector<UArch> xeUArchs() {
  return {
      {"xe:pvc", "Intel Data Center GPU Max (PVC, Xe-HPC): DPAS 8x16x16, 2D block load 32x64 bytes, sub-group 16", 32,
       64, 8, 16, 16, 16, 64, 0, 0, 0, 0, 64, 128 << 10, false, "Intel Data Center GPU Max 1550", 1024 * 512 * 1.6e-3,
       3276.8},
      {"xe:bmg", "Intel Arc B-series (BMG, Xe2): DPAS 8x16x16, 2D block load 32x64 bytes, sub-group 16", 32, 64, 8, 16,
       16, 16, 64, 0, 0, 0, 0, 64, 64 << 10, false, "Intel Arc B580", 160 * 256 * 2.67e-3, 456},
      {"xe:dg2", "Intel Arc A-series (DG2, Xe-HPG): DPAS 8x8x16, sub-group block reads of one 256-byte run, sub-group 8",
       1, 256, 8, 8, 16, 8, 32, 0, 0, 0, 0, 64, 64 << 10, false, "Intel Arc A770 16 GB", 512 * 128 * 2.1e-3, 560},
  };
}

}  // namespace strata::tile
