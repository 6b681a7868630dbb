"""GEMM peers on the GPU machine, same shapes and dtype as `strata-gpu
bench-gemm`: cuBLAS (torch.matmul against the transposed [N, K] weight, as
HF Linear does) and a Triton matmul, timed with CUDA events.

    python3 tools/gpu/peers_gemm.py --json peers.json
"""
import argparse
import json

import torch
import triton
import triton.language as tl


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


def time_ms(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", default="")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = []
    for M in (1, 16, 64, 256, 2048):
        for K, N in ((4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096)):
            x = torch.rand(M, K, device="cuda", dtype=dt) * 2 - 1
            w = torch.rand(N, K, device="cuda", dtype=dt) * 2 - 1
            out = torch.empty(M, N, device="cuda", dtype=dt)
            ref = x @ w.t()
            tri = triton_matmul(x, w.t(), out)
            err = ((tri.float() - ref.float()).abs() / (1 + ref.float().abs())).max().item()
            cublas = time_ms(lambda: torch.matmul(x, w.t()), args.reps)
            trit = time_ms(lambda: triton_matmul(x, w.t(), out), args.reps)
            flops = 2.0 * M * N * K
            rows.append({"M": M, "K": K, "N": N, "cublas_us": cublas * 1e3, "triton_us": trit * 1e3,
                         "cublas_tflops": flops / cublas / 1e9, "triton_tflops": flops / trit / 1e9,
                         "triton_max_rel_err": err})
            print(f"{M:6d} {K:6d} {N:6d} cuBLAS {cublas*1e3:9.1f} us  Triton {trit*1e3:9.1f} us  (err {err:.1e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "gemm": rows}, f, indent=1)


if __name__ == "__main__":
    main()
