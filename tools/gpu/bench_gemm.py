"""The GEMM table of issue 6 in one call on the GPU machine: strata's
generated kernels (`strata-gpu bench-gemm`, run as a subprocess) side by
side with cuBLAS (torch.matmul against the transposed [N, K] weight, as HF
Linear does) and a Triton matmul, same shapes and dtype, CUDA-event timing.

    python3 tools/gpu/bench_gemm.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT

Writes OUT/gemm.json (every figure) and prints a markdown table (the one
in docs/benchmarks.md). Python is the harness only; strata's kernels run from the
C++ runtime.
"""
import json
import math
import os

import torch
import triton
import triton.language as tl

from harness import parse, run_strata, time_ms, torch_dtype  # (same directory)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # Grouped program order for L2 reuse; B is read through its strides.
    pid = tl.program_id(0)
    pm_count, pn_count = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * pn_count)
    first = group * GROUP
    size = min(pm_count - first, GROUP)
    pm = first + (pid % (GROUP * pn_count)) % size
    pn = (pid % (GROUP * pn_count)) // size
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(a + rm[:, None] * sam + (k0 + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        y = tl.load(b + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_matmul(x, wt, out):
    M, K = x.shape
    N = wt.shape[1]
    BM = 128 if M > 64 else 16 if M <= 16 else 64
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, 128),)
    matmul_kernel[grid](x, wt, out, M, N, K, x.stride(0), x.stride(1), wt.stride(0), wt.stride(1),
                        out.stride(0), out.stride(1), BM=BM, BN=128, BK=64, GROUP=8, num_warps=8 if BM == 128 else 4,
                        num_stages=3)
    return out


def run(args):
    strata = {(r["M"], r["K"], r["N"]): r for r in run_strata(args, "bench-gemm", "strata_gemm.json")["gemm"]}
    dt = torch_dtype(args.dtype)
    rows = []
    for (M, K, N), s in strata.items():
        x = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
        w = torch.rand(N, K, device="cuda", dtype=dt) * 2 - 1
        out = torch.empty(M, N, device="cuda", dtype=dt)
        ref = x @ w.t()
        tri = triton_matmul(x, w.t(), out)
        err = ((tri.float() - ref.float()).abs() / (1 + ref.float().abs())).max().item()
        # Peers in CUDA graphs: kernel time without Python's dispatch.
        cublas = time_ms(lambda: torch.matmul(x, w.t()), args.reps, graph=True)
        trit = time_ms(lambda: triton_matmul(x, w.t(), out), args.reps, graph=True)
        rows.append({"M": M, "K": K, "N": N, "strata_us": s["us"], "cublas_us": cublas * 1e3,
                     "triton_us": trit * 1e3, "strata_kernel": s["kernel"], "triton_max_rel_err": err})
    with open(os.path.join(args.out, "gemm.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "gemm": rows}, f, indent=1)
    print(f"\n{torch.cuda.get_device_name()}, {args.dtype}, weights [N, K]; TFLOP/s (GB/s for M <= 16)")
    print("| M | K | N | strata | cuBLAS | Triton | strata / cuBLAS |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for r in rows:
        M, K, N = r["M"], r["K"], r["N"]
        flops, nbytes = 2.0 * M * N * K, 2.0 * (K * N + M * K + M * N)
        fig = (lambda us: f"{nbytes / us / 1e3:.0f} GB/s") if M <= 16 else (lambda us: f"{flops / us / 1e6:.1f}")
        ratio = r["cublas_us"] / r["strata_us"]
        ratios.append(ratio)
        print(f"| {M} | {K} | {N} | {fig(r['strata_us'])} | {fig(r['cublas_us'])} | {fig(r['triton_us'])} | {ratio:.2f} |")
    print(f"geomean strata / cuBLAS: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


def main():
    run(parse("GEMM: strata vs cuBLAS and Triton", reps=20))


if __name__ == "__main__":
    main()
