// The NVIDIA backend's compile entry point (no MLIR in this header):
// workgroup-level tile IR in, PTX out, for the runtime's cuda device to load
// (runtime/cuda_device.h) on a machine that needs no LLVM.
//
// Kernel parameters follow ops/abi.h (a buffer is the 5 slots of an MLIR
// memref<?xT>, an index one int64_t), passed as cuLaunchKernel's
// kernelParams (abi::KernelArgs::slots()); no program ids are appended:
// the grid is the program grid and each block runs 32 x num_warps threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::tile {

struct CudaKernelInfo {
  std::string name;
  int64_t threads = 0;      // per block: 32 x the kernel's tile.num_warps
  int64_t sharedBytes = 0;  // dynamic shared memory per block (its tile.alloc buffers)
};

struct CudaModule {
  std::string target;  // e.g. "sm_90"
  std::string chip;    // the PTX's .target: sm_90 code is built as sm_90a (PTX ISA 8.0)
  std::string ptx;     // PTX for `chip`
  std::vector<CudaKernelInfo> kernels;
};

// Runs assign-layouts, distribute-to-warps, match-target-size (the target's
// uArch row), convert-tile-to-nvvm and the LLVM lowering, then LLVM's NVPTX
// backend. Targets: "sm_90". Throws strata::Error with MLIR's diagnostics.
CudaModule compileCuda(const std::string& tileIr, const std::string& target = "sm_90");

}  // namespace strata::tile
