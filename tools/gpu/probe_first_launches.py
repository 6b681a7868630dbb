"""Where a case's first launches lose time (docs/cuda.md "The first-launches
effect"): one cuBLAS GEMM timed launch by launch, after host idle of several
lengths, on freshly allocated weights, and with the GPU kept busy by a spin
kernel across the idle. Each launch is bracketed by its own CUDA events; the
SM clock is read through NVML (when the module is there) before and after
each idle. No strata binary runs: this asks whether the effect is the GPU's
(clocks, fresh memory) or something strata does."""
import json
import os
import time

import torch

from harness import parse_experiment

try:
    import pynvml
    pynvml.nvmlInit()
    NVML = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception:  # NVML is optional: clocks are then not reported
    NVML = None


def sm_clock():
    if NVML is None:
        return None
    return pynvml.nvmlDeviceGetClockInfo(NVML, pynvml.NVML_CLOCK_SM)


def launches_us(fn, n):
    """Microseconds of each of n launches, each between its own events."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in ev]


def spin(ms):
    """Keeps the GPU busy for about `ms` milliseconds (one spin kernel)."""
    torch.cuda._sleep(int(ms * 1.98e6))  # cycles at about 1.98 GHz


class HostGate:
    """Holds a stream at cuStreamWaitValue32 on a pinned host word until the
    host opens it: the launches behind it are all enqueued before any runs,
    while the SMs stay idle. Separates the host's enqueue latency from the
    GPU's own first-launch cost. None where the driver call is not found."""

    def __init__(self):
        import ctypes
        cu = ctypes.CDLL("libcuda.so.1")
        self.wait = getattr(cu, "cuStreamWaitValue32_v2", None) or cu.cuStreamWaitValue32
        self.word = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        dptr = ctypes.c_uint64()
        rc = cu.cuMemHostGetDevicePointer_v2(ctypes.byref(dptr), ctypes.c_void_p(self.word.data_ptr()), 0)
        if rc != 0:
            raise RuntimeError(f"cuMemHostGetDevicePointer: {rc}")
        self.dptr, self.ct, self.n = dptr.value, ctypes, 0

    def close(self):
        self.n += 1
        stream = self.ct.c_void_p(torch.cuda.current_stream().cuda_stream)
        rc = self.wait(stream, self.ct.c_uint64(self.dptr), self.ct.c_uint32(self.n), 0)  # GEQ
        if rc != 0:
            raise RuntimeError(f"cuStreamWaitValue32: {rc}")

    def open(self):
        self.word.numpy()[0] = self.n


def main():
    a = parse_experiment("per-launch times of a GEMM's first launches after idle / on fresh weights", 20)
    M, K, N = 128, 4096, 28672
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    fn = lambda: torch.nn.functional.linear(x, w)
    launches_us(fn, 200)  # library handles, autotuning, clocks up
    steady = sorted(launches_us(fn, 200))[100]
    rows = []

    try:
        gate = HostGate()
    except Exception as e:
        print(f"no host gate: {e}")
        gate = None

    def case(name, before, gated=False):
        c0 = sm_clock()
        before()
        c1 = sm_clock()
        if gated:
            gate.close()
            h0 = time.perf_counter()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.reps)]
            for s, e in ev:
                s.record()
                fn()
                e.record()
            host_us = (time.perf_counter() - h0) * 1e6
            gate.open()
            torch.cuda.synchronize()
            print(f"  (host enqueue of {a.reps} launches: {host_us:.0f} us)")
            t = [s.elapsed_time(e) * 1e3 for s, e in ev]
        else:
            t = launches_us(fn, a.reps)
        extra = sum(max(0.0, v - steady) for v in t)
        rows.append({"case": name, "clock_before": c0, "clock_after_idle": c1, "us": t, "extra_us": extra})
        print(f"{name:34s} clk {c0}->{c1} MHz  first 5: " + " ".join(f"{v:6.1f}" for v in t[:5]) +
              f"  extra over {a.reps}: {extra:7.1f} us")

    for idle in (0.001, 0.01, 0.05, 0.2, 1.0):
        case(f"idle {idle * 1e3:g} ms", lambda: (torch.cuda.synchronize(), time.sleep(idle)))
        case(f"idle {idle * 1e3:g} ms, then 2 ms spin", lambda: (torch.cuda.synchronize(), time.sleep(idle), spin(2)))
        if gate is not None:
            case(f"idle {idle * 1e3:g} ms, launches gated", lambda: (torch.cuda.synchronize(), time.sleep(idle)), True)

    def fresh(keep_busy):
        """A new weight tensor from the driver (the cache emptied first),
        filled on the GPU so that the GPU does not idle meanwhile."""
        torch.cuda.empty_cache()
        nw = torch.empty_like(w)
        nw.copy_(w)
        if keep_busy:
            spin(2)
        return nw

    for keep_busy in (False, True):
        for i in range(3):
            nw = fresh(keep_busy)
            fn = lambda: torch.nn.functional.linear(x, nw)
            case(f"fresh weights #{i}{', 2 ms spin' if keep_busy else ''}", lambda: None)
            del nw, fn
    print(f"steady launch: {steady:.1f} us")
    with open(os.path.join(a.out, "first_launches.json"), "w") as f:
        json.dump({"steady_us": steady, "shape": [M, K, N], "cases": rows}, f, indent=1)


if __name__ == "__main__":
    main()
