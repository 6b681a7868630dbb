"""Every GPU table of docs/benchmarks.md in one call on the GPU machine:
GEMM vs cuBLAS and Triton, RMSNorm vs PyTorch, RoPE vs the HF eager form,
attention vs SDPA FlashAttention-2 and cuDNN, paged decode vs copy
bandwidth and SDPA (bench_gemm.py, bench_rmsnorm.py, bench_rope.py,
bench_attention.py, bench_paged_decode.py in turn; each writes its
JSON under --out and prints its markdown table), and with --artifact and
--config the model end to end against HF eager (bench_model.py), and with
--check as well its log-probabilities against HF f32 with the same weights
(check_model.py; writes the weights under --weights-dir).

    python3 tools/gpu/bench_all.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT \
        [--artifact .gpu/llama-3-8b --config models/configs/llama-3-8b.json [--check]]

--reps, when given, replaces each script's own default (20 GEMM launches,
50 RMSNorm / RoPE, 30 attention, 20 paged decode launches per case).
"""
import argparse
import copy
import os
import sys

import bench_attention
import check_model
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
    p.add_argument("--check", action="store_true",
                   help="with --artifact: also check the model's log-probabilities against HF f32 (check_model.py)")
    check_model.add_check_options(p)
    a = p.parse_args()
    if bool(a.artifact) != bool(a.config):
        p.error("--artifact and --config go together (the compiled model and the HF config it came from)")
    if a.check and not a.artifact:
        p.error("--check needs --artifact and --config (the compiled model to check)")
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
    if a.check:
        print("\n## The model against HF with the same weights\n", flush=True)
        args = copy.copy(a)
        args.out = os.path.join(a.out, "check")
        if not check_model.run(args):
            sys.exit("the model's check failed (see its table)")


if __name__ == "__main__":
    main()
