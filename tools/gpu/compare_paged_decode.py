"""Paged decode kernel sets side by side, for tuning: each set (a directory
from `strata compile-kernels --only paged_decode --paged-decode-block B`,
compiled where LLVM is) is first checked against the CPU reference
(`strata_cuda_tests --gtest_filter=CudaPagedDecodeKernels.*` on that set)
and then timed by `strata-gpu bench-paged-decode` at each split scale, in
rounds that alternate the sets (a GPU's clocks drift over a call; one
round per set in turn keeps the comparison fair). A set that fails its
check is reported and not timed.

    python3 tools/gpu/compare_paged_decode.py --strata-gpu .gpu/strata-gpu \
        --tests .gpu/strata_cuda_tests --out $OUT \
        --set default=.gpu/cuda-kernels --set w4=.gpu/pd/128x2x4 \
        --split-scales 0.5 1 2 --rounds 2

Prints, per (batch, context), each set's best graph time (us, the lowest
over rounds) at each scale, and writes OUT/compare_paged_decode.json with
every run. The tests need STRATA_CUDA_TEST_KERNELS in the environment as
strata_cuda_tests always does.
"""
import argparse
import json
import os
import subprocess


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strata-gpu", required=True, help="the strata-gpu binary")
    p.add_argument("--tests", help="the strata_cuda_tests binary (check each set first)")
    p.add_argument("--out", required=True, help="directory for the JSON results")
    p.add_argument("--set", action="append", required=True, metavar="NAME=DIR", help="a kernel set to compare")
    p.add_argument("--split-scales", type=float, nargs="+", default=[1.0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096, 16384, 32768])
    p.add_argument("--dtype", default="bf16")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sets = []
    for s in a.set:
        name, sep, path = s.partition("=")
        if not sep or not name or not os.path.isfile(os.path.join(path, "kernels.json")):
            p.error(f"--set {s}: expected NAME=DIR with DIR/kernels.json")
        sets.append((name, path))

    checked = {}
    for name, path in sets:
        if not a.tests:
            checked[name] = True
            continue
        env = dict(os.environ, STRATA_CUDA_KERNELS=path)
        r = subprocess.run([a.tests, "--gtest_filter=CudaPagedDecodeKernels.*"], env=env, capture_output=True, text=True)
        checked[name] = r.returncode == 0
        errs = [l for l in r.stdout.splitlines() if "max abs err" in l or "Failure" in l or "counters" in l]
        print(f"{name}: check {'passed' if checked[name] else 'FAILED'}")
        for l in errs[-4:] if checked[name] else errs:
            print("   ", l)

    runs = []
    for rnd in range(a.rounds):
        for name, path in sets:
            if not checked[name]:
                continue
            for scale in a.split_scales:
                out = os.path.join(a.out, f"pd-{name}-{scale}-{rnd}.json")
                subprocess.run([a.strata_gpu, "bench-paged-decode", "--kernels", path, "--dtype", a.dtype,
                                "--split-scale", str(scale), "--batches", *map(str, a.batches), "--contexts",
                                *map(str, a.contexts), "--json", out], check=True, stdout=subprocess.DEVNULL)
                with open(out) as f:
                    for row in json.load(f)["paged_decode"]:
                        runs.append(dict(row, set=name, scale=scale, round=rnd))

    with open(os.path.join(a.out, "compare_paged_decode.json"), "w") as f:
        json.dump({"sets": dict(sets), "checked": checked, "runs": runs}, f, indent=1)
    best = {}
    for r in runs:
        key = (r["batch"], r["context"], r["set"], r["scale"])
        if key not in best or r["graph_us"] < best[key]["graph_us"]:
            best[key] = r
    cols = [(n, s) for n, _ in sets if checked[n] for s in a.split_scales]
    print("| batch | context | " + " | ".join(f"{n} x{s:g}" for n, s in cols) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for b in a.batches:
        for c in a.contexts:
            cells = []
            for n, s in cols:
                r = best.get((b, c, n, s))
                cells.append(f"{r['graph_us']:.1f} ({r['splits']})" if r else "-")
            print(f"| {b} | {c} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
