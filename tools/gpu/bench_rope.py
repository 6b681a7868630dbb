"""RoPE on the GPU in one call: strata's generated kernels (`strata-gpu
bench-rope`, a subprocess) side by side with the Hugging Face eager form
(q * cos + rotate_half(q) * sin, cos / sin gathered at the positions and cast
to the dtype, as transformers' Llama does) on Llama-3-8B's q (32 heads) and
k (8 heads) rows of dim 128, 1..4096 tokens, CUDA-event timing.

    python3 tools/gpu/bench_rope.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT

Writes OUT/rope.json and prints a markdown table. Python is the harness
only; strata's kernels run from the C++ runtime.
"""
import json
import os

import torch

from harness import parse, run_strata, time_ms, torch_dtype  # (same directory)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def run(a):
    strata = run_strata(a, "bench-rope", "rope-strata.json")
    dt = torch_dtype(a.dtype)
    table_rows = 8192
    rows = []
    print("| heads x dim | tokens | strata us | strata GB/s | HF eager us | strata speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    for s in strata["rope"]:
        t, h, d = s["tokens"], s["heads"], s["head_dim"]
        q = torch.randn(t, h, d, dtype=dt, device="cuda")
        cos_t = torch.randn(table_rows, d, dtype=torch.float32, device="cuda")
        sin_t = torch.randn(table_rows, d, dtype=torch.float32, device="cuda")
        pos = torch.randint(0, table_rows, (t,), device="cuda")

        def hf():
            cos = cos_t[pos].to(dt).unsqueeze(1)
            sin = sin_t[pos].to(dt).unsqueeze(1)
            return q * cos + rotate_half(q) * sin

        ms = time_ms(hf, a.reps)
        rows.append({**s, "hf_us": ms * 1e3})
        print(f"| {h} x {d} | {t} | {s['us']:.1f} | {s['gbs']:.0f} | {ms * 1e3:.1f} | {ms * 1e3 / s['us']:.2f} |")
    json.dump({"device": torch.cuda.get_device_name(), "dtype": a.dtype, "rows": rows},
              open(os.path.join(a.out, "rope.json"), "w"), indent=1)


def main():
    run(parse("RoPE: strata vs the HF eager form", reps=50))


if __name__ == "__main__":
    main()
