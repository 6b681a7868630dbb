"""Every GPU table of docs/cuda.md in one call on the GPU machine:
GEMM vs cuBLAS and Triton, RMSNorm vs PyTorch, RoPE vs the HF eager form,
attention vs SDPA FlashAttention-2 and cuDNN, paged decode vs copy
bandwidth and SDPA (bench_gemm.py, bench_rmsnorm.py, bench_rope.py,
bench_attention.py, bench_paged_decode.py in turn; each writes its
JSON under --out and prints its markdown table), and with --artifact and
--config the model end to end against HF eager (bench_model.py).

    python3 tools/gpu/bench_all.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT \
        [--artifact .gpu/llama-3-8b --config models/configs/llama-3-8b.json]

--reps, when given, replaces each script's own default (20 GEMM launches,
50 RMSNorm / RoPE, 30 attention, 20 paged decode launches per case).
"""
import argparse
import copy
import os

import bench_attention
import bench_gemm  # (same directory)
import bench_model
import bench_paged_decode
import bench_rmsnorm
import bench_rope
from harness import add_options


def main():
    p = argparse.ArgumentParser(description="All GPU kernel benchmarks against their peers")
    add_options(p, reps=None)
    bench_model.add_model_options(p, required=False)
    a = p.parse_args()
    if bool(a.artifact) != bool(a.config):
        p.error("--artifact and --config go together (the compiled model and the HF config it came from)")
    os.makedirs(a.out, exist_ok=True)
    for title, module, reps in (("GEMM", bench_gemm, 20), ("RMSNorm", bench_rmsnorm, 50), ("RoPE", bench_rope, 50),
                                ("Attention", bench_attention, 30), ("Paged decode", bench_paged_decode, 20)):
        print(f"\n## {title}\n", flush=True)
        args = copy.copy(a)
        args.reps = a.reps or reps
        module.run(args)
    if a.artifact:
        print("\n## End to end\n", flush=True)
        bench_model.run(a)


if __name__ == "__main__":
    main()
