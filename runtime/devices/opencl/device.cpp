#include "runtime/devices/opencl/device.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <map>

#include "ops/error.h"
#include "runtime/spirv_kernels.h"

namespace strata::runtime {

namespace {

cl_context context(const opencl::XeCpuDevice::Handles& h) { return static_cast<cl_context>(h.context); }
cl_command_queue queue(const opencl::XeCpuDevice::Handles& h) { return static_cast<cl_command_queue>(h.queue); }
cl_device_id clDevice(const opencl::XeCpuDevice::Handles& h) { return static_cast<cl_device_id>(h.device); }

void check(cl_int e, const std::string& what) {
  if (e != CL_SUCCESS) fail("opencl device: {} failed with error {}", what, e);
}

// A kernel of a loaded module: its OpenCL kernel object and its parameters.
struct ClKernel {
  cl_kernel kernel = nullptr;
  SpirvKernel signature;
};

class ClExecutable final : public Executable {
 public:
  ClExecutable(opencl::Program program, const std::vector<SpirvKernel>& kernels) : program_(std::move(program)) {
    for (const SpirvKernel& s : kernels) {
      cl_int e;
      cl_kernel k = clCreateKernel(static_cast<cl_program>(program_.native()), s.name.c_str(), &e);
      check(e, "clCreateKernel(" + s.name + ")");
      kernels_[s.name] = {k, s};
    }
  }
  ~ClExecutable() override {
    for (auto& [name, k] : kernels_) clReleaseKernel(k.kernel);
  }
  KernelHandle kernel(const std::string& name) const override {
    auto k = kernels_.find(name);
    if (k == kernels_.end()) fail("opencl device: the SPIR-V module has no kernel '{}'", name);
    return KernelHandle{&k->second};
  }

 private:
  opencl::Program program_;
  std::map<std::string, ClKernel> kernels_;
};

}  // namespace

std::unique_ptr<OpenClDevice> OpenClDevice::open(std::string* why) {
  std::unique_ptr<opencl::XeCpuDevice> cl = opencl::XeCpuDevice::open(why);
  if (!cl) return nullptr;
  cl_device_svm_capabilities svm = 0;
  clGetDeviceInfo(static_cast<cl_device_id>(cl->handles().device), CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm,
                  nullptr);
  if (!(svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
    if (why) *why = fmt::format("OpenCL device {} has no shared virtual memory (the device's addresses are pointers)", cl->name());
    return nullptr;
  }
  return std::unique_ptr<OpenClDevice>(new OpenClDevice(std::move(cl)));
}

OpenClDevice::OpenClDevice(std::unique_ptr<opencl::XeCpuDevice> cl) : cl_(std::move(cl)), h_(cl_->handles()) {
  cl_uint units = 1;
  cl_ulong mem = 0;
  clGetDeviceInfo(clDevice(h_), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
  clGetDeviceInfo(clDevice(h_), CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr);
  computeUnits_ = int(units);
  capacity_ = mem;
}

OpenClDevice::~OpenClDevice() { clFinish(queue(h_)); }

std::string OpenClDevice::description() const { return "Xe test device on OpenCL " + cl_->name(); }

std::string OpenClDevice::cannotRun(const std::string& target) const {
  if (target == "xe:pvc" || target == "xe:bmg") return "";
  return fmt::format("the opencl Xe test device runs xe:pvc and xe:bmg kernel sets, not '{}'", target);
}

void* OpenClDevice::allocate(size_t bytes) {
  const size_t n = bytes < 64 ? 64 : bytes;
  void* p = clSVMAlloc(context(h_), CL_MEM_READ_WRITE, n, 128);
  if (!p)
    fail("opencl device: cannot allocate {} bytes ({} allocated of {})", bytes, allocated_.load(), capacity_);
  const uint8_t zero = 0;
  check(clEnqueueSVMMemFill(queue(h_), p, &zero, 1, n, 0, nullptr, nullptr), "clEnqueueSVMMemFill");
  allocated_ += bytes;
  return p;
}

void OpenClDevice::release(void* p, size_t bytes) {
  if (!p) return;
  clFinish(queue(h_));  // nothing enqueued may still use it
  clSVMFree(context(h_), p);
  allocated_ -= bytes;
}

void OpenClDevice::copy(void* dst, const void* src, size_t bytes) {
  noteNonLaunch("copy");
  ++copies_;
  if (bytes) check(clEnqueueSVMMemcpy(queue(h_), CL_FALSE, dst, src, bytes, 0, nullptr, nullptr), "clEnqueueSVMMemcpy");
}

void OpenClDevice::synchronize() const { check(clFinish(queue(h_)), "clFinish"); }

void OpenClDevice::upload(void* dst, const void* host, size_t bytes) {
  if (bytes) check(clEnqueueSVMMemcpy(queue(h_), CL_TRUE, dst, host, bytes, 0, nullptr, nullptr), "upload");
}

void OpenClDevice::download(void* host, const void* src, size_t bytes) {
  noteNonLaunch("download");
  if (bytes) check(clEnqueueSVMMemcpy(queue(h_), CL_TRUE, host, src, bytes, 0, nullptr, nullptr), "download");
}

std::unique_ptr<Executable> OpenClDevice::loadExecutable(const std::string& image) const {
  const std::vector<SpirvKernel> kernels = spirvKernels(image, "opencl device: the kernel set's SPIR-V module");
  return std::make_unique<ClExecutable>(cl_->buildSpirv(image), kernels);
}

void OpenClDevice::enqueue(KernelHandle h, const LaunchShape& shape, std::span<void* const> slots, bool) const {
  const ClKernel& k = *static_cast<const ClKernel*>(h.native);
  if (shape.sharedBytes)
    fail("kernel {}: {} bytes of dynamic local memory (xe kernels take none)", k.signature.name, shape.sharedBytes);
  const std::vector<KernelArgument> args = kernelArguments(k.signature, slots);
  for (size_t i = 0; i < args.size(); ++i) {
    const cl_int e = args[i].pointer
                         ? clSetKernelArgSVMPointer(k.kernel, cl_uint(i), *static_cast<void* const*>(args[i].value))
                         : clSetKernelArg(k.kernel, cl_uint(i), args[i].bytes, args[i].value);
    if (e != CL_SUCCESS) fail("kernel {}: setting argument {} failed ({})", k.signature.name, i, e);
  }
  size_t global[3], local[3];
  for (int d = 0; d < 3; ++d) global[d] = size_t(shape.grid[d]) * shape.block[d], local[d] = shape.block[d];
  const cl_int e = clEnqueueNDRangeKernel(queue(h_), k.kernel, 3, nullptr, global, local, 0, nullptr, nullptr);
  if (e != CL_SUCCESS)
    fail("kernel {}: launch of [{}, {}, {}] work-groups of [{}, {}, {}] failed ({})", k.signature.name, shape.grid[0],
         shape.grid[1], shape.grid[2], shape.block[0], shape.block[1], shape.block[2], e);
}

}  // namespace strata::runtime
