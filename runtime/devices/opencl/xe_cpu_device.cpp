#include "runtime/devices/opencl/xe_cpu_device.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ops/error.h"
#include "ops/hash.h"

namespace strata::runtime::opencl {

namespace {

// xe_builtins.cl's text (generated from the file at build time).
const char kBuiltins[] =
#include "xe_builtins.cl.inc"
    ;

void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) fail("OpenCL: {} failed with error {}", what, e);
}

std::string deviceString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string buildLog(cl_program p, cl_device_id d) {
  size_t n = 0;
  if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace

struct XeCpuDevice::Impl {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program builtins = nullptr;  // compiled, not linked: linked into every program

  ~Impl() {
    if (builtins) clReleaseProgram(builtins);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }

  // Compiles `p` (its source or IL already attached) and links it with the
  // built-ins.
  cl_program link(cl_program p, const char* what) const {
    cl_int e = clCompileProgram(p, 1, &device, "-cl-std=CL3.0", 0, nullptr, nullptr, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      std::string log = buildLog(p, device);
      clReleaseProgram(p);
      fail("OpenCL: compiling the {} failed ({}):\n{}", what, e, log);
    }
    cl_program parts[2] = {p, builtins};
    cl_program out = clLinkProgram(context, 1, &device, "", 2, parts, nullptr, nullptr, &e);
    clReleaseProgram(p);
    if (e != CL_SUCCESS) {
      std::string log = out ? buildLog(out, device) : "";
      if (out) clReleaseProgram(out);
      fail("OpenCL: linking the {} with strata's Xe built-ins failed ({}):\n{}", what, e, log);
    }
    return out;
  }
};

Buffer::Buffer(Buffer&& o) noexcept : mem_(o.mem_), bytes_(o.bytes_) { o.mem_ = nullptr; }
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  std::swap(mem_, o.mem_);
  std::swap(bytes_, o.bytes_);
  return *this;
}
Buffer::~Buffer() {
  if (mem_) clReleaseMemObject(static_cast<cl_mem>(mem_));
}

Program::Program(Program&& o) noexcept : program_(o.program_) { o.program_ = nullptr; }
Program& Program::operator=(Program&& o) noexcept {
  std::swap(program_, o.program_);
  return *this;
}
Program::~Program() {
  if (program_) clReleaseProgram(static_cast<cl_program>(program_));
}

XeCpuDevice::XeCpuDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
XeCpuDevice::~XeCpuDevice() = default;

std::unique_ptr<XeCpuDevice> XeCpuDevice::open(std::string* why) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) {
    if (why) *why = "no OpenCL platform (is an ICD installed and OCL_ICD_VENDORS pointing at it?)";
    return nullptr;
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  std::string seen;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devices(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr);
    for (cl_device_id d : devices) {
      std::string ext = deviceString(d, CL_DEVICE_EXTENSIONS), il = deviceString(d, CL_DEVICE_IL_VERSION);
      seen += (seen.empty() ? "" : ", ") + deviceString(d, CL_DEVICE_NAME);
      if (il.find("SPIR-V") == std::string::npos || ext.find("cl_intel_required_subgroup_size") == std::string::npos ||
          ext.find("cl_intel_subgroups") == std::string::npos || ext.find("cl_khr_fp16") == std::string::npos)
        continue;
      auto impl = std::make_unique<Impl>();
      impl->device = d;
      cl_int e;
      impl->context = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &e);
      check(e, "clCreateContext");
      impl->queue = clCreateCommandQueueWithProperties(impl->context, d, nullptr, &e);
      check(e, "clCreateCommandQueueWithProperties");
      const char* src = kBuiltins;
      impl->builtins = clCreateProgramWithSource(impl->context, 1, &src, nullptr, &e);
      check(e, "clCreateProgramWithSource (built-ins)");
      e = clCompileProgram(impl->builtins, 1, &d, "-cl-std=CL3.0", 0, nullptr, nullptr, nullptr, nullptr);
      if (e != CL_SUCCESS) fail("OpenCL: compiling strata's Xe built-ins failed ({}):\n{}", e, buildLog(impl->builtins, d));
      return std::unique_ptr<XeCpuDevice>(new XeCpuDevice(std::move(impl)));
    }
  }
  if (why)
    *why = seen.empty() ? "no OpenCL device"
                        : "no OpenCL device with SPIR-V, cl_intel_subgroups, cl_intel_required_subgroup_size and "
                          "cl_khr_fp16 (found: " + seen + ")";
  return nullptr;
}

std::string XeCpuDevice::name() const { return deviceString(impl_->device, CL_DEVICE_NAME); }

XeCpuDevice::Handles XeCpuDevice::handles() const { return {impl_->context, impl_->queue, impl_->device}; }

