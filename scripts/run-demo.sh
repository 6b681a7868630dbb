#!/usr/bin/env bash
# README command one: install, build, and generate text with the bundled tiny
# Llama on the CPU (reference kernels). Extra arguments go to `strata run`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh strata
model=models/testdata/tiny-llama
# "Triton compiles tile programs for GPUs." as token ids (tokenizer.json's BPE).
ids=0,53,308,425,294,271,259,294,70,407,72,83,388,84,332,383,84,15
echo "strata run $model --prompt-ids $ids --max-new-tokens 24 $*" >&2
exec build/bin/strata run "$model" --prompt-ids "$ids" --max-new-tokens 24 "$@"
