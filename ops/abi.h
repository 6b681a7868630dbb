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
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ops/tensor.h"

namespace strata::ops {
struct GraphDef;
}

namespace strata::ops {
struct QuantFormat;  // ops/quant.h
}

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

// The form in which the CPU kernels read block-quantized weights
// (GemmKernelSpec::int8Blocks): i8 integers in sub-blocks of `block`
// values along K, each with an f32 scale and, with `offsets`, an f32
// offset. A format fits a form whose block divides its sub-block and that
// has offsets when it does; the weights of one GEMM node share a form
// (commonInt8Form).
struct Int8BlockForm {
  int64_t block = 32;
  bool offsets = false;
  // 4-bit integers, a K pair per byte (4-bit formats only): half the bytes
  // of the i8 form.
  bool nibbles = false;
  // The scales and offsets as the file holds them (ops::QuantFormat::
  // scaleParts): f16 rows, one per superBlock K steps, times, with
  // subScales, i8 rows per `block` (the K formats' sub-block scales and
  // mins). 0: f32 rows per `block`, each the product (a node mixing formats
  // of different block sizes).
  int64_t superBlock = 0;
  bool subScales = false;
  bool operator==(const Int8BlockForm&) const = default;
};
// The form of the block format named `quant` (ggml's name: its own
// sub-block and offsets; nibbles for 4-bit formats, with offsets where the
// integers start below 0: Q4_0), or nullopt for a name ops/quant.h does
// not know.
std::optional<Int8BlockForm> int8BlockForm(std::string_view quant);
// The form that fits every one of `forms` with the fewest scale and offset
// bytes: the smallest sub-block, offsets if any has them, nibbles if all
// have them, f16 super-block rows if all share the super-block (with i8
// sub-block rows if any has them).
Int8BlockForm commonInt8Form(std::span<const Int8BlockForm> forms);

// A quantized weight stored [N, K] as rows of K / blockElems blocks of
// format `f`, in the panels of the CPU kernels in `form`: the integers in
// K pairs, the form x86's integer dot products read (values[(p K + k - k %
// 2) width + 2 j + k % 2] = the integer of B[k, p width + j]: each panel a
// [K / 2, 2 width] array), the scales (and offsets, else empty) one row per
// sub-block of form.block (scales[(p K / block + k / block) width + j]);
// 0 past column N. With nibbles the pair is one byte, values[(p K / 2 + k /
// 2) width + j] = (q(k) - qMin) | (q(k + 1) - qMin) << 4 (each panel a
// [K / 2, width] array), and the offsets take qMin times the scale. With a
// superBlock S the scales are halfScales[(p K / S + k / S) width + j] (f16
// bits) times, with subScales, subScales[(p K / block + k / block) width +
// j]; the offsets likewise (halfOffsets, subOffsets). Values are moved,
// never dequantized (5- and 6-bit ones take a byte each). Throws unless K
// is whole blocks and `form` fits `f`.
struct Int8BlockPanels {
  std::vector<int8_t> values;
  std::vector<float> scales, offsets;           // superBlock 0
  std::vector<uint16_t> halfScales, halfOffsets;  // superBlock > 0
  std::vector<int8_t> subScales, subOffsets;      // and subScales
};
Int8BlockPanels packInt8BlockPanels(const uint8_t* rows, int64_t K, int64_t N, int64_t width,
                                    const ops::QuantFormat& f, Int8BlockForm form);
// The scale and offset buffers of `p` (in `form`) in the order a kernel
// takes them after the values (GemmKernelSpec::quantSuper): each as
// (data, elements).
void int8ScaleBuffers(const Int8BlockPanels& p, const Int8BlockForm& form,
                      const std::function<void(const void*, int64_t)>& each);

// The GPU form of a CPU form (codegen/GemvI8Kernel.cpp's quantized GEMV):
// the same integers, with one f16 scale (and offset) a block (superBlock =
// block): the file's own f16 values for the 32-value formats, the K
// formats' products of the super-block's f16 and a sub-block's 6-bit
// integer rounded to f16 (within 2^-11 of each, relative; no i8 sub-block
// rows: a lane-linear GPU tile widens one scale per block row). f16
// products take Q4_K from 6 bits a value (f32 ones) to 5, Q6_K from 10 to
// 9. Its name in kernel names: "i8b32h" (i8 integers, 32-value blocks, f16
// scales), "n4b32ho" (nibbles, f16 scales and offsets); an "f" in place of
// the "h" is a CPU form's f32 rows.
Int8BlockForm gpuInt8Form(Int8BlockForm form);
std::string int8FormName(const Int8BlockForm& form);
// Every distinct GPU form of the block formats ops/quant.h knows, and the
// form of a node mixing them all (the kernel sets' quantized GEMVs).
std::vector<Int8BlockForm> gpuInt8Forms();
// A quantized weight [N, K] (rows of K / blockElems blocks of `f`) in GPU
// form `form` (gpuInt8Form): packInt8BlockPanels' panels of width 1, so the
// integers are [N, K] row-major and the f16 scales (offsets) [N, K / block]
// (halfScales, halfOffsets), except that nibbles pair a block's value i with
// value i + block / 2 in byte i of the block's block / 2 bytes (a lane's
// run of bytes then meets two runs of A; the CPU pairs k with k + 1).
Int8BlockPanels packGpuInt8Rows(const uint8_t* rows, int64_t K, int64_t N, const ops::QuantFormat& f,
                                Int8BlockForm form);

// The GPU form (gpuInt8Form) of each block-quantized weight of `g`'s
// region.gemm nodes and region.embedding tables, by weight name: its
// format's own, or, for the two weights of a SwiGLU node (one launch reads
// both), the form that fits both; a table the lm_head shares takes the
// GEMM's. Throws when a weight feeds GEMMs that would need it in two forms,
// or feeds a [K, N] GEMM (quantized weights are [N, K] rows of blocks).
std::map<std::string, Int8BlockForm> gpuQuantWeightForms(const ops::GraphDef& g);

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
