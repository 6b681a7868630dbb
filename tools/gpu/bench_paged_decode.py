"""Paged decode attention on the GPU in one call: strata's generated kernels
(`strata-gpu bench-paged-decode`, a subprocess: Llama-3-8B's 32 query heads
over 8 KV heads of dim 128, one new token per sequence, the KV cache in
shuffled pages of 16 tokens, batch 1..64, context 1k..32k) as achieved HBM
bandwidth (the K and V bytes each step reads), next to a device copy's
bandwidth and PyTorch SDPA on contiguous KV (q [B, 32, 1, 128], k / v [B,
8, ctx, 128], enable_gqa; its default backend choice) on the same shapes.
CUDA-event timing: strata's steps launched one by one on the stream (us)
and replayed as one CUDA graph (graph us: as the model runs its decode
steps); SDPA and the same-size copies in a CUDA graph (their kernels
without Python's per-call dispatch). "/ same-size copy" compares the graph
figure with a copy of the step's own bytes.

    python3 tools/gpu/bench_paged_decode.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT

Writes OUT/paged_decode.json and prints a markdown table. Python is the
harness only; strata's kernels run from the C++ runtime.
"""
import json
import os

import torch
import torch.nn.functional as F

from harness import parse, peer_ms, run_strata, time_ms, torch_dtype  # (same directory)


def copy_gbs(reps):
    """Device-to-device copy of 2 GiB: bytes read + written per second."""
    x = torch.empty(1 << 30, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x), reps)
    return 2 * x.numel() * 2 / (ms * 1e-3) / 1e9


def copy_gbs_of(bytes_, reps):
    """A device copy of `bytes_` (read + written): what a copy achieves at a
    step's own size (a few MB at batch 1 is latency-bound for any kernel)."""
    x = torch.empty(bytes_ // 2, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    ms = peer_ms(lambda: y.copy_(x), reps)
    return 2 * bytes_ / (ms * 1e-3) / 1e9


def run(a):
    strata = run_strata(a, "bench-paged-decode", "paged-decode-strata.json")
    dt = torch_dtype(a.dtype)
    copy = copy_gbs(a.reps)
    rows = []
    print(f"device copy: {copy:.0f} GB/s\n")
    print("| batch | context | splits | strata us | strata GB/s | / copy | strata graph us | graph GB/s | / copy "
          "| / same-size copy | SDPA (contiguous KV) us | SDPA GB/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in strata["paged_decode"]:
        b, h, hk, d, n = s["batch"], s["heads"], s["kv_heads"], s["head_dim"], s["context"]
        q = torch.randn(b, h, 1, d, dtype=dt, device="cuda")
        k = torch.randn(b, hk, n, d, dtype=dt, device="cuda")
        v = torch.randn(b, hk, n, d, dtype=dt, device="cuda")
        ms = peer_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), a.reps)
        bytes_ = b * n * hk * 2 * d * 2
        sdpa = bytes_ / (ms * 1e-3) / 1e9
        same = copy_gbs_of(bytes_, a.reps)
        rows.append({**s, "sdpa_us": ms * 1e3, "sdpa_gbs": sdpa, "copy_gbs": copy, "same_size_copy_gbs": same})
        g = s["graph_gbs"]
        print(f"| {b} | {n} | {s['splits']} | {s['us']:.1f} | {s['gbs']:.0f} | {s['gbs'] / copy:.2f} | "
              f"{s['graph_us']:.1f} | {g:.0f} | {g / copy:.2f} | {g / same:.2f} | {ms * 1e3:.1f} | {sdpa:.0f} |")
        del q, k, v
    json.dump({"device": torch.cuda.get_device_name(), "dtype": a.dtype, "copy_gbs": copy, "rows": rows},
              open(os.path.join(a.out, "paged_decode.json"), "w"), indent=1)


def main():
    run(parse("Paged decode attention: strata vs copy bandwidth and SDPA on contiguous KV", reps=20))


if __name__ == "__main__":
    main()
