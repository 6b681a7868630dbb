#!/bin/bash
# GGUF files on this CPU: `strata bench decode` (--backend cpu kernels)
# beside llama.cpp's `llama-bench` on the same files, rounds interleaved
# (this machine's speed drifts), batch-1 decode and a 128-token prompt
# (docs/benchmarks.md). Writes OUT_JSON with every round's raw results.
#
#   tools/cpu_gguf_compare.sh LLAMA_BENCH OUT_JSON FILE.gguf...
#
# LLAMA_BENCH: llama-bench built from the llama-cpp-python 0.3.16 sdist's
# vendor/llama.cpp (CPU); ROUNDS (default 2).
set -euo pipefail
bench=$1 out=$2
shift 2
strata=${STRATA:-build/bin/strata} rounds=${ROUNDS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for f in "$@"; do
    name=$(basename "$f" .gguf)
    "$strata" bench decode --model "$f" --batch 1 --tokens 32 --prompt-tokens 128 --json "$tmp/strata-$name-$r.json" \
      > /dev/null 2> "$tmp/strata.log" || { cat "$tmp/strata.log"; exit 1; }
    LD_LIBRARY_PATH=$(dirname "$bench") "$bench" -m "$f" -p 128 -n 32 -t 2 -r 3 -o json > "$tmp/llama-$name-$r.json" 2> /dev/null
  done
done
python3 - "$tmp" "$out" "$rounds" "$@" <<'PY'
import json, os, subprocess, sys
tmp, out, rounds, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
res = {"date": subprocess.run(["date", "+%Y-%m-%d"], capture_output=True, text=True).stdout.strip(),
       "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
       "llama_cpp": "llama-bench -p 128 -n 32 -t 2 -r 3", "strata": "strata bench decode --batch 1 --tokens 32 --prompt-tokens 128 (warm prefill)",
       "rounds": []}
print(f"{'file':<24} {'decode tok/s strata / llama.cpp':>34} {'prompt tok/s strata / llama.cpp':>34}")
for r in range(1, rounds + 1):
    rnd = {}
    for f in files:
        name = os.path.basename(f)[:-5]
        s = json.load(open(f"{tmp}/strata-{name}-{r}.json"))["rows"][0]
        l = json.load(open(f"{tmp}/llama-{name}-{r}.json"))
        pp = next(x["avg_ts"] for x in l if x["n_prompt"] > 0)
        tg = next(x["avg_ts"] for x in l if x["n_gen"] > 0)
        sp = 128 / (s["prefill_ms"] / 1e3)
        rnd[name] = {"strata": {"decode_tokens_per_s": s["tokens_per_s"], "prompt_tokens_per_s": sp, "raw": s},
                     "llama_cpp": {"decode_tokens_per_s": tg, "prompt_tokens_per_s": pp}}
        print(f"{name:<24} {s['tokens_per_s']:>12.1f} / {tg:<8.1f} ({s['tokens_per_s'] / tg:.2f}x) "
              f"{sp:>12.1f} / {pp:<8.1f} ({sp / pp:.2f}x)")
    res["rounds"].append(rnd)
json.dump(res, open(out, "w"), indent=1)
PY
