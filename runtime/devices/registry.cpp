#include "runtime/devices/registry.h"

#include "ops/error.h"
#include "runtime/devices/cuda/device.h"
#include "runtime/devices/level_zero/driver.h"

namespace strata::runtime {

std::unique_ptr<Device> openGpuDevice(const std::string& target) {
  // An artifact's target ("cuda:sm_90") or a kernel set's ("sm_90").
  if (target.rfind("cuda:", 0) == 0 || target.rfind("sm_", 0) == 0) return CudaDevice::open();
  if (target == "xe" || target.rfind("xe:", 0) == 0) {
    // Discovery is all there is for Intel GPUs yet (runtime/devices/
    // level_zero/driver.h): "no Level Zero device: ..." without one, else
    // what was found and that nothing runs on it yet.
    std::vector<level_zero::GpuInfo> found = level_zero::gpus();
    fail("Level Zero found {}, but strata's level_zero device is not built yet: models, and the xe artifacts of strata "
         "compile --target xe:pvc|xe:bmg, do not run on Intel GPUs (docs/codegen.md, target xe)",
         level_zero::describe(found.front()));
  }
  fail("no GPU device runs kernels for target '{}' (GPU targets: cuda:sm_<arch>; xe is discovery only)", target);
}

std::string gpuDeviceUnavailable(const std::string& kind) {
  if (kind == "cuda") return CudaDevice::unavailable();
  if (kind == "level_zero") return level_zero::unavailable();
  return fmt::format("unknown GPU device kind '{}' (known: cuda, level_zero)", kind);
}

}  // namespace strata::runtime
