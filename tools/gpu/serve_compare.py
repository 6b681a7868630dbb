"""Serving on the GPU: `strata-gpu serve` of a compiled Llama-3-8B-shaped
model against llama.cpp's `llama-server` (CUDA) with the same random bf16
weights, both under `strata-gpu bench-serve` at the same concurrencies, in
one run of the `bench` stage.

    python3 tools/gpu/serve_compare.py setup --llama-cpp SRC --config models/configs/llama-3-8b.json --work /tmp/sc
    python3 tools/gpu/serve_compare.py bench --strata-gpu BIN --artifact DIR --work /tmp/sc --out $OUT

`setup` (a separate device call: it takes minutes) builds llama-server from
the llama.cpp source of PyPI's llama-cpp-python sdist (CUDA, sm_90) in the
background, makes the random weights with HF's initialization (seeded; the
safetensors layout the artifact was compiled from, check_model.py's
writer), writes a tokenizer for the vocabulary (bench_tokenizer.py: no real
one can be downloaded) and converts the folder to a bf16 GGUF with
llama.cpp's own convert_hf_to_gguf.py. The converter imports mistral_common,
which the GPU image lacks: carry its wheels (README of the device tool) —
mistral-common 1.8.3, pydantic 2.11.7, pydantic-core 2.33.2,
annotated-types 0.7.0, typing-inspection 0.4.1, jsonschema 4.25.1,
jsonschema-specifications 2025.4.1, referencing 0.36.2, rpds-py 0.27.0,
pydantic-extra-types 2.10.5, pycountry 24.6.1 — on PYTHONPATH for setup.
The image's transformers 5.17 ran the converter (2026-11-29).

`bench` times strata's batch-1 decode step (`bench-model`, the TPOT target
at concurrency 1), then serves with each server in turn and runs the same
requests: random token-id prompts of --input-len tokens, --output-len
generated tokens (ignore_eos), greedy, streaming. JSON per server and a
table on stdout."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def setup(a):
    os.makedirs(a.work, exist_ok=True)
    build = os.path.join(a.work, "llama-build")
    log = open(os.path.join(a.work, "llama-build.log"), "w")
    cmd = (f"cmake -S {a.llama_cpp} -B {build} -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON "
           f"-DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
           f"&& cmake --build {build} -j {os.cpu_count()} --target llama-server")
    t0 = time.time()
    built = os.path.exists(os.path.join(build, "bin", "llama-server"))
    builder = None if built else subprocess.Popen(["bash", "-c", cmd], stdout=log, stderr=subprocess.STDOUT)

    import torch
    sys.path.insert(0, HERE)
    from check_model import hf_model, write_weights
    from bench_tokenizer import build as tokenizer

    # A later setup (same machine, same seed) keeps the weights it finds.
    weights = os.path.join(a.work, "weights")
    done = os.path.join(weights, f"seed-{a.seed}")
    if os.path.exists(done):
        cfg = json.load(open(a.config))
    else:
        model, cfg = hf_model(a.config, a.seed)
        write_weights(model, cfg, weights)
        del model
        torch.cuda.empty_cache()
        open(done, "w").close()
    config = dict(cfg, architectures=["LlamaForCausalLM"], torch_dtype="bfloat16")
    json.dump(config, open(os.path.join(weights, "config.json"), "w"), indent=1)
    tok, tok_config = tokenizer(config)
    json.dump(tok, open(os.path.join(weights, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump(tok_config, open(os.path.join(weights, "tokenizer_config.json"), "w"), indent=1)
    print(f"weights (HF init, seed {a.seed}) and tokenizer in {weights}: {time.time() - t0:.0f} s", flush=True)

    gguf = os.path.join(a.work, "model-bf16.gguf")
    t = time.time()
    p = subprocess.run([sys.executable, os.path.join(a.llama_cpp, "convert_hf_to_gguf.py"), weights, "--outtype", "bf16",
                        "--outfile", gguf], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"convert_hf_to_gguf.py failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    print(f"{gguf}: {os.path.getsize(gguf) / 2**30:.1f} GiB in {time.time() - t:.0f} s", flush=True)
    rc = builder.wait() if builder else 0
    log.close()
    if rc:
        sys.exit(f"llama-server build failed:\n{open(os.path.join(a.work, 'llama-build.log')).read()[-4000:]}")
    print(f"llama-server built in {time.time() - t0:.0f} s (from the start of setup)", flush=True)


def wait_ready(url, proc, what, timeout=900):
    t = time.time()
    while time.time() - t < timeout:
        if proc.poll() is not None:
            sys.exit(f"{what} exited ({proc.returncode}) before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return time.time() - t
        except Exception:
            pass
        time.sleep(1)
    sys.exit(f"{what} was not ready in {timeout} s")


def bench_server(a, name, cmd, port, log_path):
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        ready = wait_ready(url, proc, name)
        print(f"{name} ready in {ready:.0f} s", flush=True)
        out = os.path.join(a.out, f"serve-{name}.json")
        levels = [str(c) for c in a.concurrency]
        counts = [str(max(a.min_prompts, a.rounds * c)) for c in a.concurrency]
        b = subprocess.run([a.strata_gpu, "bench-serve", "--url", url, "--concurrency", *levels, "--num-prompts", *counts,
                            "--input-len", str(a.input_len), "--output-len", str(a.output_len), "--label", name,
                            "--vocab", str(json.load(open(a.config))["vocab_size"]),
                            "--json", out], capture_output=True, text=True)
        print(b.stdout, flush=True)
        if b.returncode:
            sys.exit(f"bench-serve against {name} failed ({b.returncode}):\n{b.stderr[-3000:]}")
        return json.load(open(out))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def bench(a):
    os.makedirs(a.out, exist_ok=True)
    weights = os.path.join(a.work, "weights")
    # strata's batch-1 decode step after a prompt of --input-len tokens: the
    # TPOT that serving at concurrency 1 should come within 10 % of.
    m = subprocess.run([a.strata_gpu, "bench-model", a.artifact, "--weights", weights, "--prompts", str(a.input_len),
                        "--batches", "1", "--context", str(a.input_len), "--json", os.path.join(a.out, "bench-model.json")],
                       capture_output=True, text=True)
    print(m.stdout[-1500:], flush=True)
    if m.returncode:
        sys.exit(f"bench-model failed ({m.returncode}):\n{m.stderr[-3000:]}")
    top = max(a.concurrency)
    # llama.cpp holds at most 64 sequences (LLAMA_MAX_SEQ in this version):
    # llama-server gets min(top, 64) slots and queues the requests beyond.
    slots = min(top, 64)
    ctx = slots * (a.input_len + a.output_len + 16)
    results = {}
    for name in set(["strata", "llama.cpp"]) - set(a.servers):  # results of an earlier call
        results[name] = json.load(open(os.path.join(a.out, f"serve-{name}.json")))
    if "strata" in a.servers:
        results["strata"] = bench_server(a, "strata", [
            a.strata_gpu, "serve", a.artifact, "--weights", weights, "--port", "8100", "--max-seqs", str(top),
            "--max-step-tokens", str(a.step_tokens), "--max-queue", str(4 * top)], 8100,
            os.path.join(a.out, "strata.log"))
    server = os.path.join(a.work, "llama-build", "bin", "llama-server")
    if "llama.cpp" in a.servers:
        results["llama.cpp"] = bench_server(a, "llama.cpp", [
            server, "-m", os.path.join(a.work, "model-bf16.gguf"), "-ngl", "99", "-c", str(ctx), "-np", str(slots),
            "-b", str(a.step_tokens), "-fa", "--host", "127.0.0.1", "--port", "8101"], 8101,
            os.path.join(a.out, "llama-server.log"))
    print(f"\n{'conc':>5} | {'server':>9} | {'out tok/s':>9} | {'TTFT p50/p99 ms':>17} | {'TPOT p50/p99 ms':>16} | ok/fail")
    for i, c in enumerate(a.concurrency):
        for name, r in sorted(results.items(), reverse=True):
            run = r["runs"][i]
            print(f"{c:>5} | {name:>9} | {run['output_throughput']:9.1f} | "
                  f"{run['ttft_ms']['p50']:7.1f} / {run['ttft_ms']['p99']:7.1f} | "
                  f"{run['tpot_ms']['p50']:6.2f} / {run['tpot_ms']['p99']:6.2f} | {run['completed']}/{run['failed']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stage", choices=["setup", "bench"])
    p.add_argument("--work", default="/tmp/serve-compare", help="weights, GGUF and the llama.cpp build (about 32 GB)")
    p.add_argument("--llama-cpp", help="setup: llama.cpp's source folder")
    p.add_argument("--config", default=os.path.join(HERE, "..", "..", "models", "configs", "llama-3-8b.json"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strata-gpu", help="bench: the strata-gpu binary")
    p.add_argument("--artifact", help="bench: `strata compile` of the shape checkpoint (tools/gpu/shape_checkpoint.py)")
    p.add_argument("--out", default="serve-compare-out")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128, 256])
    p.add_argument("--rounds", type=int, default=2, help="requests per level: this many times the concurrency...")
    p.add_argument("--min-prompts", type=int, default=16, help="...and at least this many")
    p.add_argument("--input-len", type=int, default=512)
    p.add_argument("--output-len", type=int, default=128)
    p.add_argument("--servers", nargs="+", default=["strata", "llama.cpp"],
                   help="bench: the servers to run now (the others' JSON from an earlier call in --out)")
    p.add_argument("--step-tokens", type=int, default=2048, help="tokens per model step (both servers)")
    a = p.parse_args()
    if a.stage == "setup":
        if not a.llama_cpp:
            sys.exit("setup needs --llama-cpp SRC")
        setup(a)
    else:
        if not (a.strata_gpu and a.artifact):
            sys.exit("bench needs --strata-gpu and --artifact")
        bench(a)


if __name__ == "__main__":
    main()
