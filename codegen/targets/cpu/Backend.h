// The CPU backend's compile-and-load entry point (no MLIR in this header):
// workgroup-level tile IR in, packed kernel entry points (ops/abi.h) out,
// either JIT-compiled in process or written as a shared library for an
// artifact. Both expose kernel `name` as the symbol `strata_<name>` with the
// packed signature `void (void**)` (abi::packedSymbol).
#pragma once

#include <memory>
#include <string>

#include "ops/abi.h"

namespace strata::tile {

// "cpu-avx512" when the host reports AVX-512F, else "cpu-avx2".
std::string hostCpuTarget();

class CpuKernels {
 public:
  // Runs assign-layouts, distribute-to-warps, match-target-size (the target's
  // uArch table; "" = the host's), convert-tile-to-vector and the LLVM
  // lowering, then JIT-compiles for the host CPU with its features. Throws
  // strata::Error with MLIR's diagnostics on failure.
  static std::unique_ptr<CpuKernels> compile(const std::string& tileIr, const std::string& target = "");
  // The same kernels as position-independent machine code for the host CPU
  // (target "" or the host's): an object file `path`.o is written, linked into
  // the shared library `path` with ld.lld (LLVM 22's, or ld.lld on PATH) and
  // removed. Throws with the linker's output on failure.
  static void writeSharedLibrary(const std::string& tileIr, const std::string& path, const std::string& target = "");
  ~CpuKernels();

  // The packed entry point of kernel `name`; throws when absent.
  abi::PackedKernel lookup(const std::string& name) const;

 private:
  struct Impl;
  explicit CpuKernels(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::tile
