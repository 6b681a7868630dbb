// The device interface (runtime/device.h) on the devices every machine has:
// the cpu device (a host kernel launched, recorded, replayed, branches side
// by side) and the null device, on which the GPU executor runs the
// tiny-llama GPU artifact built with the project (launch plan, step
// replays) without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ops/error.h"
#include "runtime/artifact.h"
#include "runtime/devices/cpu/device.h"
#include "runtime/devices/level_zero/driver.h"
#include "runtime/devices/registry.h"
#include "runtime/devices/null/device.h"
#include "runtime/gpu_executor.h"
#include "runtime/paged_generate.h"

using namespace strata;
using runtime::KernelHandle;
using runtime::LaunchShape;

namespace {

// A host kernel in the packed ABI (ops/abi.h): y[p] += a x[p] for program
// p; slots: buffer x (5), buffer y (5), a, then the program ids.
extern "C" void strata_test_axpy(void** args) {
  const float* x = *static_cast<float**>(args[1]);
  float* y = *static_cast<float**>(args[6]);
  const float a = *static_cast<float*>(args[10]);
  const int64_t p = *static_cast<int64_t*>(args[11]);
  y[p] += a * x[p];
}

const KernelHandle kAxpy{reinterpret_cast<const void*>(&strata_test_axpy)};

TEST(CpuDevice, LaunchesRecordsAndReplays) {
  runtime::Device& d = runtime::cpuDevice();
  const int64_t n = 37;
  std::vector<float> x(n), y(n, 1.f);
  for (int64_t i = 0; i < n; ++i) x[i] = float(i);
  strata::abi::KernelArgs args;
  args.buffer(x.data(), n).buffer(y.data(), n).f32(2.f);
  const LaunchShape shape{{unsigned(n), 1, 1}, {1, 1, 1}, 0};
  auto expect = [&](float times) {
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 1.f + times * 2.f * x[i]) << i;
  };
  d.launch(kAxpy, shape, args);
  expect(1);
  // Recorded only: nothing runs; the record holds the arguments' bytes.
  runtime::LaunchRecord r = d.record([&] { d.launch(kAxpy, shape, args); });
  expect(1);
  ASSERT_EQ(r.launches.size(), 1u);
  EXPECT_EQ(r.launches[0].kernel, kAxpy);
  EXPECT_EQ(r.launches[0].argOffsets.size(), args.slots().size());
  EXPECT_TRUE(r.launchesOnly);
  // Recorded while enqueued: runs once and records the same launch.
  EXPECT_EQ(d.record([&] { d.launch(kAxpy, shape, args); }, /*enqueue=*/true), r);
  expect(2);
  // A replay runs the recorded launch on the recorded arguments.
  std::unique_ptr<runtime::Replay> replay = d.replayable(r);
  replay->launch();
  replay->launch();
  expect(4);
  EXPECT_EQ(replay->earlyEdges(), 0u);
  EXPECT_GE(d.timeMs([&] { replay->launch(); }), 0.f);
  expect(5);
}

// Branches side by side: a fork in the record, each branch after what came
// before, and what follows after every branch's last launch.
TEST(CpuDevice, RecordsBranchesAsForks) {
  runtime::Device& d = runtime::cpuDevice();
  std::vector<float> x(8, 1.f), y(8, 0.f);
  strata::abi::KernelArgs args;
  args.buffer(x.data(), 8).buffer(y.data(), 8).f32(1.f);
  const LaunchShape shape{{8, 1, 1}, {1, 1, 1}, 0};
  auto one = [&] { d.launch(kAxpy, shape, args); };
  runtime::LaunchRecord r = d.record([&] {
    one();
    d.concurrently({[&] { one(), one(); }, one});
    one();
  });
  ASSERT_EQ(r.launches.size(), 5u);
  ASSERT_EQ(r.forks.size(), 1u);
  EXPECT_EQ(r.forks[0].begin, 1u);
  EXPECT_EQ(r.forks[0].ends, (std::vector<size_t>{3, 4}));
  EXPECT_EQ(r.launches[1].deps, std::vector<size_t>{0});
  EXPECT_EQ(r.launches[2].deps, std::vector<size_t>{1});
  EXPECT_EQ(r.launches[3].deps, std::vector<size_t>{0});
  EXPECT_EQ(r.launches[4].deps, (std::vector<size_t>{2, 3}));
  d.replayable(r)->launch();
  for (float v : y) EXPECT_EQ(v, 5.f);
}

// Copies and downloads inside a record: refused when the record only
// records (they would run before the recorded launches), noted when it
// also enqueues (and such a record cannot be replayed).
TEST(CpuDevice, CopiesInsideARecord) {
  runtime::Device& d = runtime::cpuDevice();
  std::vector<float> a(4, 1.f), b(4, 0.f);
  try {
    d.record([&] { d.copy(b.data(), a.data(), 16); });
    ADD_FAILURE() << "a copy was recorded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("copy while recording"), std::string::npos) << e.what();
  }
  runtime::LaunchRecord r = d.record([&] { d.copy(b.data(), a.data(), 16); }, /*enqueue=*/true);
  EXPECT_FALSE(r.launchesOnly);
  EXPECT_EQ(b, a);
  EXPECT_THROW(d.replayable(r), Error);
}

