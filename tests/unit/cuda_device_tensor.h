// Device memory for strata_cuda_tests: a host tensor's copy (or n bytes)
// on a CudaDevice, freed with the struct.
#pragma once

#include <cstddef>

#include "ops/tensor.h"
#include "runtime/devices/cuda/device.h"

namespace strata::testing {

struct DeviceTensor {
  runtime::CudaDevice& dev;
  void* p;
  size_t bytes;
  DeviceTensor(runtime::CudaDevice& d, const ops::Tensor& t) : dev(d), p(d.allocate(t.nbytes())), bytes(t.nbytes()) {
    d.upload(p, t.raw(), bytes);
  }
  DeviceTensor(runtime::CudaDevice& d, size_t n) : dev(d), p(d.allocate(n)), bytes(n) {}
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() { dev.release(p, bytes); }
};

}  // namespace strata::testing
