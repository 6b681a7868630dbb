#!/bin/bash
# Serving on this CPU: `strata serve` (--backend cpu) against llama.cpp's
# `llama-server` (CPU build) on the same random Llama-shaped model and
# weights, both under `strata bench serve` with the same requests
# (docs/benchmarks.md). The model: `strata make-model` of
# models/configs/llama-100m.json (124M parameters, f32) with
# tools/gpu/bench_tokenizer.py's tokenizer, written to GGUF by
# tools/gpu/hf_to_gguf.py (gguf-py; convert_hf_to_gguf.py needs PyTorch).
# TYPE=f16 serves the F16 GGUF in both (strata reads the GGUF file itself);
# ROUNDS (default 2) rounds, the two servers taking turns level by level;
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

# Both servers run side by side (an idle one takes no CPU) and take turns:
# ROUNDS rounds (seed = round: fresh prompts each round, the same for both),
# each level of a round strata first, then llama-server. This machine's
# speed drifts by 20-30 % within minutes, so one server's whole sweep
# followed by the other's compares two machines; each keeps its best round
# per level (the best of each side, as `strata bench kernels` does).
rounds=${ROUNDS:-2}
wait_up() {  # PORT PID
  for i in $(seq 600); do curl -sf "http://127.0.0.1:$1/health" > /dev/null && return; kill -0 "$2" || exit 1; sleep 1; done
  exit 1
}
"$strata" serve "$served" --backend cpu --port 8200 --max-seqs "$top" 2> "$out/strata.log" &
spid=$!
"$server" -m "$out/model-$type.gguf" -t "$(nproc)" -np "$top" -c $((top * (input + output + 16))) --port 8201 \
  > "$out/llama-server.log" 2>&1 &
lpid=$!
trap 'kill -INT $spid $lpid 2> /dev/null' EXIT
wait_up 8200 $spid
wait_up 8201 $lpid
for r in $(seq "$rounds"); do
  i=0
  for c in $conc; do
    n=$(echo $prompts | cut -d' ' -f$((i + 1)))
    i=$((i + 1))
    for side in strata:8200 llama.cpp:8201; do
      "$strata" bench serve --url "http://127.0.0.1:${side#*:}" --concurrency "$c" --num-prompts "$n" --input-len "$input" \
        --output-len "$output" --vocab "$vocab" --seed "$r" --label "${side%:*} $type" \
        --json "$out/round$r-c$c-${side%:*}-$type.json"
    done
  done
done
kill -INT $spid $lpid; wait $spid $lpid || true
trap - EXIT
# serve-<side>-<type>.json: per level the best round (by output tokens/s),
# every round's results under "rounds".
python3 - "$out" "$type" "$rounds" $conc <<'PY'
import json, sys
out, typ, rounds, levels = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
for side in ("strata", "llama.cpp"):
    merged, every = None, []
    for c in levels:
        runs = [json.load(open(f"{out}/round{r}-c{c}-{side}-{typ}.json")) for r in range(1, rounds + 1)]
        every += [dict(run["runs"][0], round=r + 1) for r, run in enumerate(runs)]
        best = max(runs, key=lambda d: d["runs"][0]["output_throughput"])
        if merged is None:
            merged = dict(best, runs=[])
        merged["runs"].append(best["runs"][0])
    merged["rounds"] = every
    json.dump(merged, open(f"{out}/serve-{side}-{typ}.json", "w"), indent=2)
PY
"$strata" bench serve --compare "$out/serve-strata-$type.json" --compare "$out/serve-llama.cpp-$type.json" \
  --plot "$out/serve-$type.png"
