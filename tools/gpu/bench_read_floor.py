"""What reading a paged decode step's bytes costs at all, with no attention
math: the floor under `bench_paged_decode.py`'s batch-1 rows.

A Triton kernel reads the K and V pages of one sequence (8 KV heads of dim
128, pages of 16 tokens, shuffled blocks looked up in a table, as strata's
cache holds them), `splits` programs per KV head, and sums them into one
float per program. Timed in a CUDA graph like the peers, over split counts
and warps per program, next to an empty kernel (the per-launch floor in a
graph), a device copy of the same bytes, and the time 0.70 of a 2 GiB
copy's bandwidth allows.

    python3 tools/gpu/bench_read_floor.py --out $OUT

Writes OUT/read_floor.json and prints a table. An experiment's harness, not
part of `bench_all.py`.
"""
import json
import os

import torch
import triton
import triton.language as tl

from bench_paged_decode import copy_gbs  # (same directory)
from harness import parse_experiment, time_ms


@triton.jit
def paged_read(k, v, table, out, pages_per_prog, n_pages, PAGE: tl.constexpr, D: tl.constexpr, HK: tl.constexpr,
               STEP: tl.constexpr):
    sid = tl.program_id(0)
    h = tl.program_id(1)
    rows = tl.arange(0, STEP * PAGE)
    cols = tl.arange(0, D)
    acc = tl.zeros([STEP * PAGE, D], tl.float32)
    first = sid * pages_per_prog
    last = tl.minimum(first + pages_per_prog, n_pages)
    for p in range(first, last, STEP):
        page = p + rows // PAGE
        blk = tl.load(table + page, mask=page < last, other=0)
        off = ((blk * HK + h) * PAGE + rows % PAGE)[:, None] * D + cols[None, :]
        live = (page < last)[:, None]
        acc += tl.load(k + off, mask=live, other=0.0).to(tl.float32)
        acc += tl.load(v + off, mask=live, other=0.0).to(tl.float32)
    tl.store(out + h * tl.num_programs(0) + sid, tl.sum(acc))


@triton.jit
def empty(out):
    pass


def main():
    a = parse_experiment("Floor of a batch-1 paged decode step: reading its pages, nothing else", 50)
    HK, D, PAGE = 8, 128, 16
    rows = []
    dummy = torch.zeros(1, device="cuda")
    empty_us = time_ms(lambda: empty[(1,)](dummy), a.reps, graph=True) * 1e3
    empty256_us = time_ms(lambda: empty[(256,)](dummy), a.reps, graph=True) * 1e3
    copy = copy_gbs(a.reps)  # the 2 GiB copy the paged decode table compares with
    print(f"empty kernel in a graph: {empty_us:.2f} us (1 program), {empty256_us:.2f} us (256); copy {copy:.0f} GB/s")
    for ctx in (1024, 4096, 16384):
        n_pages = ctx // PAGE
        k = torch.randn(n_pages, HK, PAGE, D, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        table = torch.randperm(n_pages, device="cuda", dtype=torch.int32)
        bytes_ = 2 * k.numel() * 2
        x = torch.empty(bytes_ // 2, dtype=torch.bfloat16, device="cuda")
        y = torch.empty_like(x)
        copy_us = time_ms(lambda: y.copy_(x), a.reps, graph=True) * 1e3
        best = None
        for splits in (8, 16, 32, 64):
            ppp = triton.cdiv(n_pages, splits)
            out = torch.empty(HK * splits, device="cuda")
            for warps in (1, 2, 4):
                for step in (1, 2, 4):
                    if step > ppp:
                        continue
                    fn = lambda: paged_read[(splits, HK)](k, v, table, out, ppp, n_pages, PAGE=PAGE, D=D, HK=HK,
                                                          STEP=step, num_warps=warps)
                    us = time_ms(fn, a.reps, graph=True) * 1e3
                    r = {"context": ctx, "bytes": bytes_, "splits": splits, "warps": warps, "pages_per_step": step,
                         "us": us, "gbs": bytes_ / us / 1e3}
                    rows.append(r)
                    if best is None or us < best["us"]:
                        best = r
        print(f"context {ctx}: {bytes_ / 2**20:.0f} MiB; best read {best['us']:.2f} us ({best['gbs']:.0f} GB/s, "
              f"{best['splits']} splits x {best['warps']} warps, {best['pages_per_step']} pages a step); "
              f"copy of the same bytes {copy_us:.2f} us; 0.70 of the copy would be {bytes_ / (0.7 * copy * 1e3):.2f} us")
        rows.append({"context": ctx, "bytes": bytes_, "copy_us": copy_us, "best_us": best["us"]})
    json.dump({"device": torch.cuda.get_device_name(), "copy_gbs": copy, "empty_us": empty_us, "empty256_us": empty256_us,
               "rows": rows},
              open(os.path.join(a.out, "read_floor.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
