// Which device runs a compiled artifact: the one place that knows every
// device folder (as IREE's driver registry). A GPU artifact's target
// ("cuda:sm_90") names its device kind ("cuda").
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"

namespace strata::runtime {

// The device that runs kernels of artifact target `target` ("cuda:sm_90")
// or kernel-set target ("sm_90"),
// its first GPU; throws "no CUDA device: ..." where there is none, and
// names the target when no device kind runs it.
std::unique_ptr<Device> openGpuDevice(const std::string& target);

// "" when a device of `kind` ("cuda") can be opened here, else why not.
std::string gpuDeviceUnavailable(const std::string& kind);

}  // namespace strata::runtime
