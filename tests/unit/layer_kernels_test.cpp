// Conformance of the generated GEMM-with-epilogue, RMSNorm and RoPE kernels
// against ops::gemmRegion / ops::rmsNorm / ops::ropeTokens, on ragged
// shapes. The bound is on the error relative to the output's largest
// magnitude; RMSNorm and RoPE also in f16 and bf16 storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "codegen/targets/cpu/KernelSet.h"
#include "codegen/targets/cuda/KernelSet.h"
#include "codegen/targets/cpu/Backend.h"
#include "codegen/GemmKernel.h"
#include "codegen/NormRopeKernels.h"
#include "ops/reference.h"
#include "ops/regions.h"
#include "tests/unit/conformance.h"

namespace strata {
namespace {

using ops::DType;
using ops::Tensor;
using testing::maxRelError;
using testing::randomTensor;

struct EpilogueCase {
  bool bias, swiglu, residual, weightsNK;
  int64_t rows;  // kernel variant (cpuGemmSpec's rows): 1 = decode, 64 = small, 0 = any
  bool gelu = false;
};

class GemmEpilogue : public ::testing::TestWithParam<EpilogueCase> {};

TEST_P(GemmEpilogue, MatchesGemmRegion) {
  const EpilogueCase& c = GetParam();
  tile::GemmKernelSpec spec = tile::cpuGemmSpec(tile::hostCpuTarget(), c.weightsNK, c.rows, "f32", c.swiglu);
  spec.bias = c.bias;
  spec.residual = c.residual;
  spec.gelu = c.gelu;
  auto kernels = tile::CpuKernels::compile(tile::emitGemmKernel(spec));
  abi::PackedKernel kernel = kernels->lookup(spec.name);
  std::mt19937 rng(3);
  const int64_t shapes[][3] = {{1, 7, 5}, {5, 33, 16}, {19, 70, 41}, {2, 129, 64}};
  for (auto [m, n, k] : shapes) {
    Tensor x = randomTensor({m, k}, rng);
    std::vector<Tensor> w, b;
    for (int i = 0; i < (c.swiglu ? 2 : 1); ++i) {
      w.push_back(c.weightsNK ? randomTensor({n, k}, rng) : randomTensor({k, n}, rng));
      if (c.bias) b.push_back(randomTensor({n}, rng));
    }
    Tensor res = randomTensor({m, n}, rng);
    ops::GemmSpec gs{c.weightsNK, c.swiglu && c.gelu ? ops::GemmEpilogue::GeGLU
                                  : c.swiglu        ? ops::GemmEpilogue::SwiGLU
                                  : c.gelu          ? ops::GemmEpilogue::GeluTanh
                                                    : ops::GemmEpilogue::None};
    Tensor want = ops::gemmRegion(x, w, b, c.residual ? &res : nullptr, nullptr, gs).at(0);
    Tensor got(DType::F32, {m, n});
    abi::KernelArgs args;
    args.buffer(x.data<float>(), x.numel());
    std::vector<Tensor> wArgs;
    for (const Tensor& t : w) wArgs.push_back(testing::gemmWeight(t, c.weightsNK, spec.packedB ? spec.blockN : 0));
    for (const Tensor& t : wArgs) args.buffer(t.data<float>(), t.numel());
    args.buffer(got.data<float>(), got.numel());
    for (const Tensor& t : b) args.buffer(t.data<float>(), t.numel());
    if (c.residual) args.buffer(res.data<float>(), res.numel());
    args.index(m).index(n).index(k);
    abi::launch(kernel, args, (m + spec.blockM - 1) / spec.blockM, (n + spec.blockN - 1) / spec.blockN);
    EXPECT_LT(maxRelError(got, want), 1e-5) << m << "x" << n << "x" << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, GemmEpilogue,
                         ::testing::Values(EpilogueCase{true, false, false, false, 0},
                                           EpilogueCase{false, false, true, true, 0},
                                           EpilogueCase{true, false, true, false, 64},
                                           EpilogueCase{true, false, true, true, 1},
                                           EpilogueCase{false, true, false, true, 0},
                                           EpilogueCase{true, true, false, false, 0},
                                           EpilogueCase{false, true, false, true, 1},
                                           EpilogueCase{true, true, true, true, 1},
                                           EpilogueCase{true, false, false, false, 1},
                                           EpilogueCase{true, false, false, false, 0, true},
                                           EpilogueCase{true, false, true, true, 64, true},
                                           EpilogueCase{true, false, false, true, 1, true},
                                           EpilogueCase{false, false, true, false, 1, true},
                                           EpilogueCase{false, true, false, true, 0, true},
                                           EpilogueCase{true, true, false, false, 1, true}),
                         [](const auto& info) {
                           const EpilogueCase& c = info.param;
                           return std::string(c.bias ? "bias_" : "") + (c.swiglu ? "swiglu_" : "") +
                                  (c.gelu ? "gelu_" : "") +
                                  (c.residual ? "residual_" : "") + (c.weightsNK ? "nk" : "kn") +
                                  (c.rows == 1 ? "_gemv" : c.rows ? "_small" : "");
                         });

// RMSNorm and RoPE in each storage type: inputs rounded to it, the
// reference computed on the rounded values in f32, the output read back.
class RowKernels : public ::testing::TestWithParam<DType> {};

TEST_P(RowKernels, RmsNormMatchesReference) {
  const DType dtype = GetParam();
  tile::RmsNormKernelSpec spec = tile::cpuRmsNormSpec(tile::hostCpuTarget());
  spec.dtype = ops::dtypeName(dtype);
  auto kernels = tile::CpuKernels::compile(tile::emitRmsNormKernel(spec));
  abi::PackedKernel kernel = kernels->lookup(spec.name);
  std::mt19937 rng(9);
  const int64_t shapes[][2] = {{1, 7}, {3, 64}, {5, 100}, {2, 2048}, {4, 130}};
  for (auto [rows, hidden] : shapes) {
    Tensor x = randomTensor({rows, hidden}, rng, -3.f, 3.f).cast(dtype);
    Tensor w = randomTensor({hidden}, rng).cast(dtype);
    Tensor want = ops::rmsNorm(x.toF32(), w.toF32(), 1e-5f);
    Tensor got(dtype, {rows, hidden});
    abi::KernelArgs args;
    args.buffer(x.raw(), x.numel()).buffer(w.raw(), w.numel()).buffer(got.raw(), got.numel());
    args.index(rows).index(hidden).f32(1e-5f);
    abi::launch(kernel, args, rows);
    EXPECT_LT(maxRelError(got.toF32(), want), testing::storageBound(dtype, 1e-6)) << rows << "x" << hidden;
  }
}

// LayerNorm (region.layernorm): rows of ragged widths, a mean far from 0
// (the two-pass variance, the masked tail's share taken out), f32 / 16-bit
// storage.
TEST_P(RowKernels, LayerNormMatchesReference) {
  const DType dtype = GetParam();
  std::mt19937 rng(23);
  tile::RmsNormKernelSpec spec = tile::cpuRmsNormSpec(tile::hostCpuTarget());
  spec.name = "layer_norm";
  spec.dtype = ops::dtypeName(dtype);
  auto kernels = tile::CpuKernels::compile(tile::emitLayerNormKernel(spec));
  abi::PackedKernel kernel = kernels->lookup(spec.name);
  const int64_t shapes[][2] = {{1, 7}, {3, 64}, {5, 100}, {2, 768}, {4, 130}};
  for (auto [rows, hidden] : shapes) {
    Tensor x = randomTensor({rows, hidden}, rng, 5.f, 9.f).cast(dtype);
    Tensor w = randomTensor({hidden}, rng).cast(dtype), b = randomTensor({hidden}, rng).cast(dtype);
    Tensor bias = b.toF32();
    Tensor want = ops::layerNorm(x.toF32(), w.toF32(), &bias, -1, 1e-5f);
    Tensor got(dtype, {rows, hidden});
    abi::KernelArgs args;
    args.buffer(x.raw(), x.numel()).buffer(w.raw(), w.numel()).buffer(b.raw(), b.numel());
    args.buffer(got.raw(), got.numel()).index(rows).index(hidden).f32(1e-5f);
    abi::launch(kernel, args, rows);
    EXPECT_LT(maxRelError(got.toF32(), want), testing::storageBound(dtype, 1e-5)) << rows << "x" << hidden;
  }
}

TEST_P(RowKernels, RopeMatchesReferenceAndRunsInPlace) {
  const DType dtype = GetParam();
  std::mt19937 rng(13);
  struct Case {
    int64_t heads, headDim, headsPerProgram;
  };
  // One head a program (the CPU's) and several (the GPU's [heads, half] tiles).
  for (Case c : {Case{3, 16, 1}, Case{3, 64, 1}, Case{3, 128, 1}, Case{4, 64, 2}, Case{4, 128, 4}}) {
    const int64_t heads = c.heads, headDim = c.headDim, tokens = 5, maxPos = 300;
    tile::RopeKernelSpec spec{"rope", heads, headDim, ops::dtypeName(dtype), c.headsPerProgram};
    auto kernels = tile::CpuKernels::compile(tile::emitRopeKernel(spec));
    abi::PackedKernel kernel = kernels->lookup(spec.name);
    ops::RopeTables tables = ops::ropeTables(maxPos, headDim, 10000.f);
    Tensor x = randomTensor({tokens, heads * headDim}, rng).cast(dtype);
    Tensor pos(DType::I64, {tokens});
    const int64_t positions[] = {0, 7, 299, 3, 128};
    std::copy(positions, positions + tokens, pos.mut<int64_t>());
    Tensor want = ops::ropeTokens(x.toF32(), pos, headDim, 10000.f);
    Tensor y(dtype, x.shape());  // the kernel writes over its input
    std::memcpy(y.mut<char>(), x.raw(), x.nbytes());
    abi::KernelArgs args;
    args.buffer(y.raw(), y.numel()).buffer(y.raw(), y.numel());
    args.buffer(tables.cos.data<float>(), tables.cos.numel()).buffer(tables.sin.data<float>(), tables.sin.numel());
    args.buffer(pos.data<int64_t>(), pos.numel()).index(tokens).index(maxPos);
    abi::launch(kernel, args, tokens, heads / c.headsPerProgram);
    EXPECT_LT(maxRelError(y.toF32(), want), testing::storageBound(dtype, 1e-6))
        << "head dim " << headDim << ", " << c.headsPerProgram << " heads a program";
  }
}

// Partial rotary (RopeKernelSpec::rotaryDim): each head's first dims
// rotate at frequencies over the rotary dims, the rest are copied, out of
// place (the CPU's region) and in place.
TEST_P(RowKernels, PartialRopeRotatesTheFirstDimsAndCopiesTheRest) {
  const DType dtype = GetParam();
  std::mt19937 rng(19);
  for (auto [heads, headDim, rotary] : {std::tuple{3, 16, 8}, std::tuple{2, 96, 64}, std::tuple{4, 128, 32}}) {
    const int64_t tokens = 4, maxPos = 200;
    tile::RopeKernelSpec spec{"rope_partial", heads, headDim, ops::dtypeName(dtype)};
    spec.rotaryDim = rotary;
    auto kernels = tile::CpuKernels::compile(tile::emitRopeKernel(spec));
    abi::PackedKernel kernel = kernels->lookup(spec.name);
    ops::RopeTables tables = ops::ropeTables(maxPos, rotary, 10000.f);
    Tensor x = randomTensor({tokens, heads * headDim}, rng).cast(dtype);
    Tensor pos(DType::I64, {tokens});
    const int64_t positions[] = {199, 0, 5, 64};
    std::copy(positions, positions + tokens, pos.mut<int64_t>());
    Tensor want = ops::ropeTokens(x.toF32(), pos, headDim, 10000.f, rotary);
    for (bool inPlace : {false, true}) {
      Tensor y(dtype, x.shape());
      if (inPlace) std::memcpy(y.mut<char>(), x.raw(), x.nbytes());
      abi::KernelArgs args;
      args.buffer(inPlace ? y.raw() : x.raw(), x.numel()).buffer(y.raw(), y.numel());
      args.buffer(tables.cos.data<float>(), tables.cos.numel()).buffer(tables.sin.data<float>(), tables.sin.numel());
      args.buffer(pos.data<int64_t>(), pos.numel()).index(tokens).index(maxPos);
      abi::launch(kernel, args, tokens, heads);
      EXPECT_LT(maxRelError(y.toF32(), want), testing::storageBound(dtype, 1e-6))
          << heads << " heads of " << headDim << ", " << rotary << " rotary" << (inPlace ? ", in place" : "");
    }
  }
}

// q and k of one projection in one launch (RopeKernelSpec::kvHeads): all
// tokens' q heads, then all their k heads, each rotated at its token's
// position as the two-launch form would.
TEST_P(RowKernels, JoinedRopeRotatesQThenKHeads) {
  const DType dtype = GetParam();
  std::mt19937 rng(17);
  struct Case {
    int64_t heads, kvHeads, headDim, headsPerProgram, tokens, gap;
  };
  // gap: rows of padding between the q rows and the k rows (kAt).
  for (Case c : {Case{4, 2, 16, 1, 5, 0}, Case{4, 2, 64, 2, 3, 2}, Case{6, 2, 32, 2, 1, 0}, Case{8, 4, 128, 4, 4, 12}}) {
    tile::RopeKernelSpec spec{"rope_joined", c.heads, c.headDim, ops::dtypeName(dtype), c.headsPerProgram, 0, c.kvHeads};
    auto kernels = tile::CpuKernels::compile(tile::emitRopeKernel(spec));
    abi::PackedKernel kernel = kernels->lookup(spec.name);
    const int64_t maxPos = 300, T = c.tokens, kAt = T * c.heads + c.gap, qn = kAt * c.headDim,
                  kn = T * c.kvHeads * c.headDim;
    ops::RopeTables tables = ops::ropeTables(maxPos, c.headDim, 10000.f);
    Tensor q = randomTensor({T, c.heads * c.headDim}, rng).cast(dtype);
    Tensor k = randomTensor({T, c.kvHeads * c.headDim}, rng).cast(dtype);
    Tensor pos(DType::I64, {T});
    const int64_t positions[] = {299, 7, 0, 3, 128};
    std::copy(positions, positions + T, pos.mut<int64_t>());
    Tensor x(dtype, {qn + kn});
    std::memcpy(x.mut<char>(), q.raw(), q.nbytes());
    std::memcpy(x.mut<char>() + qn * ops::dtypeSize(dtype), k.raw(), k.nbytes());
    Tensor y = Tensor::fromF32(std::vector<float>(qn + kn, 42.f), {qn + kn}).cast(dtype);
    abi::KernelArgs args;
    args.buffer(x.raw(), x.numel()).buffer(y.raw(), y.numel());
    args.buffer(tables.cos.data<float>(), tables.cos.numel()).buffer(tables.sin.data<float>(), tables.sin.numel());
    args.buffer(pos.data<int64_t>(), pos.numel()).index(T).index(maxPos).index(kAt);
    abi::launch(kernel, args, T, (c.heads + c.kvHeads) / c.headsPerProgram);
    Tensor got = y.toF32();
    const int64_t qUsed = q.numel();
    Tensor gotQ = Tensor::fromF32(std::vector<float>(got.data<float>(), got.data<float>() + qUsed), q.shape());
    // The gap's rows are left alone.
    for (int64_t i = qUsed; i < qn; ++i) ASSERT_EQ(got.data<float>()[i], 42.f) << "gap element " << i;
    Tensor gotK = Tensor::fromF32(std::vector<float>(got.data<float>() + qn, got.data<float>() + qn + kn), k.shape());
    const double bound = testing::storageBound(dtype, 1e-6);
    EXPECT_LT(maxRelError(gotQ, ops::ropeTokens(q.toF32(), pos, c.headDim, 10000.f)), bound)
        << "q: " << c.heads << " + " << c.kvHeads << " heads of " << c.headDim << ", " << T << " tokens";
    EXPECT_LT(maxRelError(gotK, ops::ropeTokens(k.toF32(), pos, c.headDim, 10000.f)), bound)
        << "k: " << c.heads << " + " << c.kvHeads << " heads of " << c.headDim << ", " << T << " tokens";
  }
  // A head group must not straddle q and k.
  EXPECT_THROW(tile::emitRopeKernel({"rope", 4, 16, "f32", 4, 0, 2}), Error);
}

// region.rope_kv_write in one launch (emitRopeKvWriteKernel): q rotated
// into y, k rotated and v written at each token's slot of a paged cache,
// equal to the unfused references (ops::ropeTokens, ops::kvWrite); every
// other cache entry left as it was. Ragged: head groups of 1, 2 and 8,
// slots in several pages and out of order, pages of 4 and 16.
TEST_P(RowKernels, RopeKvWriteEqualsRopeThenKvWrite) {
  const DType dtype = GetParam();
  std::mt19937 rng(23);
  struct Case {
    int64_t heads, kvHeads, headDim, headsPerProgram, laneVector, pageSize, tokens;
  };
  for (Case c : {Case{4, 2, 16, 1, 0, 4, 5}, Case{6, 2, 32, 2, 4, 16, 3}, Case{32, 8, 128, 8, 4, 16, 2}}) {
    tile::RopeKvWriteKernelSpec spec{"rope_kv_write", c.heads, c.kvHeads, c.headDim, c.pageSize, ops::dtypeName(dtype),
                                     c.headsPerProgram, c.laneVector};
    auto kernels = tile::CpuKernels::compile(tile::emitRopeKvWriteKernel(spec));
    abi::PackedKernel kernel = kernels->lookup(spec.name);
    const int64_t maxPos = 300, T = c.tokens, blocks = 3, D = c.headDim;
    ops::RopeTables tables = ops::ropeTables(maxPos, D, 10000.f);
    Tensor q = randomTensor({T, c.heads * D}, rng).cast(dtype);
    Tensor k = randomTensor({T, c.kvHeads * D}, rng).cast(dtype);
    Tensor v = randomTensor({T, c.kvHeads * D}, rng).cast(dtype);
    Tensor cache = randomTensor({blocks, 2, c.kvHeads, c.pageSize, D}, rng).cast(dtype);
    Tensor pos(DType::I64, {T}), slots(DType::I64, {T});
    const int64_t positions[] = {299, 7, 0, 3, 128}, slotOf[] = {2 * c.pageSize + 1, 0, c.pageSize - 1, c.pageSize, 3};
    std::copy(positions, positions + T, pos.mut<int64_t>());
    std::copy(slotOf, slotOf + T, slots.mut<int64_t>());
    Tensor wantQ = ops::ropeTokens(q.toF32(), pos, D, 10000.f);
    Tensor wantCache = cache.toF32();
    ops::kvWrite(wantCache, ops::ropeTokens(k.toF32(), pos, D, 10000.f), v.toF32(), slots);
    Tensor y = Tensor::fromF32(std::vector<float>(q.numel(), 42.f), q.shape()).cast(dtype);
    abi::KernelArgs args;
    args.buffer(q.raw(), q.numel()).buffer(k.raw(), k.numel()).buffer(v.raw(), v.numel());
    args.buffer(y.raw(), y.numel()).buffer(cache.raw(), cache.numel());
    args.buffer(tables.cos.data<float>(), tables.cos.numel()).buffer(tables.sin.data<float>(), tables.sin.numel());
    args.buffer(pos.data<int64_t>(), T).buffer(slots.data<int64_t>(), T).index(T).index(maxPos).index(blocks);
    abi::launch(kernel, args, T, (c.heads + c.kvHeads) / c.headsPerProgram);
    const double bound = testing::storageBound(dtype, 1e-6);
    const std::string what = fmt::format("{} + {} heads of {}, pages of {}", c.heads, c.kvHeads, D, c.pageSize);
    EXPECT_LT(maxRelError(y.toF32(), wantQ), bound) << "q: " << what;
    // The cache: entries at the slots within the bound (k rotated, v
    // copied), every other one bit for bit as it was.
    EXPECT_LT(maxRelError(cache.toF32(), wantCache), bound) << "cache: " << what;
    const Tensor got = cache.toF32(), before = wantCache.cast(dtype).toF32();
    for (int64_t i = 0; i < cache.numel(); ++i) {
      const int64_t slot = (i / (D * c.pageSize * 2 * c.kvHeads)) * c.pageSize + (i / D) % c.pageSize;
      if (std::find(slotOf, slotOf + T, slot) == slotOf + T)
        ASSERT_EQ(got.data<float>()[i], before.data<float>()[i]) << "element " << i << ", " << what;
    }
  }
  EXPECT_THROW(tile::emitRopeKvWriteKernel({"rope_kv_write", 4, 2, 16, 16, "bf16", 4}), Error);  // 4 does not divide 2
  EXPECT_THROW(tile::emitRopeKvWriteKernel({"rope_kv_write", 4, 2, 15, 16, "bf16"}), Error);     // odd head dim
}

INSTANTIATE_TEST_SUITE_P(Storage, RowKernels, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(ops::dtypeName(info.param)); });

TEST(LayerKernels, RejectBadSpecs) {
  EXPECT_THROW(tile::emitRopeKernel({"rope", 2, 15}), Error);
  EXPECT_THROW(tile::emitRmsNormKernel({"rms_norm", 0}), Error);
  EXPECT_THROW(tile::emitRmsNormKernel({"rms_norm", 64, "f64"}), Error);
  EXPECT_THROW(tile::emitRmsNormKernel({"rms_norm", 4096, "bf16", 8, 32}), Error);  // 32 a lane of 16
}

// The GPU RMSNorm reads whole blocks of a row in 16-byte lane vectors (in
// bounds, contiguous runs) when N is a multiple of the vector, then the
// rest masked; the CPU form has one masked loop.
TEST(LayerKernels, GpuRmsNormVectorsWholeBlocks) {
  std::string gpu = tile::emitRmsNormKernel(tile::cudaRmsNormSpec("bf16"));
  EXPECT_NE(gpu.find("tile.lane_vector = 8 : i64"), std::string::npos);
  EXPECT_NE(gpu.find("{in_bounds, contiguous = 1 : i64, run = 8 : i64}"), std::string::npos);
  EXPECT_NE(gpu.find("%nFull = arith.select %vecOK"), std::string::npos);
  std::string f32 = tile::emitRmsNormKernel(tile::cudaRmsNormSpec("f32"));
  EXPECT_NE(f32.find("run = 4 : i64"), std::string::npos);
  std::string cpu = tile::emitRmsNormKernel(tile::cpuRmsNormSpec("cpu-avx2"));
  EXPECT_EQ(cpu.find("lane_vector"), std::string::npos);
  EXPECT_EQ(cpu.find("contiguous"), std::string::npos);
  EXPECT_THROW(tile::emitRopeKernel({"rope", 2, 16, "i32"}), Error);
  EXPECT_THROW(tile::emitRopeKernel({"rope", 6, 16, "f32", 4}), Error);     // 4 heads a program of 6
  EXPECT_THROW(tile::emitRopeKernel({"rope", 2, 12, "f32", 1, 4}), Error);  // vectors of 4 in halves of 6
  EXPECT_THROW(ops::ropeTables(0, 64, 1e4f), Error);
}

}  // namespace
}  // namespace strata