Program XeCpuDevice::buildSpirv(const std::string& spirv) const {
  namespace fs = std::filesystem;
  const char* dir = std::getenv("STRATA_OPENCL_CACHE");
  fs::path cached;
  if (dir && *dir) {
    const uint64_t key = ops::fnv1a(spirv, ops::fnv1a(kBuiltins, ops::fnv1a(name() + "\n" +
                                                                             deviceString(impl_->device, CL_DRIVER_VERSION))));
    cached = fs::path(dir) / fmt::format("{:016x}.clbin", key);
    if (std::ifstream in{cached, std::ios::binary}) {
      const std::string bin{std::istreambuf_iterator<char>(in), {}};
      const unsigned char* b = reinterpret_cast<const unsigned char*>(bin.data());
      const size_t n = bin.size();
      cl_int e, status;
      cl_program p = clCreateProgramWithBinary(impl_->context, 1, &impl_->device, &n, &b, &status, &e);
      if (e == CL_SUCCESS && clBuildProgram(p, 1, &impl_->device, "", nullptr, nullptr) == CL_SUCCESS) return Program(p);
      if (p) clReleaseProgram(p);  // a stale or damaged entry: build again and replace it
    }
  }
  cl_int e;
  cl_program p = clCreateProgramWithIL(impl_->context, spirv.data(), spirv.size(), &e);
  check(e, "clCreateProgramWithIL");
  Program built(impl_->link(p, "SPIR-V module"));
  if (!cached.empty()) {
    // The linked program's binary, written whole or not at all.
    size_t n = 0;
    cl_program lp = static_cast<cl_program>(built.native());
    if (clGetProgramInfo(lp, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr) == CL_SUCCESS && n) {
      std::string bin(n, '\0');
      unsigned char* b = reinterpret_cast<unsigned char*>(bin.data());
      std::error_code ec;
      fs::create_directories(cached.parent_path(), ec);
      const fs::path tmp = cached.string() + fmt::format(".{}.tmp", ::getpid());
      if (clGetProgramInfo(lp, CL_PROGRAM_BINARIES, sizeof b, &b, nullptr) == CL_SUCCESS &&
          std::ofstream(tmp, std::ios::binary).write(bin.data(), std::streamsize(n)))
        fs::rename(tmp, cached, ec);
      fs::remove(tmp, ec);
    }
  }
  return built;
}

Program XeCpuDevice::buildSource(const std::string& source) const {
  cl_int e;
  const char* s = source.c_str();
  cl_program p = clCreateProgramWithSource(impl_->context, 1, &s, nullptr, &e);
  check(e, "clCreateProgramWithSource");
  return Program(impl_->link(p, "OpenCL C program"));
}

Buffer XeCpuDevice::alloc(size_t bytes) const {
  cl_int e;
  size_t n = bytes < 64 ? 64 : bytes;
  cl_mem m = clCreateBuffer(impl_->context, CL_MEM_READ_WRITE, n, nullptr, &e);
  check(e, "clCreateBuffer");
  return Buffer(m, bytes);
}

void XeCpuDevice::write(const Buffer& b, const void* data, size_t bytes) const {
  if (bytes > b.bytes()) fail("OpenCL: writing {} bytes into a buffer of {}", bytes, b.bytes());
  if (bytes)
    check(clEnqueueWriteBuffer(impl_->queue, static_cast<cl_mem>(b.handle()), CL_TRUE, 0, bytes, data, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
}

void XeCpuDevice::read(const Buffer& b, void* data, size_t bytes) const {
  if (bytes > b.bytes()) fail("OpenCL: reading {} bytes from a buffer of {}", bytes, b.bytes());
  if (bytes)
    check(clEnqueueReadBuffer(impl_->queue, static_cast<cl_mem>(b.handle()), CL_TRUE, 0, bytes, data, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
}

void XeCpuDevice::run(const Program& p, const std::string& kernel, const std::vector<Arg>& args, const size_t global[3],
                      const size_t local[3]) const {
  cl_int e;
  cl_kernel k = clCreateKernel(static_cast<cl_program>(p.program_), kernel.c_str(), &e);
  if (e != CL_SUCCESS) fail("OpenCL: no kernel '{}' in the program (error {})", kernel, e);
  for (size_t i = 0; i < args.size(); ++i) {
    cl_int r;
    if (auto* b = std::get_if<const Buffer*>(&args[i])) {
      cl_mem m = static_cast<cl_mem>((*b)->handle());
      r = clSetKernelArg(k, cl_uint(i), sizeof(cl_mem), &m);
    } else if (auto* v = std::get_if<int64_t>(&args[i])) {
      r = clSetKernelArg(k, cl_uint(i), sizeof(int64_t), v);
    } else if (auto* f = std::get_if<float>(&args[i])) {
      r = clSetKernelArg(k, cl_uint(i), sizeof(float), f);
    } else {
      r = clSetKernelArg(k, cl_uint(i), sizeof(int32_t), &std::get<int32_t>(args[i]));
    }
    if (r != CL_SUCCESS) {
      clReleaseKernel(k);
      fail("OpenCL: kernel '{}' argument {}: clSetKernelArg failed ({})", kernel, i, r);
    }
  }
  e = clEnqueueNDRangeKernel(impl_->queue, k, 3, nullptr, global, local, 0, nullptr, nullptr);
  if (e == CL_SUCCESS) e = clFinish(impl_->queue);
  clReleaseKernel(k);
  if (e != CL_SUCCESS)
    fail("OpenCL: running '{}' over [{}, {}, {}] in groups of [{}, {}, {}] failed ({})", kernel, global[0], global[1],
         global[2], local[0], local[1], local[2], e);
}

}  // namespace strata::runtime::opencl
