#!/usr/bin/env bash
# README command two: install, build everything, run the whole test suite
# (gtest units and fixtures, lit/FileCheck, layering and CLI checks) via ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)"
