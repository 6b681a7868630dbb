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


def parse_experiment(description, reps):
    """--out and --reps (default `reps`) for the experiment harnesses that
    run no strata binary (floors of what a kernel could reach)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", required=True, help="directory for the JSON results")
    p.add_argument("--reps", type=int, default=reps, help="timed launches per case")
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


def time_ms(fn, reps, graph=False):
    """Mean milliseconds per call over `reps` calls after one warm-up.

    graph=True captures the `reps` calls in one CUDA graph and times its
    replay: GPU time alone, without Python's per-call dispatch (10-30 us a
    call, which exceeds a small kernel's own time and would make the peer
    look slower than its kernel is)."""
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()  # warm-up outside the capture (library handles, autotuning)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn()
        g.replay()
        torch.cuda.synchronize()
        run = g.replay
        calls = 1
    else:
        fn()
        torch.cuda.synchronize()
        run = fn
        calls = reps
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def peer_ms(fn, reps):
    """time_ms of a peer library call in a CUDA graph (its kernels alone, as
    strata's are timed), or called eagerly where the call cannot be
    captured."""
    try:
        return time_ms(fn, reps, graph=True)
    except RuntimeError:
        torch.cuda.synchronize()
        return time_ms(fn, reps)


def torch_dtype(name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]
