#!/usr/bin/env bash
# Fails when a folder includes what DESIGN.md's dependency rules forbid.
set -u
root=${1:?usage: check_layering.sh REPO_ROOT}
cd "$root" || exit 2
status=0
check() {  # check DIRS PATTERN WHY
  local dirs=$1 pattern=$2 why=$3 hits
  [ -n "$dirs" ] || { printf 'layering check: no files for "%s"\n' "$why"; status=1; return; }
  hits=$(grep -rnE "$pattern" $dirs --include='*.h' --include='*.cpp' --include='*.inc' 2>/dev/null)
  if [ -n "$hits" ]; then
    printf 'layering violation: %s\n%s\n' "$why" "$hits"
    status=1
  fi
}
check "ops runtime models" '#include *[<"](mlir|llvm|llvm-c)/' "ops/, runtime/ and models/ must not include MLIR or LLVM"
check "graph" '#include *"(codegen|runtime|models)/' "graph/ must not include codegen/, runtime/ or models/"
check "ops" '#include *"(runtime|models|graph|codegen|tools)/' "ops/ depends on nothing else in strata"
check "runtime" '#include *"(models|graph|codegen|tools)/' "runtime/ may include only ops/"
check "codegen" '#include *"(runtime|models|tools)/' "codegen/ must not include runtime/, models/ or tools/"
# Devices and targets (docs/design.md "Devices and targets"): the device
# interface and the code written against it never name a target; each
# target's folder names only its own.
check "$(ls -d runtime/*.h runtime/*.cpp runtime/devices/cpu runtime/devices/null tools 2>/dev/null)" \
  '#include *"runtime/devices/cuda/|\bcuda::|\bCU(function|stream|event|module|context|deviceptr|graph)\b|\bCuda(Device|Graph|TensorMaps)\b' \
  "only runtime/devices/cuda/ (and the registry that opens it) names CUDA types: the rest of runtime/ and tools/ speak runtime/device.h"
check "$(ls -d runtime/*.h runtime/*.cpp runtime/devices/cpu runtime/devices/null runtime/devices/cuda tools 2>/dev/null)" \
  '#include *"runtime/devices/level_zero/|\blevel_zero::|\bze(Init|DriverGet|DeviceGet)' \
  "only runtime/devices/level_zero/ (and the registry that opens it) names Level Zero"
check "$(ls runtime/*.h runtime/*.cpp)" '#include *"runtime/devices/(cuda|null|level_zero)/|#include *"runtime/devices/cpu/[^k]' \
  "runtime/ above runtime/devices/ includes no device's folder (runtime/device.h and runtime/devices/registry.h; the CPU executor's artifacts load runtime/devices/cpu/kernel_library.h)"
check "$(ls -d runtime/*.h runtime/*.cpp runtime/devices/cpu runtime/devices/null runtime/devices/cuda runtime/devices/level_zero tools 2>/dev/null)" \
  '#include *[<"]CL/|#include *"runtime/devices/opencl/|\bcl(CreateContext|GetPlatformIDs|CreateProgramWith)' \
  "only runtime/devices/opencl/ (the Xe test device) names OpenCL"
for d in cpu cuda null level_zero opencl; do
  check "runtime/devices/$d" "#include *\"runtime/devices/($(echo cpu cuda null level_zero opencl | tr ' ' '\n' | grep -vx $d | paste -sd'|'))/" \
    "a device folder includes no other device's folder"
done
check "codegen/targets/cpu codegen/targets/xe" '#include *"codegen/targets/cuda/|NVVM|NVPTX' \
  "a target folder includes no other target's folder; NVVM and NVPTX belong to codegen/targets/cuda"
check "codegen/targets/cuda codegen/targets/xe" '#include *"codegen/targets/cpu/' "a target folder includes no other target's folder"
check "codegen/targets/cpu codegen/targets/cuda" '#include *"codegen/targets/xe/|XeVM|xevm::' \
  "a target folder includes no other target's folder; XeVM belongs to codegen/targets/xe"
check "$(ls codegen/*.h codegen/*.cpp | grep -v '/Passes.h$')" '#include *"codegen/targets/|#include *"mlir/Dialect/LLVMIR/(NVVM|XeVM)' \
  "codegen/ above codegen/targets/ includes no target's folder (Passes.h alone includes the NVVM and XeVM dialects its generated pass declarations name)"
hits=$(grep -rnE '#include *"ops/' codegen --include='*.h' --include='*.cpp' 2>/dev/null | grep -vE '"ops/(abi|error|graph_def|row_forms)\.h"')
if [ -n "$hits" ]; then
  printf 'layering violation: %s\n%s\n' "codegen/ may include only ops/abi.h (the kernel ABI), ops/row_forms.h (the fused elementwise kernels' operand forms), ops/graph_def.h (the plan it annotates) and ops/error.h from ops/" "$hits"
  status=1
fi
[ $status -eq 0 ] && echo "layering ok"
exit $status
