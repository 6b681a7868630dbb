// The Intel Xe backend's compile entry point (no MLIR in this header):
// workgroup-level tile IR in, a SPIR-V module out, for an OpenCL or Level
// Zero runtime to build (the runtime's Xe test device on Intel's CPU
// OpenCL runtime: runtime/devices/opencl/).
//
// Kernel parameters: each `!tile.ptr<T>` a global pointer (OpenCL
// `global T*`, 8 bytes), each index an int64_t, in the tile IR's order; no
// program ids are appended: the ND-range is (16 x num_warps x programs0,
// programs1, programs2) work-items in work-groups of (16 x num_warps, 1, 1)
// with sub-groups of 16. The module imports the 2D block IO and DPAS
// built-ins (cl_intel_subgroup_2d_block_io,
// cl_intel_subgroup_matrix_multiply_accumulate) by their OpenCL names, as
// LLVM's SPIR-V backend writes MLIR XeVM's calls to them; the Intel GPU
// driver resolves them, the CPU test device links its own definitions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::tile {

struct XeKernelInfo {
  std::string name;
  int64_t subGroupSize = 16;
  int64_t workGroupSize = 0;  // 16 x the kernel's tile.num_warps
};

struct XeModule {
  std::string target;  // e.g. "xe:pvc"
  std::string spirv;   // the SPIR-V binary (little-endian words)
  std::vector<XeKernelInfo> kernels;
};

// Runs assign-layouts, distribute-to-warps, match-target-size (the target's
// uArch row), convert-tile-to-xevm, MLIR's LLVM and XeVM lowerings, LLVM's
// optimizer and its SPIR-V backend. Targets: "xe:pvc", "xe:bmg" (xe:dg2,
// sub-group 8, has no lowering yet). Throws strata::Error with MLIR's
// diagnostics.
// `blockIo` (convert-tile-to-xevm's option): "auto" takes the 2D block
// instructions where the array meets their rules, checked at run time;
// "always" skips the check, "never" uses per-lane accesses only (tests:
// each path alone).
XeModule compileXe(const std::string& tileIr, const std::string& target, const std::string& blockIo = "auto");

}  // namespace strata::tile