// What the cpu device does not have says so.
TEST(CpuDevice, RefusesWhatItLacks) {
  runtime::CpuDevice d;
  EXPECT_NE(d.cannotRun("sm_90"), "");
  try {
    d.tensorMap({}, "gemm g (A)");
    ADD_FAILURE() << "the cpu device made a tensor map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gemm g (A): the cpu device has no tensor maps"), std::string::npos)
        << e.what();
  }
  try {
    d.loadExecutable("not a shared library");
    ADD_FAILURE() << "loaded garbage";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load kernel library"), std::string::npos) << e.what();
  }
}

// The null device's tensor maps: one address per distinct request, the same
// one when a request repeats (a kernel set's launches ask again and again).
TEST(NullDevice, KeepsOneTensorMapPerRequest) {
  runtime::NullDevice d(runtime::NullDeviceShape{uint64_t(1) << 30});
  int dummy[2];
  const void* a = d.tensorMap({&dummy[0], true, 256, 64, 128}, "a");
  const void* b = d.tensorMap({&dummy[1], true, 256, 64, 128}, "b");
  const void* c = d.tensorMap({&dummy[0], false, 256, 64, 128}, "c");
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(d.tensorMap({&dummy[0], true, 256, 64, 128}, "a again"), a);
  EXPECT_EQ(d.tensorMapCount(), 3u);
}

// The GPU executor on the null device: the tiny-llama artifact compiled
// for sm_90 loads (kernel set, weights), a prefill and decode steps launch
// their kernels, repeated decode steps run as one replay with the same
// launches as without replays, and the logits (zeros: the null device
// holds no data) come back in the graph's shape.
TEST(NullDevice, RunsTheGpuExecutorsLaunchPlan) {
  {
    // The CUDA target's regions: each layer's q / k RoPE and KV write are
    // one region.rope_kv_write (graph-fuse-rope-kv-write), with its kernel.
    const runtime::Artifact a = runtime::loadArtifact(STRATA_CUDA_MODEL_DIR, {STRATA_FIXTURE_DIR});
    std::map<std::string, int64_t> ops;
    for (const auto& n : a.graph.nodes) ++ops[n.op];
    EXPECT_EQ(ops["region.rope_kv_write"], 2);  // one a layer
    EXPECT_EQ(ops["region.rope"] + ops["region.kv_write"], 0);
  }
  auto run = [](bool graphs, std::vector<uint64_t>& launchesPerStep) {
    runtime::Artifact a = runtime::loadArtifact(STRATA_CUDA_MODEL_DIR, {STRATA_FIXTURE_DIR});
    const int64_t blockSize = a.blockSize;
    auto owned = std::make_unique<runtime::NullDevice>(runtime::NullDeviceShape{uint64_t(8) << 30, 132, 228 << 10});
    runtime::NullDevice& dev = *owned;
    runtime::GpuModel m = runtime::loadGpuModel(std::move(a), std::move(owned), {.graphs = graphs});
    EXPECT_EQ(&m.exec->cacheDevice(), &dev);
    runtime::PagedKvCache cache(runtime::kvCacheShapeFor(*m.exec, blockSize, 8), m.exec->cacheDevice());
    runtime::PagedModel pm(*m.exec, cache);
    std::vector<int64_t> next = {1, 45, 496, 310, 12};  // the vocabulary has 512 ids
    int64_t context = 0;
    for (int step = 0; step < 12; ++step) {
      context += int64_t(next.size());
      EXPECT_TRUE(cache.reserve(0, context));
      const uint64_t before = dev.launches();
      ops::Tensor logits = pm.step({{0, next}});
      launchesPerStep.push_back(dev.launches() - before);
      EXPECT_GT(launchesPerStep.back(), 0u) << "step " << step;
      EXPECT_TRUE(std::all_of(logits.data<float>(), logits.data<float>() + logits.numel(),
                              [](float v) { return v == 0.f; }));
      next = {3};
    }
    return m.exec->graphSteps();
  };
  std::vector<uint64_t> replayed, launched;
  EXPECT_GE(run(true, replayed), 8);
  EXPECT_EQ(run(false, launched), 0);
  EXPECT_EQ(replayed, launched);
  // A decode step launches fewer kernels than the prefill (one token, no
  // prefill attention path), and every decode step the same.
  EXPECT_LT(launched[2], launched[0]);
  EXPECT_TRUE(std::all_of(launched.begin() + 2, launched.end(), [&](uint64_t n) { return n == launched[2]; }));
}

