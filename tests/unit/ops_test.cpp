// Reference kernels on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/reference.h"

using namespace strata::ops;

namespace {
std::vector<float> f32(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }
std::vector<int64_t> i64(const Tensor& t) { return t.toI64Vector(); }
Tensor randomF32(Shape s, uint32_t seed) {
  Tensor t(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.mut<float>()[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.f - 0.5f;
  return t;
}
void expectNear(const Tensor& a, const Tensor& b, float tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol) << "at " << i;
}
// [B, S, H * D] -> [B, H, S, D]
Tensor heads(const Tensor& x, int64_t H) {
  return transpose(x.reshaped({x.dim(0), x.dim(1), H, x.dim(2) / H}), {0, 2, 1, 3});
}
}  // namespace

TEST(Elementwise, BroadcastAdd) {
  Tensor a = Tensor::fromF32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::fromF32({10, 20, 30}, {3});
  Tensor c = binary(BinaryOp::Add, a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(f32(c), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor col = Tensor::fromF32({100, 200}, {2, 1});
  EXPECT_EQ(f32(binary(BinaryOp::Mul, a, col)), (std::vector<float>{100, 200, 300, 800, 1000, 1200}));
}

TEST(Elementwise, IncompatibleShapesThrow) {
  EXPECT_THROW(binary(BinaryOp::Add, Tensor(DType::F32, {2, 3}), Tensor(DType::F32, {4})), strata::Error);
  EXPECT_THROW(binary(BinaryOp::Add, Tensor(DType::F32, {2}), Tensor(DType::I64, {2})), strata::Error);
}

TEST(Elementwise, CompareWhereAndLogic) {
  Tensor a = Tensor::fromI64({1, 5, 3});
  Tensor b = Tensor::fromI64({2}, {});
  Tensor le = binary(BinaryOp::LessOrEqual, a, Tensor::fromI64({3}, {}));
  EXPECT_EQ(le.dtype(), DType::Bool);
  EXPECT_EQ(i64(le), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(i64(where(le, a, b)), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(i64(unary(UnaryOp::Not, le)), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(i64(binary(BinaryOp::Mod, Tensor::fromI64({-7, 7}), Tensor::fromI64({3}, {}))), (std::vector<int64_t>{2, 1}));
}

TEST(Elementwise, Unary) {
  Tensor x = Tensor::fromF32({0.f, 4.f}, {2});
  EXPECT_EQ(f32(unary(UnaryOp::Sqrt, x)), (std::vector<float>{0, 2}));
  EXPECT_FLOAT_EQ(f32(unary(UnaryOp::Sigmoid, x))[0], 0.5f);
  EXPECT_FLOAT_EQ(f32(unary(UnaryOp::Silu, x))[1], 4.f / (1.f + std::exp(-4.f)));
}

TEST(DataMovement, ReshapeZeroAndInfer) {
  Tensor x(DType::F32, {2, 3, 4});
  EXPECT_EQ(reshape(x, {0, -1}).shape(), (Shape{2, 12}));
  EXPECT_THROW(reshape(x, {5, -1}), strata::Error);
  EXPECT_THROW(reshape(x, {-1, -1}), strata::Error);
}

TEST(DataMovement, TransposeSliceConcat) {
  Tensor x = Tensor::fromF32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(f32(transpose(x, {1, 0})), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(f32(slice(x, {1}, {INT64_MAX}, {1}, {})), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(f32(slice(x, {-1}, {-4}, {1}, {-1})), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(f32(concat({x, x}, 0)).size(), 12u);
  EXPECT_EQ(f32(concat({x, Tensor::fromF32({9, 9}, {2, 1})}, 1)), (std::vector<float>{1, 2, 3, 9, 4, 5, 6, 9}));
}

TEST(DataMovement, GatherAndGatherND) {
  Tensor table = Tensor::fromF32({0, 1, 10, 11, 20, 21}, {3, 2});
  EXPECT_EQ(f32(gather(table, Tensor::fromI64({2, 0, -1}), 0)), (std::vector<float>{20, 21, 0, 1, 20, 21}));
  EXPECT_THROW(gather(table, Tensor::fromI64({3}), 0), strata::Error);
  Tensor idx = Tensor::fromI64({1, 0, 2, 1}, {2, 2});
  EXPECT_EQ(f32(gatherND(table, idx, 0)), (std::vector<float>{10, 21}));
}

TEST(DataMovement, ExpandRangeCumsumTrilu) {
  EXPECT_EQ(expand(Tensor::fromF32({1, 2}, {2, 1}), {2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(i64(range(Tensor::fromI64({2}, {}), Tensor::fromI64({9}, {}), Tensor::fromI64({3}, {}))),
            (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(i64(cumsum(Tensor::fromI64({1, 2, 3}), 0, false, false)), (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(i64(cumsum(Tensor::fromI64({1, 2, 3}), 0, true, true)), (std::vector<int64_t>{5, 3, 0}));
  EXPECT_EQ(f32(trilu(Tensor::fromF32({1, 2, 3, 4}, {2, 2}), 0, true)), (std::vector<float>{1, 2, 0, 4}));
}

TEST(Linalg, MatmulBatchBroadcast) {
  Tensor a = Tensor::fromF32({1, 2, 3, 4}, {1, 2, 2});
  Tensor b = Tensor::fromF32({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(f32(c), (std::vector<float>{1, 2, 3, 4, 2, 4, 6, 8}));
  EXPECT_THROW(matmul(Tensor(DType::F32, {2, 3}), Tensor(DType::F32, {2, 3})), strata::Error);
}

TEST(Linalg, LinearSoftmaxReduce) {
  Tensor x = Tensor::fromF32({1, 2}, {1, 2});
  Tensor w = Tensor::fromF32({1, 1, 2, -1}, {2, 2});
  Tensor bias = Tensor::fromF32({0.5f, 0}, {2});
  EXPECT_EQ(f32(linear(x, w, &bias)), (std::vector<float>{3.5f, 0}));
  auto s = f32(softmax(Tensor::fromF32({0, std::log(3.f)}, {2}), -1));
  EXPECT_NEAR(s[0], 0.25f, 1e-6);
  EXPECT_NEAR(s[1], 0.75f, 1e-6);
  EXPECT_EQ(f32(reduce(ReduceOp::Mean, Tensor::fromF32({1, 2, 3, 5}, {2, 2}), {-1}, true)), (std::vector<float>{1.5f, 4}));
}

TEST(Llm, RmsNormRopeAttention) {
  auto y = f32(rmsNorm(Tensor::fromF32({3, 4}, {1, 2}), Tensor::fromF32({1, 2}, {2}), 0.f));
  float inv = 1.f / std::sqrt(12.5f);
  EXPECT_NEAR(y[0], 3 * inv, 1e-6);
  EXPECT_NEAR(y[1], 8 * inv, 1e-6);
  // Position 0 leaves x unchanged; position p rotates pair (x0, x1) by p * theta^0.
  Tensor x = Tensor::fromF32({1, 0, 1, 0}, {1, 1, 2, 2});
  auto r = f32(rope(x, Tensor::fromI64({0, 1}, {1, 2}), 10000.f));
  EXPECT_NEAR(r[0], 1, 1e-6);
  EXPECT_NEAR(r[2], std::cos(1.f), 1e-6);
  EXPECT_NEAR(r[3], std::sin(1.f), 1e-6);
  // Causal: the first query sees only the first key; GQA: 2 q heads share 1 kv head.
  Tensor q(DType::F32, {1, 2, 2, 1}), k = Tensor::fromF32({0, 0}, {1, 1, 2, 1}), v = Tensor::fromF32({1, 3}, {1, 1, 2, 1});
  auto o = f32(attention(q, k, v, 1.f, true));
  EXPECT_EQ(o, (std::vector<float>{1, 2, 1, 2}));
}

// The opset-23 / onnxruntime forms agree with strata's ops on the same inputs.
TEST(LlmOnnx, RotaryEmbeddingIsRope) {
  Tensor x = randomF32({2, 3, 5, 8}, 1);
  Tensor pos = Tensor::fromI64({3, 4, 5, 6, 7, 0, 1, 2, 9, 11}, {2, 5});
  Tensor cosT(DType::F32, {12, 4}), sinT(DType::F32, {12, 4});
  for (int64_t p = 0; p < 12; ++p)
    for (int64_t i = 0; i < 4; ++i) {
      float a = (float)p * std::pow(10000.f, -(float)(2 * i) / 8.f);
      cosT.mut<float>()[p * 4 + i] = std::cos(a);
      sinT.mut<float>()[p * 4 + i] = std::sin(a);
    }
  expectNear(rotaryEmbedding(x, cosT, sinT, &pos, false, 0, 3), rope(x, pos, 10000.f), 1e-5f);
  // 3-D input with num_heads gives the same numbers token-major.
  Tensor x3 = transpose(x, {0, 2, 1, 3}).reshaped({2, 5, 24});
  expectNear(heads(rotaryEmbedding(x3, cosT, sinT, &pos, false, 0, 3), 3), rope(x, pos, 10000.f), 1e-5f);
}

TEST(LlmOnnx, Attention23AndGroupQueryAttentionMatchAttention) {
  // 4 query heads on 2 KV heads, 3 cached + 2 new tokens.
  Tensor q = randomF32({1, 2, 32}, 2), k = randomF32({1, 2, 16}, 3), v = randomF32({1, 2, 16}, 4);
  Tensor pk = randomF32({1, 2, 3, 8}, 5), pv = randomF32({1, 2, 3, 8}, 6);
  Tensor kAll = concat({pk, heads(k, 2)}, 2), vAll = concat({pv, heads(v, 2)}, 2);
  Tensor want = attention(heads(q, 4), kAll, vAll, 0.5f, true);
  // Attention-23, 3-D, past inputs, causal through a bool mask [S, T].
  Tensor mask(DType::Bool, {2, 5});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) mask.mut<uint8_t>()[i * 5 + j] = j <= 3 + i;
  auto a = onnxAttention(q, k, v, &mask, &pk, &pv, OnnxAttentionSpec{0.5f, 0.f, false, 4, 2});
  expectNear(heads(a[0], 4), want, 1e-5f);
  expectNear(a[1], kAll, 0.f);
  // GroupQueryAttention with the cache: seqlens_k = 4 (5 tokens after the step).
  auto g = groupQueryAttention(q, k, v, &pk, &pv, Tensor::fromI64({4}, {1}), Tensor::fromI64({5}, {}), nullptr, nullptr,
                               GqaSpec{4, 2, 0.5f, 0.f, false, false, -1});
  expectNear(heads(g[0], 4), want, 1e-5f);
  expectNear(g[1], kAll, 0.f);
  expectNear(g[2], vAll, 0.f);
  // A shorter sequence in a longer cache: seqlens_k = 3 puts the new tokens at 2 and 3.
  auto g2 = groupQueryAttention(q, k, v, &pk, &pv, Tensor::fromI64({3}, {1}), Tensor::fromI64({5}, {}), nullptr, nullptr,
                                GqaSpec{4, 2, 0.5f, 0.f, false, false, -1});
  Tensor k2 = concat({slice(pk, {0}, {2}, {2}, {}), heads(k, 2)}, 2), v2 = concat({slice(pv, {0}, {2}, {2}, {}), heads(v, 2)}, 2);
  expectNear(heads(g2[0], 4), attention(heads(q, 4), k2, v2, 0.5f, true), 1e-5f);
}

TEST(LlmOnnx, FusedMatMulAndRmsNormAxes) {
  Tensor a = randomF32({2, 3, 4}, 7), b = randomF32({2, 5, 4}, 8);
  Tensor want = binary(BinaryOp::Mul, matmul(a, transpose(b, {0, 2, 1})), Tensor::scalarF32(0.25f));
  expectNear(fusedMatMul(a, b, 0.25f, false, true), want, 1e-6f);
  Tensor x = randomF32({2, 3, 4}, 9), w = randomF32({3, 4}, 10);
  Tensor flat = rmsNorm(x.reshaped({2, 12}), w.reshaped({12}), 1e-5f).reshaped({2, 3, 4});
  expectNear(rmsNormAxes(x, w, 1, 1e-5f), flat, 1e-6f);
}

// A view shares storage (q | k | v of one joined GEMM row) and stays inside it.
TEST(Tensor, ViewsShareStorageWithinBounds) {
  Tensor t = Tensor::fromF32({0, 1, 2, 3, 4, 5}, {1, 6});
  Tensor k = t.view(4, {1, 2});
  EXPECT_EQ(k.data<float>(), t.data<float>() + 4);
  EXPECT_EQ(k.data<float>()[1], 5.f);
  EXPECT_THROW(t.view(5, {1, 2}), strata::Error);
  EXPECT_THROW(t.view(-1, {1}), strata::Error);
}

TEST(Tensor, HalfConversions) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
}

// f32 -> f16 / bf16 rounding (what the GPU tests feed the kernels): every
// finite 16-bit value round-trips, ties go to even, overflow is infinity.
TEST(Tensor, FloatToHalfAndBf16RoundToNearestEven) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    ASSERT_EQ(strata::ops::floatToHalf(strata::ops::halfToFloat(uint16_t(h))), h) << std::hex << h;
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
    ASSERT_EQ(strata::ops::floatToBf16(strata::ops::bf16ToFloat(uint16_t(h))), h) << std::hex << h;
  }
  EXPECT_EQ(strata::ops::floatToHalf(1.0f + 1.0f / 2048), 0x3c00);      // tie, even stays
  EXPECT_EQ(strata::ops::floatToHalf(1.0f + 3.0f / 2048), 0x3c02);      // tie, odd rounds up
  EXPECT_EQ(strata::ops::floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(strata::ops::floatToHalf(0x1p-25f), 0x0000);                // half the smallest subnormal: ties to 0
  EXPECT_EQ(strata::ops::floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(strata::ops::floatToBf16(1.0f + 0x1p-8f), 0x3f80);          // tie, even stays
  EXPECT_EQ(strata::ops::floatToBf16(1.0f + 0x3p-8f), 0x3f82);
  Tensor t = Tensor::fromF32({1.5f, -2.0f}, {2}).cast(DType::BF16);
  EXPECT_EQ(t.dtype(), DType::BF16);
  EXPECT_EQ(t.toF32().data<float>()[1], -2.0f);
}
