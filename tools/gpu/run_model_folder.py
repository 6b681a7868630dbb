"""`strata run MODEL --backend cuda` from a model folder, end to end, on a
machine with both the compiler and a GPU: the first run compiles the model
into a fresh kernel cache, the second finds it there, and both must
generate exactly the token ids (and log-probabilities) of the same model
run from an artifact that `strata compile --target cuda:sm_90` wrote on
another machine (same compiler source, so the same kernels).

    python3 tools/gpu/run_model_folder.py --strata BIN --folder DIR --artifact ART \\
        [--weights-from-config CONFIG] [--new 32] --out OUT

With --weights-from-config the folder is made first: HF's random weights
for that config (check_model.py's, seeded), written in the layout of
shape_checkpoint.py's checkpoint, which is what ART must be compiled from.
Without it the folder is a model as it is (e.g. models/testdata/tiny-llama)
and ART its compiled form. The artifact runs with --weights FOLDER.
Exits 1 when the token ids differ."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, env):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    outs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if not outs:
        sys.exit(f"{' '.join(cmd)} printed no JSON result:\n{p.stdout[-2000:]}")
    return outs[-1], time.time() - t, p.stderr


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strata", required=True, help="the strata binary (compiler and runtime)")
    p.add_argument("--folder", required=True, help="the model folder (made with --weights-from-config)")
    p.add_argument("--artifact", required=True, help="the same model from strata compile --target cuda:sm_90")
    p.add_argument("--weights-from-config", metavar="CONFIG")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--prompt-tokens", type=int, default=16)
    p.add_argument("--new", type=int, default=32)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)

    if args.weights_from_config:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from check_model import hf_model, write_weights

        t = time.time()
        model, cfg = hf_model(args.weights_from_config, args.seed)
        write_weights(model, cfg, args.folder)
        shutil.copy(args.weights_from_config, os.path.join(args.folder, "config.json"))
        del model
        import torch
        torch.cuda.empty_cache()
        print(f"weights written to {args.folder} in {time.time() - t:.1f} s", flush=True)
    vocab = json.load(open(os.path.join(args.folder, "config.json")))["vocab_size"]
    prompt = ",".join(str((i * 7919 + 13) % vocab) for i in range(args.prompt_tokens))
    common = ["--prompt-ids", prompt, "--max-new-tokens", str(args.new), "--ignore-eos", "--json",
              "--logprobs", "1"]

    env = dict(os.environ, STRATA_KERNEL_CACHE=tempfile.mkdtemp(prefix="strata-cache-"))
    rows = []
    for name, cmd in [
        ("model folder, first run (compiles)", [args.strata, "run", args.folder, "--backend", "cuda"]),
        ("model folder, second run (cached)", [args.strata, "run", args.folder, "--backend", "cuda"]),
        ("artifact compiled elsewhere", [args.strata, "run", args.artifact, "--weights", args.folder]),
    ]:
        out, secs, err = run(cmd + common, env)
        rows.append({"run": name, "seconds": round(secs, 2), "token_ids": out["token_ids"],
                     "logprobs": [s["logprob"] for s in out["logprobs"]], "stderr_tail": err[-2000:]})
        print(f"{name}: {secs:.1f} s", flush=True)
    cache = os.listdir(env["STRATA_KERNEL_CACHE"])

    same_ids = all(r["token_ids"] == rows[0]["token_ids"] for r in rows)
    lp_diff = max(abs(a - b) for r in rows for a, b in zip(r["logprobs"], rows[0]["logprobs"]))
    json.dump({"rows": rows, "cache_entries": cache, "same_token_ids": same_ids, "max_logprob_diff": lp_diff},
              open(os.path.join(args.out, "run_model_folder.json"), "w"), indent=1)
    # token_ids begin with the prompt's.
    print(f"\n| run | seconds | first generated ids |\n| --- | --- | --- |")
    for r in rows:
        print(f"| {r['run']} | {r['seconds']} | {r['token_ids'][args.prompt_tokens:][:8]} |")
    print(f"kernel cache entries: {cache}")
    print(f"same token ids: {same_ids}; max |logprob difference|: {lp_diff:.3g}")
    sys.exit(0 if same_ids else 1)


if __name__ == "__main__":
    main()
