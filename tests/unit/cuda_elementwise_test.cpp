// Conformance of the fused elementwise kernels on the GPU: the chains of
// tests/unit/elementwise_chains.h at ragged widths (a lone tail column up to
// a 128256-wide vocabulary row), compiled for sm_90 with the project
// (build/cuda-models/elementwise-<dtype>, or under $STRATA_CUDA_MODELS;
// tests/gpu/compile_elementwise_models.cpp), run by the CUDA executor on
// ragged row counts against the reference executor on the unfused graph.
// The reference sees what the GPU stores: inputs and float constants
// rounded to the storage type. Each output element may then differ by the
// f32 arithmetic's error (1e-4 of the output's largest magnitude) plus one
// unit in the last place of the storage type at its value (its rounding;
// absolute near zero, where f16 goes subnormal: a softmax over 128256
// columns stores values near 1e-5). Runtime only; skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "runtime/artifact.h"
#include "runtime/devices/registry.h"
#include "runtime/gpu_executor.h"
#include "runtime/executor.h"
#include "tests/unit/conformance.h"
#include "tests/unit/elementwise_chains.h"

using namespace strata;

namespace {

std::string artifactDir(const std::string& dtype) {
  const char* env = std::getenv("STRATA_CUDA_MODELS");
  return std::string(env && *env ? env : STRATA_CUDA_MODELS_DIR) + "/elementwise-" + dtype;
}

using strata::testing::stored;

class CudaElementwise : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaElementwise, MatchesTheReferenceOnRaggedShapes) {
  std::string why = runtime::gpuDeviceUnavailable("cuda");
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  runtime::Artifact a = runtime::loadArtifact(artifactDir(GetParam()));
  const std::vector<int64_t> widths = a.graph.meta.at("widths").get<std::vector<int64_t>>();
  for (const auto& n : a.graph.nodes) ASSERT_EQ(n.op, "region.elementwise") << n.name;
  const ops::DType dt = ops::parseDType(GetParam());
  runtime::GpuModel m = runtime::loadGpuModel(std::move(a));

  ops::GraphDef unfused = tests::allChains(widths);
  for (auto& c : unfused.constants)
    if (c.value.dtype() == ops::DType::F32) c.value = stored(c.value, dt);
  runtime::Executor ref(unfused);
  std::mt19937 rng(7);
  for (int64_t rows : {1, 3, 37}) {
    runtime::TensorMap in, inRef;
    for (auto& [name, shape] : tests::allChainShapes(widths, rows)) {
      in[name] = strata::testing::randomTensor(shape, rng, -2.f, 2.f);
      inRef[name] = stored(in[name], dt);
    }
    auto want = ref.run(inRef);
    auto got = m.exec->run(in);
    for (const auto& o : unfused.outputs) {
      SCOPED_TRACE(fmt::format("{}: output {}, rows {}", GetParam(), o.name, rows));
      ASSERT_EQ(got.at(o.name).shape(), want.at(o.name).shape());
      EXPECT_LE(strata::testing::worstStoredError(got.at(o.name), want.at(o.name), dt), 1.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaElementwise, ::testing::Values("bf16", "f16"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
