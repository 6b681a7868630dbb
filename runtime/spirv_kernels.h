// The kernels a SPIR-V module declares and their parameters, read from the
// module itself (OpEntryPoint Kernel and its OpFunction's parameters): what
// a device that sets kernel arguments one by one with their sizes (OpenCL,
// Level Zero) needs, and what neither driver reports for a SPIR-V kernel.
// Shared by the Xe devices (runtime/devices/opencl, level_zero).
//
// Generated kernels take the kernel ABI (ops/abi.h): a buffer as five slots
// (allocated and aligned pointer, offset, size, stride), an index as one
// i64 slot, an f32 as one. The Xe lowering passes a buffer as one global
// pointer (codegen/targets/xe/ConvertTileToXeVM.cpp), so a launch's slots
// map onto the parameters by kernelArguments().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {

struct SpirvParam {
  enum Kind { Pointer, Int, Float } kind = Int;
  uint32_t bytes = 0;  // the value's size: 8 for a pointer
  bool operator==(const SpirvParam&) const = default;
};

struct SpirvKernel {
  std::string name;
  std::vector<SpirvParam> params;
};

// Every Kernel entry point of `module` (a little-endian SPIR-V binary) in
// declaration order. Throws strata::Error saying what is malformed and at
// which word (`what` names the module in messages).
std::vector<SpirvKernel> spirvKernels(std::string_view module, const std::string& what);

// One kernel argument: `bytes` bytes at `value` (a pointer parameter: the
// pointer's own bytes).
struct KernelArgument {
  const void* value = nullptr;
  size_t bytes = 0;
  bool pointer = false;
};

// The arguments of `k` from a launch's ABI slots: a pointer parameter takes
// a buffer's five slots (the aligned pointer, slot 1 of them), any other
// one slot of its size. Throws naming the kernel when the slots do not
// cover its parameters exactly.
std::vector<KernelArgument> kernelArguments(const SpirvKernel& k, std::span<void* const> slots);

}  // namespace strata::runtime
