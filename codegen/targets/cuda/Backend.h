// The NVIDIA backend's compile entry point (no MLIR in this header):
// workgroup-level tile IR in, PTX out, for the runtime's cuda device to load
// (runtime/devices/cuda/device.h) on a machine that needs no LLVM.
//
// Kernel parameters follow ops/abi.h (a buffer is the 5 slots of an MLIR
// memref<?xT>, an index one int64_t), passed as cuLaunchKernel's
// kernelParams (abi::KernelArgs::slots()); no program ids are appended:
// the grid is the program grid and each block runs 32 x num_warps threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::tile {

struct CudaKernelInfo {
  std::string name;
  int64_t threads = 0;      // per block: 32 x the kernel's tile.num_warps
  int64_t sharedBytes = 0;  // dynamic shared memory per block (its tile.alloc buffers)
  size_t unit = 0;          // the unit of compileCuda(units, ...) it came from
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

// The same for a kernel set: each unit (one or more kernels' tile IR) is
// compiled in its own contexts on one of `threads` threads (0: one per
// hardware thread), and their PTX is spliced into one module in unit order,
// so the result does not depend on the thread count. `progress(done, total)`
// is called after each unit, never by two threads at once. `unitDone(i, m)`,
// when given, runs on the compiling thread as soon as unit i is compiled
// (before its progress call), with that unit's own module (a whole PTX
// module of its kernels): the caller's per-unit work, such as assembling it,
// overlaps the other units' compiles. It runs on several threads at once;
// what it throws is unit i's error. `startOrder`, when given, is the order
// in which the units start (a permutation of their indices: the costliest
// first, so that the last to finish does not start late); the module is in
// unit order all the same. A failing unit throws its error after the others
// finish (the first in unit order).
CudaModule compileCuda(const std::vector<std::string>& units, const std::string& target, int threads = 0,
                       const std::function<void(size_t, size_t)>& progress = {},
                       const std::function<void(size_t, const CudaModule&)>& unitDone = {},
                       const std::vector<size_t>& startOrder = {});

}  // namespace strata::tile
