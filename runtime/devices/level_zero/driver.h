// Level Zero (Intel GPUs: PVC, Arc), loaded at run time with
// dlopen("libze_loader.so.1"): no link-time dependency, so one strata binary
// runs on machines with and without an Intel GPU. Only the entry points and
// structures strata reads are declared here; their layouts follow ze_api.h
// (v1.x), where every enum is a 32-bit value.
//
// What is here: the loader, zeInit once, and discovery (each GPU's name, EU
// count, clock, memory, work-group limits, and which xe part it is). The
// level_zero Device (runtime/device.h) is device.h beside this file.
//
// After a failed zeInit nothing else in Level Zero is called: with Debian's
// intel-opencl-icd installed and no Intel GPU, zeInit returns
// ZE_RESULT_ERROR_UNINITIALIZED and a following zeDriverGet crashes inside
// the loader (../shared/xe-notes.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::runtime::level_zero {

using ze_result_t = uint32_t;
using ze_driver_handle_t = struct ze_driver_st*;
using ze_device_handle_t = struct ze_device_st*;

// ze_device_properties_t (stype ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 3).
struct DeviceProperties {
  uint32_t stype = 3;
  void* pNext = nullptr;
  uint32_t type = 0;  // 1: GPU
  uint32_t vendorId = 0, deviceId = 0, flags = 0, subdeviceId = 0, coreClockRate = 0;
  uint64_t maxMemAllocSize = 0;
  uint32_t maxHardwareContexts = 0, maxCommandQueuePriority = 0, numThreadsPerEU = 0, physicalEUSimdWidth = 0,
           numEUsPerSubslice = 0, numSubslicesPerSlice = 0, numSlices = 0;
  uint64_t timerResolution = 0;
  uint32_t timestampValidBits = 0, kernelTimestampValidBits = 0;
  uint8_t uuid[16] = {};
  char name[256] = {};
};

// ze_device_compute_properties_t (stype 4).
struct ComputeProperties {
  uint32_t stype = 4;
  void* pNext = nullptr;
  uint32_t maxTotalGroupSize = 0, maxGroupSizeX = 0, maxGroupSizeY = 0, maxGroupSizeZ = 0, maxGroupCountX = 0,
           maxGroupCountY = 0, maxGroupCountZ = 0, maxSharedLocalMemory = 0, numSubGroupSizes = 0;
  uint32_t subGroupSizes[8] = {};
};

// ze_device_memory_properties_t (stype 7).
struct MemoryProperties {
  uint32_t stype = 7;
  void* pNext = nullptr;
  uint32_t flags = 0, maxClockRate = 0, maxBusWidth = 0;
  uint64_t totalSize = 0;
  char name[256] = {};
};

struct Driver {
  ze_result_t (*zeInit)(uint32_t flags);
  ze_result_t (*zeDriverGet)(uint32_t* count, ze_driver_handle_t* drivers);
  ze_result_t (*zeDeviceGet)(ze_driver_handle_t, uint32_t* count, ze_device_handle_t* devices);
  ze_result_t (*zeDeviceGetProperties)(ze_device_handle_t, DeviceProperties*);
  ze_result_t (*zeDeviceGetComputeProperties)(ze_device_handle_t, ComputeProperties*);
  ze_result_t (*zeDeviceGetMemoryProperties)(ze_device_handle_t, uint32_t* count, MemoryProperties*);
};

// The loader with zeInit(ZE_INIT_FLAG_GPU_ONLY) done (once per process), or
// null with *why saying what failed: the library missing, an entry point
// missing, or zeInit's result by name.
const Driver* driver(std::string* why = nullptr);

// ze_result_t's name ("ZE_RESULT_ERROR_UNINITIALIZED") and value in hex.
std::string resultName(ze_result_t r);

// Any other entry point of the loaded library (null where it has none, or
// where driver() is null): the Device takes the rest of its calls here,
// typed by Level Zero's own header.
void* entryPoint(const char* name);

// The xe kernel target part ("pvc", "bmg", "dg2") of an Intel GPU by its
// PCI device id, "" for one strata does not know: PVC 0x0BD0-0x0BDB (Data
// Center GPU Max), BMG 0xE200-0xE2FF (Arc B-series) and Lunar Lake 0x6420,
// 0x64A0, 0x64B0 (both Xe2: "bmg"), DG2 0x5690-0x56CF (Arc A-series).
std::string xePart(uint32_t deviceId);

// One GPU as discovery reports it.
struct GpuInfo {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  std::string name;
  uint32_t vendorId = 0, deviceId = 0;
  uint32_t eus = 0;            // slices x sub-slices x EUs per sub-slice
  uint32_t xeCores = 0;        // slices x sub-slices (Xe cores)
  uint32_t simdWidth = 0;      // physical EU SIMD width
  uint32_t threadsPerEu = 0;
  uint32_t clockMhz = 0;
  uint64_t memoryBytes = 0;    // summed over the device's memory ordinals
  uint32_t maxGroupSize = 0, maxSharedLocalMemory = 0;
  std::vector<uint32_t> subGroupSizes;
};

// Every GPU of every driver. Throws strata::Error "no Level Zero device:
// <why>" when the loader or zeInit fails or no driver reports a GPU, and
// names the call and its result when a discovery call fails.
std::vector<GpuInfo> gpus();

// "" when gpus() would return at least one GPU, else why not.
std::string unavailable();

// One line per GPU: name, part, EUs, clock, memory, limits.
std::string describe(const GpuInfo& g);

}  // namespace strata::runtime::level_zero
