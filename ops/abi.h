// The kernel ABI shared by codegen (which emits kernels) and the runtime
// (which launches them); no MLIR here.
//
// A CPU kernel is called through its packed entry point
// `void strata_<name>(void** args)`: args[i] points to the i-th scalar of the
// lowered signature. Kernel parameters, in order, lower as:
//   buffer (!tile.ptr<T>)  -> 5 slots: allocated pointer, aligned pointer,
//                             offset, size, stride (an MLIR memref<?xT>)
//   index                  -> 1 slot (int64_t)
//   f32                    -> 1 slot (float)
// followed by the three program ids (int64_t) that the launcher fills in.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ops/tensor.h"

namespace strata::abi {

using PackedKernel = void (*)(void**);
// The exported symbol of kernel `name` in a JIT module or shared library.
inline std::string packedSymbol(const std::string& name) { return "strata_" + name; }
// Resolves a kernel by name (a JIT module or a loaded shared library);
// throws strata::Error when there is none.
using KernelLookup = std::function<PackedKernel(const std::string&)>;

class KernelArgs {
 public:
  // A flat buffer of `elements` elements (the kernel indexes it in elements).
  KernelArgs& buffer(const void* data, int64_t elements);
  KernelArgs& index(int64_t value);
  KernelArgs& f32(float value);
  // One raw pointer or 32-bit integer (hand-written GPU kernels' params;
  // generated kernels take buffers and indices).
  KernelArgs& pointer(const void* p);
  KernelArgs& u32(uint32_t value);
  // The packed slots without the program ids, and each slot's size in
  // bytes (what a device copies when it records a launch).
  const std::vector<void*>& slots() const { return slots_; }
  const std::vector<uint32_t>& sizes() const { return sizes_; }

 private:
  std::deque<int64_t> ints_;
  std::deque<float> floats_;
  std::deque<void*> ptrs_;
  std::deque<uint32_t> u32s_;
  std::vector<void*> slots_;
  std::vector<uint32_t> sizes_;
  void add(void* slot, uint32_t bytes) { slots_.push_back(slot), sizes_.push_back(bytes); }
};

// Panel-packed weights: the layout CPU GEMM kernels read B in (weights are
// constants, so they are packed once, at load). A weight of K x N (stored
// [K, N], or [N, K] when `nk`) becomes ceil(N / width) panels, panel p
// holding columns [p * width, (p + 1) * width) as K contiguous rows of
// `width` floats: packed[(p * K + k) * width + j] = B[k, p * width + j],
// 0 past column N. A kernel program then streams its panel front to back
// (no 4 KiB-strided rows that alias in L1, hardware prefetch follows).
int64_t packedPanelsSize(int64_t K, int64_t N, int64_t width);
void packPanels(const float* w, int64_t K, int64_t N, bool nk, int64_t width, float* out);
// The same for a weight tensor (2-D: [K, N], or [N, K] when `nk`) of f32,
// f16 or bf16, as a new flat tensor of its type (16-bit panels are what the
// CPU kernels with 16-bit weights read: GemmKernelSpec::weightDtype).
ops::Tensor packPanels(const ops::Tensor& w, bool nk, int64_t width);

// A weight in blocks of 32 values that are a scale times small integers
// (llama.cpp's Q8_0, Q4_0, Q5_0: ops::QuantFormat::int8Block reads one
// block of `blockBytes` as its i8 integers and scale), stored [N, K] as
// rows of K / 32 blocks, in the panels of the CPU kernels with Q8_0-form
// weights (GemmKernelSpec::q8): the integers as packPanels lays floats out
// (values[(p K + k) width + j] = the integer of B[k, p width + j]) and the
// scales in f32, one row per block (scales[(p K / 32 + k / 32) width +
// j]); 0 past column N. K must be a multiple of 32. Values are moved,
// never dequantized (4- and 5-bit ones take a byte each).
struct Int8BlockPanels {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
Int8BlockPanels packInt8BlockPanels(const uint8_t* rows, int64_t K, int64_t N, int64_t width, int64_t blockBytes,
                                    void (*int8Block)(const uint8_t* block, int8_t* q, float* d));
// Whether the CPU kernels read the block format named `quant` (ggml's
// name) in that form.
bool readsAsInt8Blocks(std::string_view quant);

// Runs the kernel for every program id in [0, gx) x [0, gy) x [0, gz),
// spreading programs over `threads` threads (0: the hardware's count): the
// caller and persistent pool workers (one launch at a time; concurrent
// callers take turns).
void launch(PackedKernel kernel, const KernelArgs& args, int64_t gx, int64_t gy = 1, int64_t gz = 1,
            int threads = 0);
// The same with the packed slots alone (a recorded launch's).
void launch(PackedKernel kernel, std::span<void* const> slots, int64_t gx, int64_t gy = 1, int64_t gz = 1,
            int threads = 0);
// Threads launch() spreads programs over by default (the hardware's count).
int launchThreads();

}  // namespace strata::abi
