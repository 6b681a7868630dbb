"""FlashAttention-2 forward on the GPU in one call: strata's generated kernels
(`strata-gpu bench-attention`, a subprocess) side by side with PyTorch SDPA's
FlashAttention-2 and cuDNN backends on the same shapes: 32 heads of dim 64
and 128, 16k tokens per launch (batch x seq, seq 1k..16k), causal and not;
Llama-3-8B's GQA prefill (32 query heads over 8 KV heads, dim 128,
batch 1, seq 128..8k; SDPA with enable_gqa), and strata's paged prefill
of the same (K / V read from a cache of shuffled pages; SDPA still on
contiguous K / V). CUDA-event timing (SDPA in a CUDA graph, so without
Python's dispatch); FLOPs =
4 B H S T D, halved when causal.

    python3 tools/gpu/bench_attention.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT

Writes OUT/attention.json and prints a markdown table. Python is the
harness only; strata's kernels run from the C++ runtime.
"""
import json
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from harness import parse, peer_ms, run_strata, torch_dtype  # (same directory)

BACKENDS = (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION))


def peer_tflops(backend, q, k, v, causal, flops, reps):
    """TFLOP/s of SDPA on one backend, or None where it refuses the case."""
    gqa = k.shape[1] != q.shape[1]
    try:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)  # refused: RuntimeError
    except RuntimeError:
        return None
    with sdpa_kernel(backend):
        ms = peer_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa), reps)
    return flops / (ms * 1e-3) / 1e12


def run(a):
    strata = run_strata(a, "bench-attention", "attention-strata.json")
    dt = torch_dtype(a.dtype)
    rows = []
    print("| heads (kv) x dim | causal | batch x seq | strata TFLOP/s | SDPA FA2 | SDPA cuDNN | strata / FA2 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in strata["attention"]:
        b, h, hk, d, n = s["batch"], s["heads"], s["kv_heads"], s["head_dim"], s["seq"]
        q = torch.randn(b, h, n, d, dtype=dt, device="cuda")
        k = torch.randn(b, hk, n, d, dtype=dt, device="cuda")
        v = torch.randn(b, hk, n, d, dtype=dt, device="cuda")
        flops = 4.0 * b * h * n * n * d * (0.5 if s["causal"] else 1.0)
        peers = {name: peer_tflops(be, q, k, v, s["causal"], flops, a.reps) for name, be in BACKENDS}
        rows.append({**s, **{f"{name}_tflops": t for name, t in peers.items()}})
        fmt = lambda t: "n/a" if t is None else f"{t:.0f}"
        ratio = "n/a" if peers["fa2"] is None else f"{s['tflops'] / peers['fa2']:.2f}"
        form = " paged" if s.get("paged") else ""
        print(f"| {h} ({hk}) x {d}{form} | {'yes' if s['causal'] else 'no'} | {b} x {n} | {s['tflops']:.0f} | "
              f"{fmt(peers['fa2'])} | {fmt(peers['cudnn'])} | {ratio} |")
    json.dump({"device": torch.cuda.get_device_name(), "dtype": a.dtype, "rows": rows},
              open(os.path.join(a.out, "attention.json"), "w"), indent=1)


def main():
    run(parse("Attention: strata vs SDPA FlashAttention-2 and cuDNN", reps=30))


if __name__ == "__main__":
    main()
