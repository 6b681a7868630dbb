#include "runtime/device.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ops/error.h"

namespace strata::runtime {

std::vector<void*> LaunchRecord::Launch::argPointers() const {
  std::vector<void*> p;
  for (size_t off : argOffsets) p.push_back(const_cast<uint8_t*>(args.data() + off));
  return p;
}

std::string Device::cannotRun(const std::string& target) const {
  return fmt::format("the {} device runs no kernels built for {}", name(), target);
}

void Device::upload(void* dst, const void* host, size_t bytes) {
  if (!hostAddressable()) fail("the {} device has no upload", name());
  if (bytes) std::memcpy(dst, host, bytes);
}

void Device::download(void* host, const void* src, size_t bytes) {
  if (!hostAddressable()) fail("the {} device has no download", name());
  if (bytes) std::memcpy(host, src, bytes);
}

std::shared_ptr<uint8_t> Device::stagingHost(size_t bytes) const {
  return std::shared_ptr<uint8_t>(new uint8_t[std::max<size_t>(bytes, 1)], std::default_delete<uint8_t[]>());
}

void Device::uploadAsync(void* dst, const void* host, size_t bytes) {
  refuseWhileRecording("uploadAsync");
  upload(dst, host, bytes);
}

std::unique_ptr<Executable> Device::loadExecutable(const std::string&) const {
  fail("the {} device loads no kernels", name());
}

int Device::residentPrograms(KernelHandle, unsigned, unsigned) const { return 1; }

const void* Device::tensorMap(const TensorMapRequest&, const std::string& what) const {
  fail("{}: the {} device has no tensor maps (kernels that copy by TMA run on cuda only)", what, name());
}

void Device::enqueue(KernelHandle, const LaunchShape&, std::span<void* const>, bool) const {
  fail("the {} device launches no kernels", name());
}

void Device::enqueueBranches(const std::vector<std::function<void()>>& branches) const {
  for (const auto& b : branches) b();
}

void Device::noteNonLaunch(const char* what) const {
  if (!recording_) return;
  if (!enqueueing_) fail("{} device: {} while recording launches (it would run before them)", name(), what);
  recording_->launchesOnly = false;
}

void Device::refuseWhileRecording(const char* what) const {
  if (recording_) fail("{} device: {} while recording launches", name(), what);
}

void Device::allowEarlyLaunch(KernelHandle k) const {
  if (earlyLaunches_) early_.insert(k);
}

void Device::launch(KernelHandle k, const LaunchShape& shape, const abi::KernelArgs& args) const {
  const bool early = !early_.empty() && early_.count(k);
  const std::vector<void*>& slots = args.slots();
  if (recording_) {
    LaunchRecord::Launch l{k, shape, {}, {}, frontier_, early};
    // Each argument at an offset aligned to its size, as a kernel's
    // parameter buffer holds them.
    const std::vector<uint32_t>& sizes = args.sizes();
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t off = (l.args.size() + sizes[i] - 1) / sizes[i] * sizes[i];
      l.args.resize(off + sizes[i]);
      std::memcpy(l.args.data() + off, slots[i], sizes[i]);
      l.argOffsets.push_back(off);
    }
    frontier_ = {recording_->launches.size()};
    recording_->launches.push_back(std::move(l));
    if (!enqueueing_) return;
  }
  enqueue(k, shape, slots, early);
}

void Device::concurrently(const std::vector<std::function<void()>>& branches) const {
  if (!recording_) return enqueueBranches(branches);
  // Each branch starts after what came before; what follows waits for
  // every branch's last launch.
  const std::vector<size_t> fork = frontier_;
  std::vector<size_t> tails;
  LaunchRecord::Fork marks{recording_->launches.size(), {}};
  std::vector<std::function<void()>> noted;
  for (size_t i = 0; i < branches.size(); ++i)
    noted.push_back([&, i] {
      frontier_ = fork;
      branches[i]();
      for (size_t t : frontier_)
        if (std::find(tails.begin(), tails.end(), t) == tails.end()) tails.push_back(t);
      marks.ends.push_back(recording_->launches.size());
    });
  if (enqueueing_) {
    enqueueBranches(noted);
  } else {
    for (const auto& b : noted) b();
  }
  frontier_ = tails;
  recording_->forks.push_back(std::move(marks));
}

LaunchRecord Device::record(const std::function<void()>& work, bool enqueue) const {
  if (recording_) fail("{} device: record() inside a record", name());
  LaunchRecord r;
  recording_ = &r;
  enqueueing_ = enqueue;
  frontier_.clear();
  try {
    work();
  } catch (...) {
    recording_ = nullptr;
    enqueueing_ = false;
    throw;
  }
  recording_ = nullptr;
  enqueueing_ = false;
  return r;
}

namespace {

// The record's launches again, in order: a valid schedule of its
// dependencies (each depends on earlier launches only).
class LaunchReplay final : public Replay {
 public:
  LaunchReplay(std::function<void(const LaunchRecord::Launch&)> run, const LaunchRecord& r)
      : run_(std::move(run)), record_(r) {}
  void launch() const override {
    for (const LaunchRecord::Launch& l : record_.launches) run_(l);
  }

 private:
  std::function<void(const LaunchRecord::Launch&)> run_;
  LaunchRecord record_;
};

}  // namespace

std::unique_ptr<Replay> Device::replayable(const LaunchRecord& r) const {
  if (!r.launchesOnly) fail("{} device: a record that copies or downloads cannot be replayed", name());
  return std::make_unique<LaunchReplay>(
      [this](const LaunchRecord::Launch& l) {
        const std::vector<void*> args = l.argPointers();
        enqueue(l.kernel, l.shape, args, l.early);
      },
      r);
}

float Device::timeMs(const std::function<void()>& work) const {
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  work();
  synchronize();
  return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace strata::runtime
