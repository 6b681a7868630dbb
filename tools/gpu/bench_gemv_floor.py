"""What a batch-1 decode step's weight stream can reach: the floor under
`strata-gpu bench-gemm --rows 1 --cold-weights`.

For each Llama-3-8B projection at one row ([N, K] bf16 weights; SwiGLU's
gate and up read as one N = 28672 weight), with the launches cycling
through copies of the weight (256 MiB at least, so every launch reads HBM
as a model's decode step does, not the 50 MB L2):
- a Triton kernel that only reads the weight (each program a block of
  rows, summed into one float), best over rows a program, K per step and
  warps;
- a Triton GEMV (y = x W^T at one row, f32 sums), best over the same;
- cuBLAS (torch.matmul of [1, K] by W^T, as HF Linear does).
Timed in CUDA graphs, next to a 2 GiB device copy's bandwidth.

    python3 tools/gpu/bench_gemv_floor.py --out $OUT

Writes OUT/gemv_floor.json and prints a table. An experiment's harness, not
part of `bench_all.py`.
"""
import json
import os

import torch
import triton
import triton.language as tl

from bench_paged_decode import copy_gbs  # (same directory)
from harness import parse_experiment, time_ms

COLD_BYTES = 256 << 20
SHAPES = [(4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096)]


@triton.jit
def read_rows(w, out, K, ROWS: tl.constexpr, BK: tl.constexpr, DOT: tl.constexpr, x):
    # Program p reads rows [p ROWS, (p + 1) ROWS) of w [N, K] in K steps of
    # BK; DOT multiplies by x [K] first (a GEMV row block), else it sums.
    p = tl.program_id(0)
    rows = p * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BK)
    acc = tl.zeros([ROWS, BK], tl.float32)
    for k0 in range(0, K, BK):
        v = tl.load(w + rows[:, None] * K + (k0 + cols)[None, :]).to(tl.float32)
        if DOT:
            v = v * tl.load(x + k0 + cols).to(tl.float32)[None, :]
        acc += v
    tl.store(out + rows, tl.sum(acc, axis=1))


def best_triton(w, x, out, K, N, dot, reps, copies):
    best = None
    for rows in (1, 2, 4, 8):
        for bk in (512, 1024, 2048):
            for warps in (2, 4, 8):
                if rows * bk > 8192 or rows * bk < 32 * warps * 8:
                    continue
                i = [0]

                def fn():
                    read_rows[(N // rows,)](w[i[0] % copies], out, K, ROWS=rows, BK=bk, DOT=dot, x=x,
                                            num_warps=warps)
                    i[0] += 1

                us = time_ms(fn, reps, graph=True) * 1e3
                if best is None or us < best["us"]:
                    best = {"us": us, "rows": rows, "bk": bk, "warps": warps}
    return best


def main():
    a = parse_experiment("Floor of a batch-1 decode GEMM: streaming its weight from HBM", 40)
    copy = copy_gbs(a.reps)
    print(f"copy {copy:.0f} GB/s (bytes read + written)")
    results = []
    for K, N in SHAPES:
        bytes_ = 2 * K * N
        copies = max(2, -(-COLD_BYTES // bytes_))
        w = [torch.rand(N, K, device="cuda", dtype=torch.bfloat16) - 0.5 for _ in range(copies)]
        x = torch.rand(1, K, device="cuda", dtype=torch.bfloat16) - 0.5
        out = torch.empty(N, device="cuda", dtype=torch.float32)
        read = best_triton(w, x, out, K, N, False, a.reps, copies)
        gemv = best_triton(w, x, out, K, N, True, a.reps, copies)
        ref = (x.float() @ w[0].float().t()).flatten()
        read_rows[(N // gemv["rows"],)](w[0], out, K, ROWS=gemv["rows"], BK=gemv["bk"], DOT=True, x=x,
                                        num_warps=gemv["warps"])
        err = ((out - ref).abs() / (1 + ref.abs())).max().item()
        i = [0]

        def cublas():
            torch.matmul(x, w[i[0] % copies].t())
            i[0] += 1

        cub = time_ms(cublas, a.reps, graph=True) * 1e3
        r = {"K": K, "N": N, "bytes": bytes_, "copies": copies, "read": read, "gemv": gemv, "gemv_max_rel_err": err,
             "cublas_us": cub}
        for key in ("read", "gemv"):
            r[key]["gbs"] = bytes_ / r[key]["us"] / 1e3
        r["cublas_gbs"] = bytes_ / cub / 1e3
        results.append(r)
        print(f"K {K} N {N}: read {read['us']:.1f} us {r['read']['gbs']:.0f} GB/s ({read}), "
              f"Triton GEMV {gemv['us']:.1f} us {r['gemv']['gbs']:.0f} GB/s, cuBLAS {cub:.1f} us "
              f"{r['cublas_gbs']:.0f} GB/s; GEMV max rel err {err:.2e}")
        del w
    json.dump({"device": torch.cuda.get_device_name(), "copy_gbs": copy, "cold_bytes": COLD_BYTES, "rows": results},
              open(os.path.join(a.out, "gemv_floor.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
