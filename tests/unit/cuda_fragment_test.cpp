// Lowerings of convert-tile-to-nvvm that no product kernel runs yet,
// checked on the GPU through compiler test kernels (tests/gpu/*.mlir,
// compiled into build/cuda-test-kernels/test_kernels.ptx, or the file in
// $STRATA_CUDA_TEST_KERNELS) against a host computation. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "ops/abi.h"
#include "ops/tensor.h"
#include "runtime/devices/cuda/device.h"
#include "tests/unit/cuda_device_tensor.h"

using namespace strata;
using runtime::CudaDevice;

namespace {

std::string testKernels() {
  const char* env = std::getenv("STRATA_CUDA_TEST_KERNELS");
  std::string path = env && *env ? env : STRATA_CUDA_TEST_KERNELS;
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot read the test kernels " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/gpu/fragment_reductions.mlir: S = A B (bf16 [16, 32] x [32, 32]),
// m = row max of S, D = S - m, column sums of D.
TEST(CudaFragmentReductions, RowMaxAndColumnSumsOfAnAccumulatorMatchTheHost) {
  std::string why = CudaDevice::unavailable();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  auto dev = CudaDevice::open();
  auto module = dev->loadExecutable(testKernels());
  auto fn = module->kernel("fragment_reductions");

  const int64_t M = 16, K = 32, N = 32;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> a(M * K), b(K * N);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  ops::Tensor a16 = ops::Tensor::fromF32(a, {M, K}).cast(ops::DType::BF16);
  ops::Tensor b16 = ops::Tensor::fromF32(b, {K, N}).cast(ops::DType::BF16);
  ops::Tensor a32 = a16.toF32(), b32 = b16.toF32();
  const float* af = a32.data<float>();
  const float* bf = b32.data<float>();

  // Host: the same arithmetic on the rounded inputs in f64.
  std::vector<double> s(M * N, 0.0), m(M, -INFINITY), d(M * N), cs(N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t k = 0; k < K; ++k) s[i * N + j] += double(af[i * K + k]) * bf[k * N + j];
      m[i] = std::max(m[i], s[i * N + j]);
    }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      d[i * N + j] = s[i * N + j] - m[i];
      cs[j] += d[i * N + j];
    }

  strata::testing::DeviceTensor da(*dev, a16), db(*dev, b16), dd(*dev, M * N * 4), dm(*dev, M * 4), dc(*dev, N * 4);
  strata::abi::KernelArgs args;
  args.buffer(da.p, M * K).buffer(db.p, K * N).buffer(dd.p, M * N).buffer(dm.p, M).buffer(dc.p, N);
  dev->launch(fn, {{1, 1, 1}, {32, 1, 1}, 0}, args);
  std::vector<float> gd(M * N), gm(M), gc(N);
  dev->download(gd.data(), dd.p, gd.size() * 4);
  dev->download(gm.data(), dm.p, gm.size() * 4);
  dev->download(gc.data(), dc.p, gc.size() * 4);

  // f32 sums over K = 32 products of values below 4: differences from the
  // f64 host are order rounding, well under 1e-4 relative to 1 + |ref|.
  auto close = [](double got, double want) { return std::fabs(got - want) / (1 + std::fabs(want)) < 1e-4; };
  for (int64_t i = 0; i < M; ++i) EXPECT_PRED2(close, gm[i], m[i]) << "row max " << i;
  for (int64_t i = 0; i < M * N; ++i) EXPECT_PRED2(close, gd[i], d[i]) << "S - max at " << i / N << ", " << i % N;
  for (int64_t j = 0; j < N; ++j) EXPECT_PRED2(close, gc[j], cs[j]) << "column sum " << j;
}

}  // namespace
