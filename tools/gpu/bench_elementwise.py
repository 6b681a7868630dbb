"""Fused elementwise regions on the GPU in one call: strata's generated
kernels (`strata-gpu bench-elementwise`, a subprocess, on the artifact of
the test chains: build/cuda-models/elementwise-<dtype>) side by side with
the same arithmetic in PyTorch eager (one kernel per op, as a PyTorch user
runs it; F.layer_norm and torch.softmax where PyTorch has a fused op), at
Llama widths and rows 1..4096, CUDA-event timing (the peer's calls captured
in a CUDA graph), against the measured copy bandwidth.

    python3 tools/gpu/bench_elementwise.py --strata-gpu .gpu/strata-gpu \\
        --kernels .gpu/cuda-models/elementwise-bf16 --out $OUT

GB/s counts each operand and output moved once (what a fused kernel must
move at least) for both. Writes OUT/elementwise.json and prints a markdown
table. Python is the harness only; strata's kernels run from the C++ runtime.
"""
import json
import os

import torch
import torch.nn.functional as F

from harness import parse, run_strata, time_ms, torch_dtype  # (same directory)


def peer(chain, rows, cols, dt):
    """The chain's arithmetic (tests/unit/elementwise_chains.h) in PyTorch
    eager on [rows, cols] operands."""
    x = torch.randn(rows, cols, dtype=dt, device="cuda")
    v = torch.randn(cols, dtype=dt, device="cuda")
    w = torch.randn(cols, dtype=dt, device="cuda")
    c = torch.randn(rows, 1, dtype=dt, device="cuda")
    if chain == "softmax_tanh":
        def f():
            s = x * 0.5 + v
            return torch.softmax(torch.tanh(s), -1), s
    elif chain == "layernorm_unfused":
        def f():
            return F.layer_norm(x, (cols,), w, v, 1e-5)
    elif chain == "gelu_reductions":
        def f():
            g = x * 0.5 * (1 + torch.erf(x * 0.70710678))
            return g, g.amax(-1), x.amin(-1, keepdim=True), g.sum(-1, keepdim=True)
    elif chain == "col_operand_3d":
        def f():
            d = x - c
            ec = torch.exp(-c)
            y = torch.maximum(torch.log(d.abs() + 1), torch.sigmoid(d)) / ec + torch.minimum(F.silu(x), F.relu(w))
            return y, c * ec
    elif chain == "pow_row_exponent":
        def f():
            return torch.pow(x.abs() + 0.25, v)
    else:
        return None
    return f


def run(a):
    strata = run_strata(a, "bench-elementwise", "elementwise-strata.json")
    dt = torch_dtype(strata["dtype"])
    big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    copy_gbs = 2 * big.numel() / (time_ms(lambda: big.clone(), 10) * 1e-3) / 1e9
    rows = []
    print("| chain | cols | rows | strata us | strata GB/s | torch eager us | torch / strata |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in strata["elementwise"]:
        chain = s["node"].split(".")[0].rsplit("_", 1)[0]
        f = peer(chain, s["rows"], s["cols"], dt)
        ms = time_ms(f, a.reps, graph=True) if f else float("nan")
        rows.append({**s, "chain": chain, "torch_us": ms * 1e3})
        print(f"| {chain} | {s['cols']} | {s['rows']} | {s['us']:.1f} | {s['gbs']:.0f} | {ms * 1e3:.1f} | "
              f"{ms * 1e3 / s['us']:.2f} |")
    print(f"copy bandwidth (torch clone of 256 MiB): {copy_gbs:.0f} GB/s")
    json.dump({"device": torch.cuda.get_device_name(), "dtype": strata["dtype"], "copy_gbs": copy_gbs, "rows": rows},
              open(os.path.join(a.out, "elementwise.json"), "w"), indent=1)


def main():
    run(parse("Fused elementwise regions: strata vs PyTorch eager", reps=20))


if __name__ == "__main__":
    main()
