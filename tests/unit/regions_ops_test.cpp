// Region reference kernels against the unfused ops/ references on random
// ragged shapes: paged attention over shuffled (non-contiguous) block tables
// vs. contiguous attention (GQA 1/4/8, head dims 64/128, block sizes 16/32,
// several sequences of different lengths in one call), GEMM regions vs.
// matmul/linear with their epilogues, token-major rope vs. head-major rope.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "ops/reference.h"
#include "ops/regions.h"

using namespace strata::ops;

namespace {

Tensor randomF32(Shape s, std::mt19937& rng) {
  Tensor t(DType::F32, s);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.mut<float>()[i] = u(rng);
  return t;
}

float maxRelErr(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  float err = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    err = std::max(err, std::abs(a.data<float>()[i] - b.data<float>()[i]) / (1.f + std::abs(b.data<float>()[i])));
  return err;
}

// [1, T, H * D] token-major <-> [1, H, T, D] head-major.
Tensor toHeadMajor(const Tensor& x, int64_t H) {
  int64_t T = x.dim(1), D = x.dim(2) / H;
  return transpose(x.reshaped({1, T, H, D}), {0, 2, 1, 3});
}

struct PagedCase {
  int64_t heads, kvHeads, headDim, blockSize;
};

class PagedAttentionConformance : public ::testing::TestWithParam<PagedCase> {};

TEST_P(PagedAttentionConformance, MatchesContiguousAttention) {
  auto [H, KV, D, BS] = GetParam();
  std::mt19937 rng(H * 1000 + KV * 100 + D + BS);
  // Three sequences: (cached, new) tokens, ragged on purpose.
  std::vector<std::pair<int64_t, int64_t>> seqs = {{37, 5}, {0, 19}, {70, 1}};
  int64_t maxCtx = 0, totalBlocks = 0;
  for (auto [p, n] : seqs) maxCtx = std::max(maxCtx, p + n), totalBlocks += (p + n + BS - 1) / BS;
  int64_t maxBlocks = (maxCtx + BS - 1) / BS, numBlocks = totalBlocks + 3;
  // Shuffled block ids: tables are not contiguous and not in order.
  std::vector<int64_t> pool(numBlocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  Tensor cache(DType::F32, {numBlocks, 2, KV, BS, D});
  std::vector<int64_t> tables(seqs.size() * maxBlocks, -1), starts{0}, ctx, allSlots;
  std::vector<Tensor> qs, ks, vs;
  size_t next = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    auto [P, N] = seqs[s];
    for (int64_t b = 0; b < (P + N + BS - 1) / BS; ++b) tables[s * maxBlocks + b] = pool[next++];
    Tensor k = randomF32({1, P + N, KV * D}, rng), v = randomF32({1, P + N, KV * D}, rng);
    std::vector<int64_t> slots;
    for (int64_t p = 0; p < P + N; ++p) slots.push_back(tables[s * maxBlocks + p / BS] * BS + p % BS);
    kvWrite(cache, k, v, Tensor::fromI64(slots));  // cached and new tokens alike
    qs.push_back(randomF32({1, N, H * D}, rng));
    ks.push_back(k), vs.push_back(v);
    starts.push_back(starts.back() + N);
    ctx.push_back(P + N);
  }
  Tensor q = concat(qs, 1);
  Tensor out = pagedAttention(q, cache, Tensor::fromI64(tables, {(int64_t)seqs.size(), maxBlocks}), Tensor::fromI64(starts),
                              Tensor::fromI64(ctx), {H, KV, D, 1.f / std::sqrt((float)D)});
  for (size_t s = 0; s < seqs.size(); ++s) {
    Tensor want = attention(toHeadMajor(qs[s], H), toHeadMajor(ks[s], KV), toHeadMajor(vs[s], KV),
                            1.f / std::sqrt((float)D), true);
    Tensor got = toHeadMajor(slice(out, {starts[s]}, {starts[s + 1]}, {1}, {1}), H);
    EXPECT_LT(maxRelErr(got, want), 1e-5f) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttentionConformance,
                         ::testing::Values(PagedCase{4, 4, 64, 16}, PagedCase{8, 2, 64, 32}, PagedCase{8, 1, 128, 16},
                                           PagedCase{16, 2, 128, 32}),
                         [](const auto& i) {
                           return "h" + std::to_string(i.param.heads) + "_kv" + std::to_string(i.param.kvHeads) + "_d" +
                                  std::to_string(i.param.headDim) + "_bs" + std::to_string(i.param.blockSize);
                         });

TEST(PagedAttention, BadMetadataIsAnError) {
  Tensor cache(DType::F32, {2, 2, 1, 4, 8}), q(DType::F32, {1, 3, 8});
  PagedAttentionSpec spec{1, 1, 8, 1.f};
  // Context longer than the table's blocks.
  EXPECT_THROW(pagedAttention(q, cache, Tensor::fromI64({0}, {1, 1}), Tensor::fromI64({0, 3}), Tensor::fromI64({9}), spec),
               strata::Error);
  // Block id outside the cache.
  EXPECT_THROW(pagedAttention(q, cache, Tensor::fromI64({5}, {1, 1}), Tensor::fromI64({0, 3}), Tensor::fromI64({3}), spec),
               strata::Error);
  // seq_starts not covering the tokens.
  EXPECT_THROW(pagedAttention(q, cache, Tensor::fromI64({0}, {1, 1}), Tensor::fromI64({0, 2}), Tensor::fromI64({3}), spec),
               strata::Error);
  EXPECT_THROW(kvWrite(cache, Tensor(DType::F32, {1, 1, 8}), Tensor(DType::F32, {1, 1, 8}), Tensor::fromI64({8})),
               strata::Error);
}

TEST(GemmRegion, MatchesMatmulLinearAndEpilogues) {
  std::mt19937 rng(5);
  Tensor x = randomF32({1, 13, 37}, rng);  // ragged on purpose
  Tensor wkn = randomF32({37, 29}, rng), wnk = randomF32({29, 37}, rng), w2 = randomF32({37, 29}, rng);
  Tensor bias = randomF32({29}, rng), res = randomF32({1, 13, 29}, rng);
  EXPECT_LT(maxRelErr(gemmRegion(x, {wkn}, {}, nullptr, nullptr, {})[0], matmul(x, wkn)), 1e-6f);
  EXPECT_LT(maxRelErr(gemmRegion(x, {wnk}, {bias}, nullptr, nullptr, {true})[0], linear(x, wnk, &bias)), 1e-6f);
  auto two = gemmRegion(x, {wkn, w2}, {}, nullptr, nullptr, {});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_LT(maxRelErr(two[1], matmul(x, w2)), 1e-6f);
  Tensor swiglu = gemmRegion(x, {wkn, w2}, {}, nullptr, nullptr, {false, GemmEpilogue::SwiGLU})[0];
  EXPECT_LT(maxRelErr(swiglu, binary(BinaryOp::Mul, unary(UnaryOp::Silu, matmul(x, wkn)), matmul(x, w2))), 1e-5f);
  Tensor withRes = gemmRegion(x, {wkn}, {}, &res, nullptr, {})[0];
  EXPECT_LT(maxRelErr(withRes, binary(BinaryOp::Add, res, matmul(x, wkn))), 1e-6f);
  Tensor rows = Tensor::fromI64({12, 0, 5});
  Tensor picked = gemmRegion(x, {wkn}, {}, nullptr, &rows, {})[0];
  EXPECT_EQ(picked.shape(), (Shape{1, 3, 29}));
  EXPECT_LT(maxRelErr(picked, matmul(gather(x, rows, 1), wkn)), 1e-6f);
  EXPECT_THROW(gemmRegion(x, {wnk}, {}, nullptr, nullptr, {}), strata::Error);  // wrong layout
}

TEST(RopeTokens, MatchesHeadMajorRope) {
  std::mt19937 rng(9);
  int64_t H = 3, D = 16, T = 11;
  Tensor x = randomF32({1, T, H * D}, rng);
  std::vector<int64_t> pos(T);
  for (int64_t i = 0; i < T; ++i) pos[i] = 40 + 3 * i;
  Tensor p = Tensor::fromI64(pos, {1, T});
  Tensor got = toHeadMajor(ropeTokens(x, p, D, 10000.f), H);
  EXPECT_EQ(maxRelErr(got, rope(toHeadMajor(x, H), p, 10000.f)), 0.f);  // same arithmetic, bit for bit
}

// Partial rotary: the token-major and head-major forms agree bit for bit,
// the dims past the rotary ones are x's, and the rotary ones are the full
// rope of a head that is only those dims (frequencies over R, not D).
TEST(RopeTokens, PartialRotaryRotatesTheFirstDimsOnly) {
  std::mt19937 rng(10);
  int64_t H = 2, D = 16, R = 8, T = 5;
  Tensor x = randomF32({1, T, H * D}, rng);
  std::vector<int64_t> pos(T);
  for (int64_t i = 0; i < T; ++i) pos[i] = 7 * i;
  Tensor p = Tensor::fromI64(pos, {1, T});
  Tensor got = ropeTokens(x, p, D, 10000.f, R);
  EXPECT_EQ(maxRelErr(toHeadMajor(got, H), rope(toHeadMajor(x, H), p, 10000.f, R)), 0.f);
  Tensor first(DType::F32, {1, T, H * R});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < D; ++i) {
        const float xi = x.data<float>()[(t * H + h) * D + i], gi = got.data<float>()[(t * H + h) * D + i];
        if (i >= R) EXPECT_EQ(gi, xi) << "pass-through dim " << i;
        else first.mut<float>()[(t * H + h) * R + i] = xi;
      }
  Tensor rotated = ropeTokens(first, p, R, 10000.f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < R; ++i)
        EXPECT_EQ(got.data<float>()[(t * H + h) * D + i], rotated.data<float>()[(t * H + h) * R + i]);
  EXPECT_THROW(ropeTokens(x, p, D, 10000.f, 7), strata::Error);   // odd
  EXPECT_THROW(ropeTokens(x, p, D, 10000.f, 18), strata::Error);  // past the head
}

}  // namespace
