#!/bin/bash
# Serving on this CPU: `strata serve` (--backend cpu) against llama.cpp's
# `llama-server` (CPU build) on the same random Llama-shaped model and
# weights, both under `strata bench serve` with the same requests
# (docs/benchmarks.md). The model: `strata make-model` of
# models/configs/llama-100m.json (124M parameters, f32) with
# tools/gpu/bench_tokenizer.py's tokenizer, written to GGUF by
# tools/gpu/hf_to_gguf.py (gguf-py; convert_hf_to_gguf.py needs PyTorch).
# TYPE=f16 serves the F16 GGUF in both (strata reads the GGUF file itself);
# the default, f32, serves the HF folder in strata and its F32 GGUF in
# llama-server.
#
#   [TYPE=f32|f16] tools/cpu_serve_compare.sh LLAMA_SERVER PYTHON_WITH_GGUF OUT_DIR
#
# LLAMA_SERVER: llama-server built from the llama-cpp-python 0.3.16 sdist's
# vendor/llama.cpp (cmake -DGGML_NATIVE=ON -DLLAMA_CURL=OFF, target
# llama-server); PYTHON_WITH_GGUF: a python3 with gguf==0.17.1, numpy and
# transformers (gguf's LlamaHfVocab reads the tokenizer through it).
set -euo pipefail
server=$1 py=$2 out=$3
strata=${STRATA:-build/bin/strata}
conc=${CONC:-1 4 16} prompts=${PROMPTS:-8 16 32} input=${INPUT_LEN:-128} output=${OUTPUT_LEN:-64} type=${TYPE:-f32}
model=$out/model
mkdir -p "$out"
[ -f "$model/model.safetensors" ] || "$strata" make-model --config models/configs/llama-100m.json -o "$model" --seed 1
python3 tools/gpu/bench_tokenizer.py "$model/config.json" "$model"
[ -f "$out/model-$type.gguf" ] || "$py" tools/gpu/hf_to_gguf.py "$model" "$out/model-$type.gguf" --outtype "$type"
served=$model
[ "$type" = f32 ] || served=$out/model-$type.gguf
vocab=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$model/config.json")
top=$(echo $conc | tr ' ' '\n' | sort -n | tail -1)

bench() {  # NAME PORT PID
  for i in $(seq 600); do curl -sf "http://127.0.0.1:$2/health" > /dev/null && break; kill -0 "$3" || exit 1; sleep 1; done
  "$strata" bench serve --url "http://127.0.0.1:$2" --concurrency $conc --num-prompts $prompts --input-len "$input" \
    --output-len "$output" --vocab "$vocab" --label "$1 $type" --json "$out/serve-$1-$type.json"
  kill -INT "$3"; wait "$3" || true
}
"$strata" serve "$served" --backend cpu --port 8200 --max-seqs "$top" 2> "$out/strata.log" &
bench strata 8200 $!
"$server" -m "$out/model-$type.gguf" -t "$(nproc)" -np "$top" -c $((top * (input + output + 16))) --port 8201 \
  > "$out/llama-server.log" 2>&1 &
bench llama.cpp 8201 $!
"$strata" bench serve --compare "$out/serve-strata-$type.json" --compare "$out/serve-llama.cpp-$type.json" \
  --plot "$out/serve-$type.png"
