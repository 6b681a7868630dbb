// Conformance of the generated FlashAttention-2 kernels (contiguous and
// paged) against ops::attention / ops::pagedAttention: GQA ratios 1, 4, 8,
// head dims 64 and 128, causal and not, key masks, ragged lengths no tile
// divides, paged block sizes 16 and 32 with shuffled (non-contiguous) block
// tables; f32, and f16 / bf16 storage of q, k, v (the cache) and o. The
// bound is on the error relative to the output's largest magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "codegen/AttentionKernel.h"
#include "codegen/targets/cpu/Backend.h"
#include "ops/reference.h"
#include "ops/regions.h"
#include "tests/unit/conformance.h"

namespace strata {
namespace {

using ops::DType;
using ops::Tensor;
using testing::maxRelError;
using testing::randomTensor;

constexpr double kF32Bound = 2e-5;

struct Heads {
  int64_t q, kv, dim;
};

std::string name(const Heads& h) { return fmt::format("h{}_kv{}_d{}", h.q, h.kv, h.dim); }

class ContiguousAttention : public ::testing::TestWithParam<std::tuple<Heads, bool, int64_t>> {};

TEST_P(ContiguousAttention, MatchesReference) {
  auto [heads, causal, queryRows] = GetParam();
  const float scale = 1.f / std::sqrt((float)heads.dim);
  std::mt19937 rng(11);
  for (bool keyMask : {false, true}) {
    tile::AttentionKernelSpec spec = tile::cpuAttentionSpec(heads.q, heads.kv, heads.dim, scale, 16, queryRows);
    spec.paged = false;
    spec.causal = causal;
    spec.keyMask = keyMask;
    auto kernels = tile::CpuKernels::compile(tile::emitAttentionKernel(spec));
    abi::PackedKernel kernel = kernels->lookup(spec.name);
    // (B, S, T): decode, short, ragged prefill, more keys than queries.
    const int64_t shapes[][3] = {{1, 1, 29}, {2, 5, 5}, {1, 23, 23}, {2, 13, 40}};
    for (auto [B, S, T] : shapes) {
      if (queryRows == 1 && S > 1) continue;
      Tensor q = randomTensor({B, heads.q, S, heads.dim}, rng);
      Tensor k = randomTensor({B, heads.kv, T, heads.dim}, rng);
      Tensor v = randomTensor({B, heads.kv, T, heads.dim}, rng);
      Tensor mask(DType::F32, {B, T});
      for (int64_t i = 0; i < B * T; ++i) mask.mut<float>()[i] = (i % 7 == 3 || i % 5 == 1) ? 0.f : 1.f;
      if (keyMask) mask.mut<float>()[T - 1] = 0.f;  // batch 0 loses its newest key
      Tensor keep(DType::I64, {B, T});  // the reference's form of the same mask
      for (int64_t i = 0; i < B * T; ++i) keep.mut<int64_t>()[i] = mask.data<float>()[i] != 0.f;
      Tensor want = ops::attention(q, k, v, scale, causal, keyMask ? &keep : nullptr);
      Tensor got(DType::F32, q.shape());
      abi::KernelArgs args;
      args.buffer(q.data<float>(), q.numel()).buffer(k.data<float>(), k.numel()).buffer(v.data<float>(), v.numel());
      if (keyMask) args.buffer(mask.data<float>(), mask.numel());
      args.buffer(got.data<float>(), got.numel()).index(S).index(T);
      abi::launch(kernel, args, (S + spec.blockM - 1) / spec.blockM, heads.q, B);
      EXPECT_LT(maxRelError(got, want), kF32Bound)
          << "B=" << B << " S=" << S << " T=" << T << (keyMask ? " key mask" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, ContiguousAttention,
    ::testing::Combine(::testing::Values(Heads{4, 4, 64}, Heads{8, 2, 64}, Heads{8, 1, 128}, Heads{4, 1, 64}),
                       ::testing::Bool(), ::testing::Values(int64_t{1}, int64_t{4})),
    [](const auto& info) {
      return name(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_causal" : "_full") +
             (std::get<2>(info.param) == 1 ? "_decode" : "_prefill");
    });

// A paged step: sequences with their own new-token counts and contexts, the
// cache's blocks handed out in shuffled order, stale data everywhere
// (including past each context: the kernel must never let it reach the
// output).
struct PagedStep {
  Tensor q, cache, tables, starts, lens, want;
  int64_t maxBlocks = 0, numBlocks = 0, maxQ = 0, seqs = 0;
};

// q and the cache are stored in `dtype`; the reference sees their values.
PagedStep makePagedStep(const Heads& heads, int64_t blockSize, int64_t queryRows, float scale, std::mt19937& rng,
                        DType dtype = DType::F32) {
  // (new tokens, context) per sequence: prefill spanning blocks, decode
  // steps at and just past block boundaries, a chunked-prefill continuation.
  std::vector<std::pair<int64_t, int64_t>> seqs = {{37, 37}, {1, blockSize}, {1, blockSize + 1}, {9, 70}, {1, 3}};
  if (queryRows == 1)
    for (auto& s : seqs) s.first = 1;
  PagedStep p;
  int64_t tokens = 0, usedBlocks = 0;
  for (auto [n, ctx] : seqs) {
    p.maxBlocks = std::max(p.maxBlocks, (ctx + blockSize - 1) / blockSize);
    usedBlocks += (ctx + blockSize - 1) / blockSize;
    tokens += n;
  }
  p.numBlocks = usedBlocks + 3;
  std::vector<int64_t> physical(p.numBlocks);
  for (int64_t i = 0; i < p.numBlocks; ++i) physical[i] = i;
  std::shuffle(physical.begin(), physical.end(), rng);
  const int64_t N = p.seqs = (int64_t)seqs.size();
  p.tables = Tensor(DType::I64, {N, p.maxBlocks});
  p.starts = Tensor(DType::I64, {N + 1});
  p.lens = Tensor(DType::I64, {N});
  std::fill(p.tables.mut<int64_t>(), p.tables.mut<int64_t>() + p.tables.numel(), -1);
  int64_t next = 0, tok = 0;
  for (int64_t n = 0; n < N; ++n) {
    auto [q, ctx] = seqs[n];
    p.starts.mut<int64_t>()[n] = tok;
    tok += q;
    p.lens.mut<int64_t>()[n] = ctx;
    p.maxQ = std::max(p.maxQ, q);
    for (int64_t b = 0; b < (ctx + blockSize - 1) / blockSize; ++b)
      p.tables.mut<int64_t>()[n * p.maxBlocks + b] = physical[next++];
  }
  p.starts.mut<int64_t>()[N] = tok;
  p.cache = randomTensor({p.numBlocks, 2, heads.kv, blockSize, heads.dim}, rng, -4.f, 4.f).cast(dtype);
  p.q = randomTensor({tokens, heads.q * heads.dim}, rng).cast(dtype);
  p.want = ops::pagedAttention(p.q.toF32(), p.cache.toF32(), p.tables, p.starts, p.lens,
                               {heads.q, heads.kv, heads.dim, scale});
  return p;
}

// The kernel's arguments after q and cache: block tables, starts, lengths,
// max blocks, cache rows.
void appendPagedTail(abi::KernelArgs& args, const PagedStep& p, const Heads& heads, int64_t blockSize) {
  args.buffer(p.tables.data<int64_t>(), p.tables.numel())
      .buffer(p.starts.data<int64_t>(), p.starts.numel())
      .buffer(p.lens.data<int64_t>(), p.lens.numel())
      .index(p.maxBlocks)
      .index(p.numBlocks * 2 * heads.kv * blockSize);
}

// Runs `spec` (with its combine kernel when it splits the keys) on step `p`;
// o in the spec's storage type.
Tensor runPaged(const tile::AttentionKernelSpec& spec, const PagedStep& p, const Heads& heads, int64_t blockSize) {
  std::string ir = tile::emitAttentionKernel(spec);
  if (spec.kvSplits > 1) ir += tile::emitAttentionCombineKernel(spec);
  auto kernels = tile::CpuKernels::compile(ir);
  const int64_t T = p.q.dim(0), S = spec.kvSplits;
  Tensor got(p.q.dtype(), p.q.shape());
  std::vector<float> po(T * heads.q * S * heads.dim, NAN), pm(T * heads.q * S, NAN), pl(T * heads.q * S, NAN);
  abi::KernelArgs args;
  args.buffer(p.q.raw(), p.q.numel()).buffer(p.cache.raw(), p.cache.numel());
  if (S > 1)
    args.buffer(po.data(), (int64_t)po.size()).buffer(pm.data(), (int64_t)pm.size()).buffer(pl.data(), (int64_t)pl.size());
  else
    args.buffer(got.raw(), got.numel());
  appendPagedTail(args, p, heads, blockSize);
  if (spec.groupHeads)
    abi::launch(kernels->lookup(spec.name), args, 1, heads.kv, p.seqs);
  else
    abi::launch(kernels->lookup(spec.name), args, (p.maxQ + spec.blockM - 1) / spec.blockM * S, heads.q, p.seqs);
  if (S > 1) {
    abi::KernelArgs combine;
    combine.buffer(po.data(), (int64_t)po.size()).buffer(pm.data(), (int64_t)pm.size()).buffer(pl.data(), (int64_t)pl.size());
    combine.buffer(got.raw(), got.numel()).index(T);
    abi::launch(kernels->lookup(spec.name + "_combine"), combine, T, heads.q);
  }
  return got;
}

class PagedAttention : public ::testing::TestWithParam<std::tuple<Heads, int64_t, int64_t>> {};

TEST_P(PagedAttention, MatchesReference) {
  auto [heads, blockSize, queryRows] = GetParam();
  const float scale = 1.f / std::sqrt((float)heads.dim);
  std::mt19937 rng(5);
  tile::AttentionKernelSpec spec = tile::cpuAttentionSpec(heads.q, heads.kv, heads.dim, scale, blockSize, queryRows);
  PagedStep p = makePagedStep(heads, blockSize, queryRows, scale, rng);
  EXPECT_LT(maxRelError(runPaged(spec, p, heads, blockSize), p.want), kF32Bound);
}

// The planner's decode form: a program per KV head, its query heads as
// rows (MHA: one row; GQA 3, 4 and 8), decode steps at and past block
// boundaries, 16-bit storage too.
class PagedAttentionGroupedDecode : public ::testing::TestWithParam<std::tuple<Heads, DType>> {};

TEST_P(PagedAttentionGroupedDecode, MatchesReference) {
  auto [heads, dtype] = GetParam();
  const float scale = 1.f / std::sqrt((float)heads.dim);
  std::mt19937 rng(23);
  tile::AttentionKernelSpec spec = tile::cpuGroupedDecodeSpec(heads.q, heads.kv, heads.dim, scale, 16);
  spec.dtype = ops::dtypeName(dtype);
  EXPECT_EQ(spec.blockM, heads.q / heads.kv);
  PagedStep p = makePagedStep(heads, 16, 1, scale, rng, dtype);
  EXPECT_LT(maxRelError(runPaged(spec, p, heads, 16).toF32(), p.want), testing::storageBound(dtype, kF32Bound));
}

INSTANTIATE_TEST_SUITE_P(Cpu, PagedAttentionGroupedDecode,
                         ::testing::Values(std::make_tuple(Heads{4, 4, 64}, DType::F32),
                                           std::make_tuple(Heads{12, 4, 64}, DType::F32),
                                           std::make_tuple(Heads{8, 1, 64}, DType::F32),
                                           std::make_tuple(Heads{8, 2, 128}, DType::BF16)),
                         [](const auto& info) {
                           return name(std::get<0>(info.param)) + "_" + ops::dtypeName(std::get<1>(info.param));
                         });

// Flash-decoding: keys split over 3 programs per (query block, head), then
// the combine kernel (3 does not divide any context here).
class PagedAttentionSplitKv : public ::testing::TestWithParam<std::tuple<Heads, int64_t, int64_t>> {};

TEST_P(PagedAttentionSplitKv, MatchesReference) {
  auto [heads, blockSize, queryRows] = GetParam();
  const float scale = 1.f / std::sqrt((float)heads.dim);
  std::mt19937 rng(17);
  tile::AttentionKernelSpec spec = tile::cpuAttentionSpec(heads.q, heads.kv, heads.dim, scale, blockSize, queryRows);
  spec.kvSplits = 3;
  PagedStep p = makePagedStep(heads, blockSize, queryRows, scale, rng);
  EXPECT_LT(maxRelError(runPaged(spec, p, heads, blockSize), p.want), kF32Bound);
}

// A test's name: heads, KV block size, decode (one query a sequence) or
// prefill.
std::string pagedName(const ::testing::TestParamInfo<std::tuple<Heads, int64_t, int64_t>>& info) {
  return name(std::get<0>(info.param)) + "_bs" + std::to_string(std::get<1>(info.param)) +
         (std::get<2>(info.param) == 1 ? "_decode" : "_prefill");
}

// KV blocks of 32 run at head dim 32, head dims 64 and 128 at blocks of 16:
// on an AVX2-only host LLVM takes 6-8 minutes to JIT a head-dim-64 kernel at
// block 32 and over 15 at head dim 128 (docs/testing.md), which the suite
// cannot afford. Block 32 at head dim 32 runs the same page walk.
INSTANTIATE_TEST_SUITE_P(Cpu, PagedAttentionSplitKv,
                         ::testing::Values(std::make_tuple(Heads{8, 2, 64}, int64_t{16}, int64_t{1}),
                                           std::make_tuple(Heads{4, 4, 128}, int64_t{16}, int64_t{1}),
                                           std::make_tuple(Heads{4, 4, 32}, int64_t{32}, int64_t{1}),
                                           std::make_tuple(Heads{8, 1, 64}, int64_t{16}, int64_t{4})),
                         pagedName);

INSTANTIATE_TEST_SUITE_P(Cpu, PagedAttention,
                         ::testing::Combine(::testing::Values(Heads{4, 4, 64}, Heads{8, 1, 64}),
                                            ::testing::Values(int64_t{16}), ::testing::Values(int64_t{1}, int64_t{4})),
                         pagedName);
INSTANTIATE_TEST_SUITE_P(CpuBlock32, PagedAttention,
                         ::testing::Combine(::testing::Values(Heads{8, 1, 32}),
                                            ::testing::Values(int64_t{32}), ::testing::Values(int64_t{1}, int64_t{4})),
                         pagedName);
INSTANTIATE_TEST_SUITE_P(CpuHeadDim128, PagedAttention,
                         ::testing::Combine(::testing::Values(Heads{8, 2, 128}), ::testing::Values(int64_t{16}),
                                            ::testing::Values(int64_t{1}, int64_t{4})),
                         pagedName);

// 16-bit storage: q, k, v (the cache) and o in f16 / bf16, rounded inputs
// in the reference, the output's rounding in the bound. GQA 4, ragged
// lengths; paged decode and prefill with block sizes 16 and 32, and split
// keys (the partials stay f32; the combine kernel narrows).
class AttentionStorage : public ::testing::TestWithParam<DType> {};

TEST_P(AttentionStorage, ContiguousMatchesReference) {
  const DType dtype = GetParam();
  const Heads heads{8, 2, 64};
  const float scale = 0.125f;
  std::mt19937 rng(23);
  for (bool causal : {false, true}) {
    tile::AttentionKernelSpec spec = tile::cpuAttentionSpec(heads.q, heads.kv, heads.dim, scale, 16, 4);
    spec.paged = false;
    spec.causal = causal;
    spec.dtype = ops::dtypeName(dtype);
    auto kernels = tile::CpuKernels::compile(tile::emitAttentionKernel(spec));
    const int64_t B = 2, S = 13, T = 40;
    Tensor q = randomTensor({B, heads.q, S, heads.dim}, rng).cast(dtype);
    Tensor k = randomTensor({B, heads.kv, T, heads.dim}, rng).cast(dtype);
    Tensor v = randomTensor({B, heads.kv, T, heads.dim}, rng).cast(dtype);
    Tensor want = ops::attention(q.toF32(), k.toF32(), v.toF32(), scale, causal, nullptr);
    Tensor got(dtype, q.shape());
    abi::KernelArgs args;
    args.buffer(q.raw(), q.numel()).buffer(k.raw(), k.numel()).buffer(v.raw(), v.numel());
    args.buffer(got.raw(), got.numel()).index(S).index(T);
    abi::launch(kernels->lookup(spec.name), args, (S + spec.blockM - 1) / spec.blockM, heads.q, B);
    EXPECT_LT(maxRelError(got.toF32(), want), testing::storageBound(dtype, kF32Bound)) << (causal ? "causal" : "full");
  }
}

TEST_P(AttentionStorage, PagedMatchesReference) {
  const DType dtype = GetParam();
  const Heads heads{8, 2, 128};
  const float scale = 1.f / std::sqrt(128.f);
  std::mt19937 rng(29);
  struct Form {
    int64_t blockSize, queryRows, splits;
  };
  for (Form f : {Form{16, 1, 1}, Form{32, 4, 1}, Form{16, 1, 3}}) {
    tile::AttentionKernelSpec spec = tile::cpuAttentionSpec(heads.q, heads.kv, heads.dim, scale, f.blockSize, f.queryRows);
    spec.kvSplits = f.splits;
    spec.dtype = ops::dtypeName(dtype);
    PagedStep p = makePagedStep(heads, f.blockSize, f.queryRows, scale, rng, dtype);
    EXPECT_LT(maxRelError(runPaged(spec, p, heads, f.blockSize).toF32(), p.want),
              testing::storageBound(dtype, kF32Bound))
        << "block " << f.blockSize << ", " << f.queryRows << " query rows, " << f.splits << " splits";
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, AttentionStorage, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(ops::dtypeName(info.param)); });

TEST(AttentionKernel, RejectsBadSpecs) {
  tile::AttentionKernelSpec s = tile::cpuAttentionSpec(6, 4, 64, 0.125f, 16, 4);
  EXPECT_THROW(tile::emitAttentionKernel(s), Error);
  s = tile::cpuAttentionSpec(4, 4, 64, 0.125f, 16, 4);
  s.keyMask = true;
  EXPECT_THROW(tile::emitAttentionKernel(s), Error);
  s = tile::cpuAttentionSpec(4, 4, 64, 0.125f, 16, 1);
  s.paged = false;
  s.kvSplits = 2;
  EXPECT_THROW(tile::emitAttentionKernel(s), Error);
  s.kvSplits = 1;
  EXPECT_THROW(tile::emitAttentionCombineKernel(s), Error);
  // Grouped heads: the paged decode form only, its rows the group's heads.
  s = tile::cpuGroupedDecodeSpec(8, 2, 64, 0.125f, 16);
  s.kvSplits = 2;
  EXPECT_THROW(tile::emitAttentionKernel(s), Error);
  s = tile::cpuGroupedDecodeSpec(8, 2, 64, 0.125f, 16);
  s.blockM = 2;
  EXPECT_THROW(tile::emitAttentionKernel(s), Error);
}

// The GPU form's spec checks (its kernels run in strata_cuda_tests on a GPU)
// and the --attention-block text.
// The sm_90 blocking table: 128 query rows on 8 warps (2 blocks per SM),
// 64 on 4 (4 per SM) for head dim 64, and the 64-row variants of the
// 128-row kernels for small grids; the tiny head dims keep mma.sync.
TEST(AttentionKernel, GpuBlockingsByShape) {
  tile::AttentionKernelSpec s = tile::cudaAttentionSpec(32, 8, 128, true, "bf16");
  EXPECT_EQ(s.blockM, 128);
  EXPECT_EQ(s.numWarps, 8);
  EXPECT_EQ(s.minBlocksPerSM, 2);
  EXPECT_TRUE(tile::hasFewProgramsVariant(s));
  tile::AttentionKernelSpec f = tile::cudaAttentionSpec(32, 8, 128, true, "bf16", true);
  EXPECT_EQ(f.name, "attention_bf16_h32_kv8_d128_causal_m64");
  EXPECT_EQ(f.blockM, 64);
  EXPECT_EQ(f.numWarps, 4);
  EXPECT_EQ(f.minBlocksPerSM, 2);  // 80 KiB of shared memory a block at head dim 128
  EXPECT_TRUE(f.groupDots);
  EXPECT_NE(tile::emitAttentionKernel(f).find("tile.num_warps = 4"), std::string::npos);
  s = tile::cudaAttentionSpec(32, 32, 64, true, "f16");
  EXPECT_EQ(s.name, "attention_f16_h32_kv32_d64_causal");
  EXPECT_EQ(s.blockM, 64);
  EXPECT_EQ(s.minBlocksPerSM, 4);
  EXPECT_FALSE(tile::hasFewProgramsVariant(s));
  s = tile::cudaAttentionSpec(32, 32, 64, false, "f16");  // head dim 64 without the mask: 64 rows too
  EXPECT_EQ(s.blockM, 64);
  EXPECT_EQ(s.minBlocksPerSM, 4);
  EXPECT_FALSE(tile::hasFewProgramsVariant(s));
  EXPECT_EQ(tile::cudaPagedPrefillSpec(32, 8, 128, 16, "bf16").blockM, 128);
  f = tile::cudaPagedPrefillSpec(32, 8, 128, 16, "bf16", true);  // short prompts
  EXPECT_EQ(f.name, "paged_prefill_bf16_h32_kv8_d128_p16_m64");
  EXPECT_EQ(f.blockM, 64);
  EXPECT_TRUE(f.paged);
  s = tile::cudaAttentionSpec(4, 2, 16, true, "bf16");  // not whole 64-column panels: mma.sync
  EXPECT_FALSE(s.groupDots);
  EXPECT_FALSE(tile::hasFewProgramsVariant(s));
}

// The contiguous warpgroup-dot form copies by TMA: Q, K and V through the
// three tensor maps after T, one box a head-dim panel, the K / V boxes at
// (panel column, key, batch x KV head). Its stages keep one phase count over
// both key loops, so its copies ahead go out once, before the first loop,
// and both loops number their blocks from the program's first key and copy
// up to its last. The paged forms keep cp.async, one pipeline a loop.
TEST(AttentionKernel, ContiguousGroupDotFormCopiesByTma) {
  const tile::AttentionKernelSpec s = tile::cudaAttentionSpec(32, 8, 128, true, "bf16");
  EXPECT_TRUE(s.tma);
  const std::string text = tile::emitAttentionKernel(s);
  EXPECT_NE(text.find("%S: index, %T: index, %qmap: !tile.ptr<i8>, %kmap: !tile.ptr<i8>, %vmap: !tile.ptr<i8>)"),
            std::string::npos);
  EXPECT_NE(text.find("tile.tma_copy %ql1, %qmap[%cPo1, %r0, %bhq], %qbar[%c0]"), std::string::npos);
  EXPECT_NE(text.find("tile.tma_copy %nkl1, %kmap[%cPo1, %nj, %bkh], %bars[%nst]"), std::string::npos);
  EXPECT_NE(text.find("tile.tma_copy %nvl1, %vmap[%cPo1, %nj, %bkh], %bars[%nst]"), std::string::npos);
  EXPECT_NE(text.find("tile.mbarrier_init %bars {arrivals = 4 : i64}"), std::string::npos);  // 2 panels of K and V
  EXPECT_EQ(text.find("tile.async_copy"), std::string::npos);
  EXPECT_EQ(text.find("tile.async_wait"), std::string::npos);
  size_t first = text.find("scf.for %pi = %c0 to %cST1");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(text.find("scf.for %pi", first + 1), std::string::npos);
  size_t masked = text.find("%r2:");
  ASSERT_NE(masked, std::string::npos);
  EXPECT_NE(text.find("%i0 = arith.subi %j, %lo : index", masked), std::string::npos);
  EXPECT_NE(text.find("%nin = arith.cmpi slt, %nj, %hi : index", masked), std::string::npos);
  EXPECT_NE(text.find("tile.mbarrier_wait %bars[%st], %parity", masked), std::string::npos);

  for (const tile::AttentionKernelSpec& c :
       {tile::cudaPagedPrefillSpec(32, 8, 128, 16, "bf16"), tile::cudaPagedDecodeSpec(32, 8, 128, 16, "bf16"),
        tile::cudaAttentionSpec(4, 2, 16, true, "bf16")}) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(c.tma);
    const std::string ct = tile::emitAttentionKernel(c);
    EXPECT_EQ(ct.find("tile.tma_copy"), std::string::npos);
    size_t pre = ct.find("scf.for %pi");
    ASSERT_NE(pre, std::string::npos);
    EXPECT_NE(ct.find("scf.for %pi", pre + 1), std::string::npos);  // the masked loop's own copies ahead
  }
  tile::AttentionKernelSpec bad = tile::cudaPagedPrefillSpec(32, 8, 128, 16, "bf16");
  bad.tma = true;
  EXPECT_THROW(tile::emitAttentionKernel(bad), Error);
}

TEST(AttentionKernel, GpuFormRejectsWhatItCannotRun) {
  auto expectError = [](const tile::AttentionKernelSpec& s, const std::string& part) {
    try {
      tile::emitAttentionKernel(s);
      ADD_FAILURE() << "expected an error containing '" << part << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  tile::AttentionKernelSpec s = tile::cudaAttentionSpec(32, 8, 128, true, "bf16");
  EXPECT_EQ(s.name, "attention_bf16_h32_kv8_d128_causal");
  EXPECT_TRUE(s.groupDots);
  EXPECT_NE(tile::emitAttentionKernel(s).find("tile.num_warps = 8"), std::string::npos);
  s.dtype = "f32";
  expectError(s, "takes f16 or bf16");
  s = tile::cudaAttentionSpec(32, 8, 128, true, "bf16");
  s.paged = true;  // the paged forms copy whole pages: a page size is needed
  s.tma = false;   // and copy them by cp.async
  expectError(s, "the GPU paged forms copy whole pages (keys per step 64, page 0)");
  s.pageSize = 16;
  s.decode = true;  // the decode form needs 16 rows, whole on every warp
  expectError(s, "the GPU decode form packs a KV head's 4 query heads into 16 rows and splits a step's keys over its "
                 "warps, 16 or more each (block M 128, 64 keys per step on 8 warps)");
  s.decode = false;  // the paged prefill form: the contiguous form's blocking over pages
  EXPECT_NO_THROW(tile::emitAttentionKernel(s));
  tile::AttentionKernelSpec d = tile::cudaPagedDecodeSpec(32, 8, 128, 16, "bf16");
  d.kvSplits = 2;  // the decode form takes its split count at launch
  expectError(d, "no compiled-in KV splits");
  d.kvSplits = 1;
  EXPECT_EQ(d.name, "paged_decode_bf16_h32_kv8_d128_p16");
  EXPECT_NE(tile::emitAttentionKernel(d).find("%splits: index"), std::string::npos);
  EXPECT_NE(tile::emitAttentionCombineKernel(d).find("%splits: index"), std::string::npos);
  // Both key loops carry the physical blocks of the next copy's two pages,
  // looked up a step ahead (before each loop for its first in-loop copy).
  const std::string dec = tile::emitAttentionKernel(d);
  EXPECT_NE(dec.find("%cb0 = %r1i0_blk, %cb1 = %r1i1_blk) -> (tensor<16x128xf32>, tensor<16xf32>, tensor<16xf32>, "
                     "index, index)"),
            std::string::npos);
  EXPECT_NE(dec.find("%cb0 = %r2i0_blk, %cb1 = %r2i1_blk)"), std::string::npos);
  EXPECT_NE(dec.find("%n0_b2 = arith.muli %cb0, %c2Hk"), std::string::npos);
  // One warp keeps the rows' layout (the P V hint); the combine follows.
  EXPECT_NE(dec.find("{tiling = \"horizontal\"}"), std::string::npos);
  EXPECT_EQ(dec.find("tile.arrive"), std::string::npos);
  // Several warps share a step's keys (no hint: the paged detector's
  // layout), at least 16 each.
  tile::AttentionKernelSpec w = d;
  w.numWarps = 4, w.blockN = 128, w.stages = 2;
  const std::string wdec = tile::emitAttentionKernel(w);
  EXPECT_NE(wdec.find("tile.num_warps = 4"), std::string::npos);
  EXPECT_EQ(wdec.find("tiling ="), std::string::npos);
  w.blockN = 32;
  expectError(w, "32 keys per step on 4 warps");
  EXPECT_EQ(tile::emitAttentionKernel(s).find("%cb0"), std::string::npos);  // the prefill form looks up in place
  d.pageSize = 24;  // 32 keys per step are not whole pages
  expectError(d, "copy whole pages (keys per step 32, page 24)");
  d = tile::cudaPagedDecodeSpec(32, 1, 128, 16, "bf16");  // 32 query heads per KV head: more than 16 rows
  expectError(d, "packs a KV head's 32 query heads");
  s = tile::cudaAttentionSpec(32, 8, 128, true, "bf16");
  s.blockM = 72;  // warpgroup dots: 16 rows on each of the 8 warps
  expectError(s, "warpgroup dots need 16 query rows per warp on whole warpgroups (block M 72 on 8 warps)");
  tile::applyAttentionBlocking(s, "96x64x6@2g", "--attention-block");  // 6 warps: not whole warpgroups
  expectError(s, "on whole warpgroups (block M 96 on 6 warps)");
  tile::applyAttentionBlocking(s, "64x64x4@2g", "--attention-block");
  EXPECT_TRUE(s.groupDots);
  EXPECT_FALSE(s.qInRegisters);
  EXPECT_NO_THROW(tile::emitAttentionKernel(s));
  s.headDim = 96;  // not whole 64-column panels
  expectError(s, "a head dim of 64-column panels (got 96)");
  s.headDim = 128;
  tile::applyAttentionBlocking(s, "64x32x2@3q", "--attention-block");
  EXPECT_EQ(s.blockM, 64);
  EXPECT_EQ(s.blockN, 32);
  EXPECT_EQ(s.numWarps, 2);
  EXPECT_EQ(s.stages, 3);
  EXPECT_FALSE(s.qInRegisters);
  EXPECT_FALSE(s.groupDots);
  EXPECT_NO_THROW(tile::emitAttentionKernel(s));
  s.blockM = 72;
  expectError(s, "multiple of 16 query rows per warp");
  EXPECT_EQ(s.minBlocksPerSM, 2);  // kept without ":B"
  tile::applyAttentionBlocking(s, "128x64x8@2g:3", "--attention-block");
  EXPECT_EQ(s.minBlocksPerSM, 3);
  EXPECT_TRUE(s.groupDots);
  for (const char* bad : {"64x32x2", "64x32x2@1", "64x32@2", "64x32x2@2x", "128x64x8@2g:", "128x64x8@2g:x",
                          "128x64x8@2g:-1", "128x64x8@2g:3:4"})
    EXPECT_THROW(tile::applyAttentionBlocking(s, bad, "--attention-block"), Error) << bad;
}

}  // namespace
}  // namespace strata
