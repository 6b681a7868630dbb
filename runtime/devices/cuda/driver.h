// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): no
// link-time CUDA dependency, so one strata binary runs on machines with and
// without a GPU. Only the entry points strata calls are declared (their
// types follow cuda.h; the _v2 names are the ones cuda.h maps to).
#pragma once
#include <cstddef>
#include <string>

namespace strata::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;

// CUDA_KERNEL_NODE_PARAMS (v2) of cuda.h.
struct KernelNodeParams {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void** kernelParams;
  void** extra;
  void* kern;
  CUcontext ctx;
};

// CUlaunchAttribute and CUlaunchConfig of cuda.h (cuLaunchKernelEx).
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char raw[64];
    int value;
  };
};
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  LaunchAttribute* attrs;
  unsigned numAttrs;
};
// CUgraphEdgeData of cuda.h: an edge's ports and type (all zero: the
// ordinary edge, full completion and memory visibility).
struct GraphEdgeData {
  unsigned char fromPort, toPort, type, reserved[5];
};
// The programmatic edge (CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC,
// CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC): the graph form of a launch with
// programmatic stream serialization below.
constexpr GraphEdgeData kProgrammaticEdge{1, 0, 1, {}};
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the launch may
// start while the previous kernel in its stream runs (it waits with
// griddepcontrol.wait before touching memory).
constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;
// cuEventQuery's answer while the work before the event is still pending
// (CUDA_ERROR_NOT_READY).
constexpr CUresult kNotReady = 600;

// CUtensorMap of cuda.h: an opaque 128-byte TMA descriptor.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};
// cuTensorMapEncodeTiled's enum values strata passes (cuda.h).
enum TensorMapValue : int {
  kTensorMapFloat16 = 6,
  kTensorMapBfloat16 = 9,
  kTensorMapInterleaveNone = 0,
  kTensorMapSwizzle128B = 3,
  kTensorMapL2Promotion256B = 3,
  kTensorMapOobFillZeros = 0,
};

// cuDeviceGetAttribute keys strata reads (values from cuda.h).
enum DeviceAttribute : int {
  kMaxSharedMemoryPerBlockOptin = 97,
  kMultiprocessorCount = 16,
  kMaxSharedMemoryPerMultiprocessor = 81,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kL2CacheSize = 38,
};

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuCtxGetLimit)(size_t*, int);
  CUresult (*cuCtxSetLimit)(int, size_t);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventQuery)(CUevent);  // 0 (CUDA_SUCCESS) when done, kNotReady while pending
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  // Kernel parameter layout (CUDA 12.4+) and graphs.
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*);
  CUresult (*cuGraphCreate)(CUgraph*, unsigned);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const KernelNodeParams*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  // Optional (CUDA 12+; nullptr when the driver lacks it).
  CUresult (*cuLaunchKernelEx)(const LaunchConfig*, CUfunction, void**, void**);
  // CUDA 12.3+: edges with data (cuGraphAddDependencies_v2).
  CUresult (*cuGraphAddDependencies)(CUgraph, const CUgraphNode*, const CUgraphNode*, const GraphEdgeData*, size_t);
  CUresult (*cuTensorMapEncodeTiled)(TensorMap*, int, unsigned, void*, const unsigned long long*,
                                     const unsigned long long*, const unsigned*, const unsigned*, int, int, int, int);
};

// The loaded driver with cuInit done, or nullptr; `why` then says why
// ("libcuda.so.1 not found: ...", "cuInit failed: CUDA_ERROR_NO_DEVICE ...").
// Loaded once per process; after a failed cuInit nothing else is called.
const Driver* driver(std::string* why = nullptr);

// Throws strata::Error "<what>: <CUDA error name> (<description>)" unless
// `r` is CUDA_SUCCESS.
void check(CUresult r, const char* what);
// Dynamic shared memory over 48 KiB must be allowed per function before a
// launch or a graph node uses it (and before the occupancy calculator
// counts it).
void allowSharedBytes(const Driver& d, CUfunction f, unsigned sharedBytes);

}  // namespace strata::runtime::cuda
