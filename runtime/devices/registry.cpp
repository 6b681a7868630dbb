#include "runtime/devices/registry.h"

#include "ops/error.h"
#include "runtime/devices/cuda/device.h"

namespace strata::runtime {

std::unique_ptr<Device> openGpuDevice(const std::string& target) {
  // An artifact's target ("cuda:sm_90") or a kernel set's ("sm_90").
  if (target.rfind("cuda:", 0) == 0 || target.rfind("sm_", 0) == 0) return CudaDevice::open();
  fail("no GPU device runs kernels for target '{}' (GPU targets: cuda:sm_<arch>)", target);
}

std::string gpuDeviceUnavailable(const std::string& kind) {
  if (kind == "cuda") return CudaDevice::unavailable();
  return fmt::format("unknown GPU device kind '{}' (known: cuda)", kind);
}

}  // namespace strata::runtime
