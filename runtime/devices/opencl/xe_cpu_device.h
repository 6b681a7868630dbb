// Xe kernels on an OpenCL device without Intel GPU built-ins: Intel's CPU
// OpenCL runtime (PyPI `intel-opencl-rt`, through Debian's ICD loader),
// which executes SPIR-V with Intel sub-group semantics (sub-group 16,
// shuffles) but has neither DPAS nor 2D block IO. Every program is linked
// with strata's OpenCL C definitions of those built-ins
// (xe_builtins.cl), so a SPIR-V module from the Xe backend
// (codegen/targets/xe/Backend.h) runs here with the results the extensions
// specify. This is the test device of the Xe conformance suite; a real
// Intel GPU runs the same modules through Level Zero with its driver's
// built-ins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace strata::runtime::opencl {

class XeCpuDevice;

// A device buffer (freed with its object).
class Buffer {
 public:
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  ~Buffer();
  size_t bytes() const { return bytes_; }
  void* handle() const { return mem_; }

 private:
  friend class XeCpuDevice;
  Buffer(void* mem, size_t bytes) : mem_(mem), bytes_(bytes) {}
  void* mem_ = nullptr;
  size_t bytes_ = 0;
};

// A built program (its kernels by name).
class Program {
 public:
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  ~Program();
  void* native() const { return program_; }  // the cl_program

 private:
  friend class XeCpuDevice;
  explicit Program(void* p) : program_(p) {}
  void* program_ = nullptr;
};

// A kernel argument: a buffer (global pointer) or a scalar of the kernel's
// parameter width (index parameters are int64_t; f32 ones float).
using Arg = std::variant<const Buffer*, int64_t, int32_t, float>;

class XeCpuDevice {
 public:
  // The first OpenCL device that takes SPIR-V and runs sub-groups of 16, or
  // nullptr with `why` saying what was missing (no ICD loader, no platform,
  // no such device).
  static std::unique_ptr<XeCpuDevice> open(std::string* why);
  ~XeCpuDevice();

  std::string name() const;
  // The OpenCL objects underneath (cl_context, cl_command_queue: in order,
  // cl_device_id), for the runtime::Device on this one (device.h).
  struct Handles {
    void *context, *queue, *device;
  };
  Handles handles() const;
  // Builds a SPIR-V module (or OpenCL C source) linked with the built-in
  // definitions. Throws strata::Error with the compiler's log. With
  // $STRATA_OPENCL_CACHE set to a folder, a SPIR-V module's built program
  // is kept there (keyed by the module, the built-ins, the device and its
  // driver) and loaded instead of built again: Intel's CPU compiler takes
  // 15 s to minutes a kernel.
  Program buildSpirv(const std::string& spirv) const;
  Program buildSource(const std::string& source) const;

  Buffer alloc(size_t bytes) const;  // at least 64 bytes, 128-byte aligned
  void write(const Buffer& b, const void* data, size_t bytes) const;
  void read(const Buffer& b, void* data, size_t bytes) const;

  // Runs `kernel` of `p` over `global` work-items in work-groups of
  // `local`, and waits for it.
  void run(const Program& p, const std::string& kernel, const std::vector<Arg>& args, const size_t global[3],
           const size_t local[3]) const;

 private:
  struct Impl;
  explicit XeCpuDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime::opencl
