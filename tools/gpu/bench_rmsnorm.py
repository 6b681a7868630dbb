"""RMSNorm on the GPU in one call: strata's generated kernel
(`strata-gpu bench-rmsnorm`, a subprocess) side by side with PyTorch's
torch.nn.functional.rms_norm on the same shapes and dtype (hidden 4096,
1..4096 rows), CUDA-event timing, against the measured copy bandwidth.

    python3 tools/gpu/bench_rmsnorm.py --strata-gpu .gpu/strata-gpu \
        --kernels .gpu/cuda-kernels --out $OUT

Writes OUT/rmsnorm.json and prints a markdown table. Python is the harness
only; strata's kernels run from the C++ runtime.
"""
import json
import os

import torch

from harness import parse, run_strata, time_ms, torch_dtype  # (same directory)


def run(a):
    strata = run_strata(a, "bench-rmsnorm", "rmsnorm-strata.json")
    dt = torch_dtype(a.dtype)
    elt = torch.tensor([], dtype=dt).element_size()
    big = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    copy_gbs = 2 * big.numel() / (time_ms(lambda: big.clone(), 10) * 1e-3) / 1e9
    rows = []
    print(f"| rows | hidden | strata us | strata GB/s | torch us | torch GB/s | strata / torch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in strata["rms_norm"]:
        r, h = s["rows"], s["hidden"]
        x = torch.randn(r, h, dtype=dt, device="cuda")
        w = torch.randn(h, dtype=dt, device="cuda")
        ms = time_ms(lambda: torch.nn.functional.rms_norm(x, (h,), w, 1e-5), a.reps)
        gbs = elt * (2 * r * h + h) / (ms * 1e-3) / 1e9
        rows.append({**s, "torch_us": ms * 1e3, "torch_gbs": gbs})
        print(f"| {r} | {h} | {s['us']:.1f} | {s['gbs']:.0f} | {ms * 1e3:.1f} | {gbs:.0f} | {ms * 1e3 / s['us']:.2f} |")
    print(f"copy bandwidth (torch clone of 256 MiB): {copy_gbs:.0f} GB/s")
    json.dump({"device": torch.cuda.get_device_name(), "dtype": a.dtype, "copy_gbs": copy_gbs, "rows": rows},
              open(os.path.join(a.out, "rmsnorm.json"), "w"), indent=1)


def main():
    run(parse("RMSNorm: strata vs torch.nn.functional.rms_norm", reps=50))


if __name__ == "__main__":
    main()
