"""What the GPU benchmark scripts share: their command line, running
`strata-gpu bench-*` (strata's kernels, timed by the C++ runtime) into a JSON
file, and CUDA-event timing of the PyTorch / Triton peers."""
import argparse
import json
import os
import subprocess

import torch


def parse(description, reps):
    """--strata-gpu, --kernels, --out, --dtype, --reps (default `reps`)."""
    p = argparse.ArgumentParser(description=description)
    add_options(p, reps)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return a


def add_options(p, reps):
    p.add_argument("--strata-gpu", required=True, help="the strata-gpu binary")
    p.add_argument("--kernels", required=True, help="kernel set directory from `strata compile-kernels`")
    p.add_argument("--out", required=True, help="directory for the JSON results")
    p.add_argument("--dtype", default="bf16", help="bf16 or f16")
    p.add_argument("--reps", type=int, default=reps, help="timed launches per case")


def run_strata(a, subcommand, json_name):
    """Runs `strata-gpu SUBCOMMAND` with a's options; returns its JSON."""
    path = os.path.join(a.out, json_name)
    subprocess.run([a.strata_gpu, subcommand, "--kernels", a.kernels, "--dtype", a.dtype, "--reps", str(a.reps),
                    "--json", path], check=True)
    with open(path) as f:
        return json.load(f)


def time_ms(fn, reps):
    """Mean milliseconds per call over `reps` calls after one warm-up."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def torch_dtype(name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]