// A GGUF file's block-quantized weights on the GPU plan (tiny-q8_0 and
// tiny-q4_k_m.gguf compiled for sm_90): loading packs every quantized GEMM
// weight in its GPU form (Q4_K_M's gate and up, Q4_K, and its Q6_K
// weights take their own forms), and every GEMM node of a prefill and of
// decode steps finds its form's GEMV and launches with the scale buffers
// and, for a norm prologue, the norm weight (the launcher checks each
// buffer's presence and alignment).
TEST(NullDevice, RunsAQuantizedGgufsLaunchPlan) {
  for (const char* type : {"q8_0", "q4_k_m"}) {
    SCOPED_TRACE(type);
    runtime::Artifact a =
        runtime::loadArtifact(std::string(STRATA_CUDA_MODELS_DIR) + "/tiny-" + type + "-bf16", {STRATA_GGUF_DIR});
    int64_t quantized = 0;
    for (const auto& w : a.graph.weights) quantized += !w.quant.empty();
    EXPECT_EQ(quantized, 9);  // 7 matrices, the embedding and the head
    // The CUDA target's regions: every RMSNorm is its GEMMs' prologue
    // (graph-fuse-gemm-norm), which the integer GEMVs' quantize_rows takes.
    int64_t norms = 0, prologues = 0;
    for (const auto& n : a.graph.nodes) {
      norms += n.op == "region.rmsnorm";
      prologues += n.op == "region.gemm" && n.attrs.value("norm", 0) != 0;
    }
    EXPECT_EQ(norms, 0);
    EXPECT_EQ(prologues, 3);  // the layer's q / k / v and gate / up, the lm_head
    const int64_t blockSize = a.blockSize;
    auto owned = std::make_unique<runtime::NullDevice>(runtime::NullDeviceShape{uint64_t(8) << 30, 132, 228 << 10});
    runtime::NullDevice& dev = *owned;
    runtime::GpuModel m = runtime::loadGpuModel(std::move(a), std::move(owned), {});
    runtime::PagedKvCache cache(runtime::kvCacheShapeFor(*m.exec, blockSize, 8), m.exec->cacheDevice());
    runtime::PagedModel pm(*m.exec, cache);
    std::vector<int64_t> next = {1, 45, 496, 310, 12};
    int64_t context = 0;
    auto gemmLaunches = [&] {
      uint64_t n = 0;
      for (const auto& [name, count] : dev.launchesByKernel()) n += name.rfind("gemm_", 0) == 0 ? count : 0;
      return n;
    };
    for (int step = 0; step < 4; ++step) {
      context += int64_t(next.size());
      EXPECT_TRUE(cache.reserve(0, context));
      const uint64_t before = dev.launches(), gemmsBefore = gemmLaunches();
      pm.step({{0, next}});
      EXPECT_GT(dev.launches(), before) << "step " << step;
      // A decode step's q / k / v weights, all Q8_0, lie back to back
      // (joinQuantSiblingWeights): one GEMV launch for all three, so one
      // per GEMM node (q / k / v, o, gate / up, down, the lm_head).
      if (step > 0 && std::string(type) == "q8_0") EXPECT_EQ(gemmLaunches() - gemmsBefore, 5u) << "step " << step;
      next = {3};
    }
  }
}

// Level Zero discovery never crashes: without an Intel GPU (no loader, or
// a loader whose zeInit fails: nothing else is called after that) every
// entry point gives the same "no Level Zero device: ..." answer, and
// --backend xe stops with it; with one, each GPU reports a name, EUs and
// memory, and the level_zero device opens on the first.
TEST(LevelZero, DiscoveryAnswersWithoutCrashing) {
  namespace lz = runtime::level_zero;
  EXPECT_EQ(lz::resultName(0x78000001), "ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)");
  const std::string why = lz::unavailable();
  auto openError = [] {
    try {
      runtime::openGpuDevice("xe:pvc");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  if (!why.empty()) {
    EXPECT_EQ(why.rfind("no Level Zero device: ", 0), 0u) << why;
    EXPECT_EQ(lz::unavailable(), why);  // zeInit ran once; the second answer is the first
    EXPECT_EQ(runtime::gpuDeviceUnavailable("level_zero"), why);
    EXPECT_THROW(lz::gpus(), Error);
    EXPECT_EQ(openError(), why);
    return;
  }
  std::vector<lz::GpuInfo> gpus = lz::gpus();
  ASSERT_FALSE(gpus.empty());
  for (const lz::GpuInfo& g : gpus) {
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.eus, 0u) << lz::describe(g);
    EXPECT_GT(g.memoryBytes, 0u) << lz::describe(g);
  }
  EXPECT_EQ(openError(), "opened");
}

// Intel GPUs by PCI device id: the xe part whose kernels they run.
TEST(LevelZero, DeviceIdsNameTheirPart) {
  namespace lz = runtime::level_zero;
  EXPECT_EQ(lz::xePart(0x0BD5), "pvc");  // Data Center GPU Max 1550
  EXPECT_EQ(lz::xePart(0x0BDA), "pvc");  // Max 1100
  EXPECT_EQ(lz::xePart(0xE20B), "bmg");  // Arc B580
  EXPECT_EQ(lz::xePart(0x64A0), "bmg");  // Lunar Lake (Xe2)
  EXPECT_EQ(lz::xePart(0x56A0), "dg2");  // Arc A770
  EXPECT_EQ(lz::xePart(0x9A49), "");     // Tiger Lake (Xe-LP): no DPAS
  EXPECT_EQ(lz::xePart(0x0BDC), "");
}

}  // namespace
