// The cuda device: on a machine without a GPU (CI), opening it is a clear
// error and the GPU tests skip with the reason; on the GPU machine, memory,
// copies (page-locked uploads that do not wait among them), the paged KV
// cache's copy-on-write in device memory, module loading (with the JIT log
// for bad PTX), launches and event timing, and programmatic launches kept
// in CUDA graphs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "ops/error.h"
#include "runtime/devices/cuda/device.h"
#include "runtime/paged_cache.h"

using namespace strata;
using runtime::CudaDevice;

namespace {

std::unique_ptr<CudaDevice> openOrSkip() {
  std::string why = CudaDevice::unavailable();
  if (!why.empty()) return nullptr;
  return CudaDevice::open();
}

#define SKIP_WITHOUT_GPU(dev)                                                  \
  auto dev = openOrSkip();                                                     \
  if (!dev) GTEST_SKIP() << "no CUDA device: " << CudaDevice::unavailable();

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(CudaDevice, WithoutAGpuOpeningIsAClearError) {
  std::string why = CudaDevice::unavailable();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present";
  try {
    CudaDevice::open();
    ADD_FAILURE() << "opened a CUDA device although: " << why;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device: " + why), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, MemoryAndCopies) {
  SKIP_WITHOUT_GPU(dev);
  EXPECT_GE(dev->computeCapability(), 70);
  EXPECT_GT(dev->computeUnits(), 0);
  std::printf("device: %s, sm_%d, %d SMs, %.1f GiB\n", dev->description().c_str(), dev->computeCapability(),
              dev->computeUnits(), dev->capacity() / 1073741824.0);
  const size_t n = 1 << 20, bytes = n * sizeof(float);
  void* a = dev->allocate(bytes);
  void* b = dev->allocate(bytes);
  EXPECT_EQ(dev->allocated(), 2 * bytes);
  std::vector<float> host(n, 1.0f);
  dev->download(host.data(), b, bytes);  // fresh allocations are zero
  EXPECT_EQ(std::count(host.begin(), host.end(), 0.0f), (long)n);
  std::vector<float> x = randomFloats(n, 1), back(n);
  dev->upload(a, x.data(), bytes);
  dev->copy(b, a, bytes);
  dev->download(back.data(), b, bytes);
  EXPECT_EQ(std::memcmp(back.data(), x.data(), bytes), 0);
  dev->release(a, bytes);
  dev->release(b, bytes);
  EXPECT_EQ(dev->allocated(), 0u);
  EXPECT_THROW(dev->allocate(dev->capacity() * 2), Error);  // names the request and what is free
}

// A thread other than the one that opened the device (a server's engine
// thread) works on it after useOnThisThread; without that call the driver
// has no current context there (what a served model hit first).
TEST(CudaDevice, WorksFromAnotherThreadAfterUseOnThisThread) {
  SKIP_WITHOUT_GPU(dev);
  std::vector<float> x = randomFloats(4096, 3), back(4096);
  std::string error;
  std::thread([&] {
    try {
      dev->useOnThisThread();
      void* a = dev->allocate(x.size() * sizeof(float));
      dev->upload(a, x.data(), x.size() * sizeof(float));
      dev->download(back.data(), a, x.size() * sizeof(float));
      dev->release(a, x.size() * sizeof(float));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(back, x);
}

// Uploads from page-locked memory return before the copy runs; once
// waitForUploads returns, the host bytes may change without reaching the
// device (a graph step refills them each step).
TEST(CudaDevice, UploadsFromPinnedMemoryWithoutWaiting) {
  SKIP_WITHOUT_GPU(dev);
  const size_t n = 1 << 16, bytes = n * sizeof(float);
  void* a = dev->allocate(bytes);
  std::shared_ptr<uint8_t> host = dev->stagingHost(bytes);
  float* h = reinterpret_cast<float*>(host.get());
  std::vector<float> x = randomFloats(n, 3), back(n);
  for (int round = 0; round < 3; ++round) {
    dev->waitForUploads();
    std::copy(x.begin(), x.end(), h);
    dev->uploadAsync(a, host.get(), bytes);
    dev->waitForUploads();
    std::fill(h, h + n, -7.0f);  // after the copy ran: not on the device
    dev->download(back.data(), a, bytes);
    EXPECT_EQ(std::memcmp(back.data(), x.data(), bytes), 0) << "round " << round;
    for (float& v : x) v += 1;
  }
  dev->release(a, bytes);
}

// The paged cache's storage and copy-on-write on the GPU: a forked
// sequence's first write into a shared block copies it in device memory.
TEST(CudaDevice, PagedKvCacheCopiesOnWriteInDeviceMemory) {
  SKIP_WITHOUT_GPU(dev);
  runtime::KvCacheShape shape{/*layers*/ 2, /*kvHeads*/ 2, /*headDim*/ 64, /*blockSize*/ 16, /*numBlocks*/ 8};
  runtime::PagedKvCache cache(shape, *dev);
  const size_t layerBytes = (size_t)(shape.bytes() / shape.layers), blockBytes = layerBytes / shape.numBlocks;
  std::vector<float> fill = randomFloats(layerBytes / 4, 2);
  for (int64_t l = 0; l < shape.layers; ++l) dev->upload(const_cast<void*>(cache.layer(l).raw()), fill.data(), layerBytes);
  ASSERT_TRUE(cache.reserve(0, 20));
  cache.setLength(0, 20);
  cache.fork(0, 1);
  ASSERT_TRUE(cache.reserve(1, 21));
  int64_t src = cache.blockTable(0)[1], dst = cache.blockTable(1)[1];
  ASSERT_NE(src, dst);
  for (int64_t l = 0; l < shape.layers; ++l) {
    std::vector<char> copied(blockBytes);
    dev->download(copied.data(), static_cast<const char*>(cache.layer(l).raw()) + dst * blockBytes, blockBytes);
    EXPECT_EQ(std::memcmp(copied.data(), reinterpret_cast<const char*>(fill.data()) + src * blockBytes, blockBytes), 0)
        << "layer " << l;
  }
}

// A test vehicle for the launch path (arguments, grid, bounds): y += x.
// `programmatic`: the sm_90 form that waits for the previous grid before
// touching memory and lets the next one be scheduled when it is done
// (what codegen/targets/cuda/Backend.cpp emits in every kernel), named add_f32_pdl.
std::string addPtx(bool programmatic) {
  return fmt::format(R"(
.version 8.0
.target {target}
.address_size 64
.visible .entry add_f32{suffix}(.param .u64 px, .param .u64 py, .param .u32 pn) {{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
{wait}  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [py];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd5];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd5], %f3;
DONE:
{trigger}  ret;
}}
)",
                     fmt::arg("target", programmatic ? "sm_90" : "sm_80"), fmt::arg("suffix", programmatic ? "_pdl" : ""),
                     fmt::arg("wait", programmatic ? "  griddepcontrol.wait;\n" : ""),
                     fmt::arg("trigger", programmatic ? "  griddepcontrol.launch_dependents;\n" : ""));
}

TEST(CudaDevice, LoadsModulesLaunchesAndTimes) {
  SKIP_WITHOUT_GPU(dev);
  auto module = dev->loadExecutable(addPtx(false));
  auto fn = module->kernel("add_f32");
  EXPECT_THROW(module->kernel("missing"), Error);
  const unsigned n = 1000003;  // not a multiple of the block
  std::vector<float> x = randomFloats(n, 3), y = randomFloats(n, 4), out(n);
  void* dx = dev->allocate(n * 4);
  void* dy = dev->allocate(n * 4);
  dev->upload(dx, x.data(), n * 4);
  dev->upload(dy, y.data(), n * 4);
  strata::abi::KernelArgs args;
  args.pointer(dx).pointer(dy).u32(n);
  float ms = dev->timeMs([&] { dev->launch(fn, {{(n + 255) / 256, 1, 1}, {256, 1, 1}, 0}, args); });
  dev->download(out.data(), dy, n * 4);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << i;
  EXPECT_GT(ms, 0.0f);
  dev->release(dx, n * 4);
  dev->release(dy, n * 4);
  try {
    dev->loadExecutable(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry broken( {\n");
    ADD_FAILURE() << "loaded broken PTX";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuModuleLoadDataEx"), std::string::npos) << e.what();
  }
}

// A record of chained launches (each y += x reads the previous one's y)
// becomes a graph whose programmatic launches sit behind programmatic
// edges, one per launch after the first, when the device launches
// programmatically (sm_90, STRATA_CUDA_PDL not off); run as the graph,
// launched directly and launched while recorded, y ends at y0 + 8 x
// exactly (each add waits for the previous one's memory).
TEST(CudaDevice, GraphsKeepProgrammaticLaunches) {
  SKIP_WITHOUT_GPU(dev);
  if (dev->computeCapability() < 90) GTEST_SKIP() << "griddepcontrol needs sm_90";
  auto module = dev->loadExecutable(addPtx(true));
  auto fn = module->kernel("add_f32_pdl");
  dev->allowEarlyLaunch(fn);
  const unsigned n = 1 << 20, adds = 8;
  std::vector<float> x = randomFloats(n, 5), y0 = randomFloats(n, 6), out(n);
  void* dx = dev->allocate(n * 4);
  void* dy = dev->allocate(n * 4);
  dev->upload(dx, x.data(), n * 4);
  strata::abi::KernelArgs args;
  args.pointer(dx).pointer(dy).u32(n);
  auto work = [&] {
    for (unsigned i = 0; i < adds; ++i) dev->launch(fn, {{n / 256, 1, 1}, {256, 1, 1}, 0}, args);
  };
  runtime::LaunchRecord r = dev->record(work);
  ASSERT_EQ(r.launches.size(), adds);
  std::unique_ptr<runtime::Replay> g = dev->replayable(r);
  EXPECT_EQ(g->earlyEdges(), dev->launchesEarly() ? adds - 1 : 0);
  std::vector<float> want(n);
  for (unsigned i = 0; i < n; ++i) {
    want[i] = y0[i];
    for (unsigned a = 0; a < adds; ++a) want[i] += x[i];
  }
  // "enqueued": recorded while launched (record with enqueue), which runs
  // the work and records the same launches, branches included.
  for (const char* how : {"graph", "stream", "enqueued"}) {
    dev->upload(dy, y0.data(), n * 4);
    if (how[0] == 'g') g->launch();
    else if (how[0] == 's') work();
    else EXPECT_EQ(dev->record(work, /*enqueue=*/true), r);
    dev->download(out.data(), dy, n * 4);
    for (unsigned i = 0; i < n; ++i) ASSERT_EQ(out[i], want[i]) << how << " " << i;
  }
  // Side by side: two branches of four adds each still sum to y0 + 8 x
  // (each branch adds into its own half, so they may overlap).
  const unsigned half = n / 2;
  void* dy2 = static_cast<char*>(dy) + half * 4;
  void* dx2 = static_cast<char*>(dx) + half * 4;
  strata::abi::KernelArgs lo, hi;
  lo.pointer(dx).pointer(dy).u32(half);
  hi.pointer(dx2).pointer(dy2).u32(half);
  const runtime::LaunchShape halfShape{{half / 256, 1, 1}, {256, 1, 1}, 0};
  auto branches = [&] {
    dev->concurrently({[&] { for (unsigned i = 0; i < adds; ++i) dev->launch(fn, halfShape, lo); },
                       [&] { for (unsigned i = 0; i < adds; ++i) dev->launch(fn, halfShape, hi); }});
  };
  dev->upload(dy, y0.data(), n * 4);
  runtime::LaunchRecord both = dev->record(branches, /*enqueue=*/true);
  EXPECT_EQ(both.launches.size(), 2 * adds);
  EXPECT_EQ(both.forks.size(), 1u);
  EXPECT_TRUE(both.launchesOnly);
  dev->download(out.data(), dy, n * 4);
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(out[i], want[i]) << "branches " << i;
  EXPECT_EQ(dev->record(branches), both);
  EXPECT_FALSE(dev->record([&] { dev->copy(dy, dx, 4); }, /*enqueue=*/true).launchesOnly);
  dev->release(dx, n * 4);
  dev->release(dy, n * 4);
}

}  // namespace
