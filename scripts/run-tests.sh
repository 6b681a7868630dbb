#!/usr/bin/env bash
# README command two: install, build everything, run the whole test suite
# (gtest units and fixtures, lit/FileCheck, layering and CLI checks) via ctest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
# The test suite's Python packages (pinned) in build/pyenv, installed when
# scripts/requirements-test.txt changes.
if ! cmp -s scripts/requirements-test.txt build/pyenv/requirements.txt 2>/dev/null; then
  rm -rf build/pyenv
  python3 -m venv build/pyenv
  build/pyenv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt >&2
  cp scripts/requirements-test.txt build/pyenv/requirements.txt
fi
cd build
ctest --output-on-failure -j"$(nproc)"
