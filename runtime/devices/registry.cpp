#include "runtime/devices/registry.h"

#include "ops/error.h"
#include "runtime/devices/cuda/device.h"
#include "runtime/devices/level_zero/device.h"

namespace strata::runtime {

std::unique_ptr<Device> openGpuDevice(const std::string& target) {
  // An artifact's target ("cuda:sm_90") or a kernel set's ("sm_90").
  if (target.rfind("cuda:", 0) == 0 || target.rfind("sm_", 0) == 0) return CudaDevice::open();
  // "no Level Zero device: ..." without an Intel GPU.
  if (target == "xe" || target.rfind("xe:", 0) == 0) return LevelZeroDevice::open();
  fail("no GPU device runs kernels for target '{}' (GPU targets: cuda:sm_<arch>, xe:pvc, xe:bmg)", target);
}

std::string gpuDeviceUnavailable(const std::string& kind) {
  if (kind == "cuda") return CudaDevice::unavailable();
  if (kind == "level_zero") return level_zero::unavailable();
  return fmt::format("unknown GPU device kind '{}' (known: cuda, level_zero)", kind);
}

}  // namespace strata::runtime
