#!/usr/bin/env bash
# Installs what strata needs from Debian 12 (only packages that are missing)
# and builds it into build/. Sourced by run-demo.sh and run-tests.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(
  cmake ninja-build ccache clang-22 lld-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libclang-rt-22-dev libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev libcli11-dev
  libfmt-dev libgtest-dev libdnnl-dev libze-dev libpcre2-dev libicu-dev pkg-config python3 python3-venv libboost-dev
  prometheus-cpp-dev libcairo2-dev fonts-dejavu-core ocl-icd-opencl-dev opencl-c-headers intel-opencl-icd
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    echo "strata setup: installing ${missing[*]}" >&2
    bash -c "$cmd"
  elif command -v sudo >/dev/null 2>&1; then
    echo "strata setup: installing ${missing[*]} (sudo)" >&2
    sudo bash -c "$cmd"
  else
    echo "strata setup: these packages are missing and I am not root and have no sudo. Run as root:" >&2
    echo "  $cmd" >&2
    exit 1
  fi
fi

if [ ! -f build/build.ninja ]; then
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -B build -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >&2
fi
ninja -C build "$@" >&2
