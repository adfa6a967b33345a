#!/usr/bin/env python3
"""bench/gpu_bench.py: the GPU top-k engine next to torch.topk and CUB's sort.

Times, in one process and one run, on device-resident data: our bitonic and
radix plans (direct and behind delegates), the plan the cost model picks
(auto), torch.topk and a CUB radix sort of (key, position) pairs; then the
streamed path from page-locked host memory against a plain host-to-device
copy.  Our runs are timed from C around each engine call, as the extension
calls the engine (also from Python below 2^27 keys, in the JSONL only), next
to each plan's cost-model estimate.  Every auto answer is checked against
torch.topk's.  Prints a markdown table with times, effective GB/s, the ratio
to the one-read floor (bytes over the device read bandwidth measured here)
and the speed-up over torch.topk, then the acceptance checks of the engine.

Needs bench/libgputopk_bench.so (make bench-lib) and PyTorch with CUDA.
Usage: gpu_bench.py [--quick] [--out DIR]; gpu_bench.py --report JSONL re-renders
the table of an earlier run (no GPU needed).
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

np = None
torch = None
lib = None

HERE = os.path.dirname(os.path.abspath(__file__))
AUTO, BITONIC, RADIX = 0, 1, 2
EXACT, WITH_TIES = 0, 1
BITONIC_MAX_K = 256
# below this n our plans are also timed from Python (the difference is what a call from Python adds)
PYTHON_TIMED_BELOW = 1 << 27


class Plan(ctypes.Structure):
    _fields_ = [("algorithm", ctypes.c_int), ("log_subrange", ctypes.c_int)]


class Item(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("ref", ctypes.c_uint64)]


class Result(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Item)), ("count", ctypes.c_size_t)]


class Calibration(ctypes.Structure):
    _fields_ = [("read_bytes_per_s", ctypes.c_double),
                ("copy_bytes_per_s", ctypes.c_double),
                ("launch_s", ctypes.c_double),
                ("radix", (ctypes.c_double * 5) * 2),
                ("delegates", (ctypes.c_double * 5) * 2),
                ("bitonic", ((ctypes.c_double * 2) * 9) * 2),
                ("correction", (((ctypes.c_double * 6) * 4) * 4) * 2)]


def load():
    """PyTorch, numpy and the engine: only for a benchmark run."""
    global np, torch, lib
    import numpy as np
    import torch
    lib = ctypes.CDLL(os.path.join(HERE, "libgputopk_bench.so"))
    lib.gpu_last_error.restype = ctypes.c_char_p
    lib.gpu_topk_create.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p)]
    lib.gpu_topk_destroy.argtypes = [ctypes.c_void_p]
    lib.gpu_topk_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.POINTER(Plan), ctypes.POINTER(Plan)]
    lib.gpu_topk_push.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.gpu_topk_result.argtypes = [ctypes.c_void_p, ctypes.POINTER(Result)]
    lib.gpu_topk_choose.argtypes = [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(Plan), ctypes.POINTER(ctypes.c_double)]
    lib.gpu_topk_estimate.argtypes = [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                      Plan, ctypes.POINTER(ctypes.c_double)]
    lib.bench_encode_float4.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.bench_encode_int8.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.bench_time_topk.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Plan),
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
    lib.bench_cub_sort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_double)]


def check(status, what):
    if status != 0:
        raise RuntimeError("%s: %s" % (what, lib.gpu_last_error().decode()))


def values(dist, n, dtype):
    """n values of a distribution, on the GPU."""
    dev = "cuda"
    if dtype == torch.float32:
        if dist == "uniform":
            return torch.rand(n, device=dev)
        if dist == "normal":
            return torch.randn(n, device=dev)
        if dist == "sorted":
            return torch.linspace(0, 1, n, device=dev)
        if dist == "reversed":
            return torch.linspace(1, 0, n, device=dev)
        if dist == "all-equal":
            return torch.full((n,), 42.0, device=dev)
        if dist == "few-distinct":
            return torch.randint(0, 16, (n,), device=dev, dtype=torch.int32).float()
        if dist == "narrow-range":  # one sign and exponent: 9 high bits shared
            return 1 + torch.rand(n, device=dev)
        if dist == "zipf":
            return torch.floor(1 / (1 - torch.rand(n, device=dev)).pow(1 / 1.2))
    else:
        if dist == "uniform":
            return torch.randint(-2**62, 2**62, (n,), device=dev, dtype=torch.int64)
        if dist == "normal":
            return (torch.randn(n, device=dev) * 1e12).long()
        if dist == "sorted":
            return torch.arange(n, device=dev, dtype=torch.int64)
        if dist == "reversed":
            return torch.arange(n - 1, -1, -1, device=dev, dtype=torch.int64)
        if dist == "all-equal":
            return torch.full((n,), 42, device=dev, dtype=torch.int64)
        if dist == "few-distinct":
            return torch.randint(0, 16, (n,), device=dev, dtype=torch.int64)
        if dist == "narrow-range":  # 44 high bits shared
            return 2**60 + torch.randint(0, 2**20, (n,), device=dev, dtype=torch.int64)
        if dist == "zipf":
            return torch.floor(1 / (1 - torch.rand(n, device=dev)).pow(1 / 1.2)).long()
    raise ValueError(dist)


def encode(vals):
    """DESC keys (keys.h) of float4 or int8 values."""
    if vals.dtype == torch.float32:
        keys = torch.empty(vals.numel(), dtype=torch.int32, device="cuda")
        check(lib.bench_encode_float4(vals.data_ptr(), keys.data_ptr(), vals.numel()), "encode")
    else:
        keys = torch.empty(vals.numel(), dtype=torch.int64, device="cuda")
        check(lib.bench_encode_int8(vals.data_ptr(), keys.data_ptr(), vals.numel()), "encode")
    return keys


def wall(fn, reps):
    """Median wall time of fn, synchronised, after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Topk:
    """One GPU top-k object of the engine."""

    def __init__(self, width, k, mode=EXACT):
        self.h = ctypes.c_void_p()
        check(lib.gpu_topk_create(width, k, mode, ctypes.byref(self.h)), "create")

    def device(self, keys, plan):
        used = Plan()
        check(lib.gpu_topk_device(self.h, keys.data_ptr(), keys.numel(), ctypes.byref(plan),
                                  ctypes.byref(used)), "top-k")
        return used

    def time(self, keys, plan, reps):
        """Median seconds of the plan's runs timed from C, as the extension calls the engine."""
        median = ctypes.c_double()
        check(lib.bench_time_topk(self.h, keys.data_ptr(), keys.numel(), ctypes.byref(plan), reps,
                                  ctypes.byref(median)), "top-k")
        return median.value

    def keys(self):
        r = Result()
        check(lib.gpu_topk_result(self.h, ctypes.byref(r)), "result")
        if r.count == 0:
            return []
        items = np.ctypeslib.as_array(ctypes.cast(r.items, ctypes.POINTER(ctypes.c_uint64)),
                                      shape=(r.count, 2))
        return items[:, 0].tolist()

    def close(self):
        lib.gpu_topk_destroy(self.h)


def delegate_log(n, k):
    """Dr. Top-k's subrange size rule, rounded down and clamped, as the engine uses it."""
    a = math.floor((math.log2(n) - math.log2(max(k, 1)) + 3) / 2)
    return max(7, min(14, a))


def plan_name(p):
    name = {BITONIC: "bitonic", RADIX: "radix"}.get(p.algorithm, "auto")
    return name + ("+del%d" % p.log_subrange if p.log_subrange else "")


def run_grid(cfg, bandwidth, rows, log):
    dtype, width = (torch.float32, 4) if cfg["type"] == "float4" else (torch.int64, 8)
    n, dist = cfg["n"], cfg["dist"]
    vals = values(dist, n, dtype)
    keys = encode(vals)
    reps = 5 if n >= 1 << 27 else (15 if n >= 1 << 25 else 51)
    floor = n * width / bandwidth
    cub = ctypes.c_double()
    if cfg.get("cub"):
        check(lib.bench_cub_sort(keys.data_ptr(), n, width, 3, ctypes.byref(cub)), "cub sort")
    for k in cfg["ks"]:
        if k > n:
            continue
        t = Topk(width, k)
        plans = []
        if k <= BITONIC_MAX_K:
            plans += [Plan(BITONIC, 0), Plan(BITONIC, delegate_log(n, k))]
        plans += [Plan(RADIX, 0), Plan(RADIX, delegate_log(n, k))]
        timing = {}
        from_python = {}
        estimate = {}
        for p in plans:
            timing[plan_name(p)] = t.time(keys, p, reps)
            if n < PYTHON_TIMED_BELOW:
                from_python[plan_name(p)] = wall(lambda: t.device(keys, p), reps) * 1e3
            seconds = ctypes.c_double()
            check(lib.gpu_topk_estimate(n, k, width, EXACT, p, ctypes.byref(seconds)), "estimate")
            estimate[plan_name(p)] = seconds.value * 1e3
        auto_plan = t.device(keys, Plan(AUTO, 0))
        predicted = ctypes.c_double()
        chosen = Plan()
        check(lib.gpu_topk_choose(n, k, width, EXACT, ctypes.byref(chosen), ctypes.byref(predicted)),
              "choose")
        auto = t.time(keys, Plan(AUTO, 0), reps)
        if n < PYTHON_TIMED_BELOW:
            from_python["auto"] = wall(lambda: t.device(keys, Plan(AUTO, 0)), reps) * 1e3
        ours = t.keys()
        t.close()
        tv, _ = torch.topk(vals, k)
        want = encode(tv).cpu().tolist()
        mask = (1 << (8 * width)) - 1
        ok = [w & mask for w in want] == ours
        torch_t = wall(lambda: torch.topk(vals, k), reps)
        best_name = min(timing, key=timing.get)
        row = dict(type=cfg["type"], n=n, dist=dist, k=k, auto_plan=plan_name(auto_plan),
                   auto_ms=auto * 1e3, predicted_ms=predicted.value * 1e3, best=best_name, best_ms=timing[best_name] * 1e3,
                   plans_ms={a: b * 1e3 for a, b in timing.items()}, predicted_plans_ms=estimate,
                   python_timed_ms=from_python, torch_ms=torch_t * 1e3,
                   cub_ms=cub.value * 1e3 if cfg.get("cub") else None,
                   floor_ms=floor * 1e3, gbs=n * width / auto / 1e9,
                   ratio=auto / floor, speedup=torch_t / auto, correct=ok)
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        log.flush()
        print("%-6s n=2^%-2d %-12s k=%-7d auto %-12s %8.3f ms  floor %7.3f  x%5.2f  torch %8.3f (%5.1fx)  best %-12s %8.3f %s"
              % (cfg["type"], int(math.log2(n)), dist, k, row["auto_plan"], row["auto_ms"],
                 row["floor_ms"], row["ratio"], row["torch_ms"], row["speedup"], best_name,
                 row["best_ms"], "" if ok else "WRONG"), flush=True)
    del vals, keys
    torch.cuda.empty_cache()


def streaming(n, ks, rows, log):
    """The streamed path: 2^30 float4 keys in page-locked host memory."""
    keys = encode(torch.rand(n, device="cuda"))
    host = torch.empty(n, dtype=torch.int32, pin_memory=True)
    host.copy_(keys)
    dev = torch.empty_like(keys)
    copy = wall(lambda: dev.copy_(host, non_blocking=True), 5)
    for k in ks:
        start = time.perf_counter()
        t = Topk(4, k)
        create = time.perf_counter() - start

        def run():
            check(lib.gpu_topk_push(t.h, host.data_ptr(), n), "push")
            t.keys()
        s = wall(run, 3)
        t.close()
        row = dict(type="float4", n=n, dist="uniform", k=k, streamed_ms=s * 1e3,
                   create_ms=create * 1e3, copy_ms=copy * 1e3, streamed_gbs=n * 4 / s / 1e9,
                   copy_gbs=n * 4 / copy / 1e9, ratio_to_copy=copy / s)
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        print("streamed float4 n=2^%d k=%d: %.1f ms, %.1f GB/s; plain copy %.1f ms, %.1f GB/s: %.0f%% of it (creating the top-k object: %.1f ms, not included)"
              % (int(math.log2(n)), k, s * 1e3, row["streamed_gbs"], copy * 1e3, row["copy_gbs"],
                 100 * row["ratio_to_copy"], create * 1e3), flush=True)
    del keys, host, dev
    torch.cuda.empty_cache()


def table(rows):
    """Markdown: one row per configuration, every plan's time, then streaming."""
    def plan(r, name, delegates):
        """ms of a plan, direct or behind delegates, or empty where not run"""
        for p, ms in r["plans_ms"].items():
            if p.split("+")[0] == name and ("+" in p) == delegates:
                return "%.3f" % ms
        return ""
    out = ["| key | n | distribution | k | auto (plan) ms | GB/s | floor ms | x floor | bitonic | bitonic + delegates | radix | radix + delegates | torch.topk ms | speed-up | CUB sort ms | correct |",
           "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "auto_ms" not in r:
            continue
        out.append("| %s | 2^%d | %s | %d | %.3f (%s) | %.0f | %.3f | %.2f | %s | %s | %s | %s | %.3f | %.1f | %s | %s |" % (
            r["type"], int(math.log2(r["n"])), r["dist"], r["k"], r["auto_ms"], r["auto_plan"],
            r["gbs"], r["floor_ms"], r["ratio"],
            plan(r, "bitonic", False), plan(r, "bitonic", True),
            plan(r, "radix", False), plan(r, "radix", True),
            r["torch_ms"], r["speedup"],
            "%.2f" % r["cub_ms"] if r["cub_ms"] is not None else "",
            "yes" if r["correct"] else "NO"))
    streamed = [r for r in rows if "streamed_ms" in r]
    if streamed:
        out += ["", "Streamed from page-locked host memory (float4, uniform):", "",
                "| n | k | streamed ms | GB/s | plain copy ms | GB/s | share of the copy's bandwidth |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in streamed:
            out.append("| 2^%d | %d | %.1f | %.1f | %.1f | %.1f | %.0f%% |" % (
                int(math.log2(r["n"])), r["k"], r["streamed_ms"], r["streamed_gbs"],
                r["copy_ms"], r["copy_gbs"], 100 * r["ratio_to_copy"]))
    return "\n".join(out)


def acceptance(rows):
    res = [r for r in rows if "auto_ms" in r]
    lines = []

    def get(t, n, dist, k):
        for r in res:
            if (r["type"], r["n"], r["dist"], r["k"]) == (t, n, dist, k):
                return r
        return None
    for k in (1, 32, 256, 1024):
        r = get("float4", 1 << 30, "uniform", k)
        if r:
            lines.append("2^30 float4 k=%d: %.2fx floor (<= 1.5), %.1fx torch.topk (>= 10): %s" % (
                k, r["ratio"], r["speedup"], "PASS" if r["ratio"] <= 1.5 and r["speedup"] >= 10 else "FAIL"))
    for k in (16384, 262144):
        r = get("float4", 1 << 30, "uniform", k)
        if r:
            lines.append("2^30 float4 k=%d: %.2fx floor (<= 3): %s" % (k, r["ratio"], "PASS" if r["ratio"] <= 3 else "FAIL"))
    r = get("int8", 1 << 29, "uniform", 1024)
    if r:
        lines.append("2^29 int8 k=1024: %.2fx floor (<= 2): %s" % (r["ratio"], "PASS" if r["ratio"] <= 2 else "FAIL"))
    worst = None
    for r in res:
        if r["dist"] == "uniform":
            continue
        u = get(r["type"], r["n"], "uniform", r["k"])
        if u:
            f = r["auto_ms"] / u["auto_ms"]
            if worst is None or f > worst[0]:
                worst = (f, r)
    if worst:
        f, r = worst
        lines.append("adversarial, worst: %s 2^%d %s k=%d at %.2fx uniform (<= 1.5): %s" % (
            r["type"], int(math.log2(r["n"])), r["dist"], r["k"], f, "PASS" if f <= 1.5 else "FAIL"))
    # the time of the model's plan among the plans' own timings, not auto's
    # separate run: the same plan timed twice differs by up to 10% below 0.2 ms
    choice = [r["plans_ms"][r["auto_plan"]] / r["best_ms"] for r in res]
    if choice:
        bad = [c for c in choice if c > 1.1]
        lines.append("cost model: auto within 10%% of the best plan in %d of %d cases (worst %.2fx): %s" % (
            len(res) - len(bad), len(res), max(choice), "PASS" if not bad else "FAIL"))
    for r in rows:
        if "streamed_ms" in r:
            verdict = ("(>= 80%%): %s" % ("PASS" if r["ratio_to_copy"] >= 0.8 else "FAIL")
                       if r["n"] == 1 << 30 else "(judged at 2^30 only)")
            lines.append("streamed 2^%d float4 k=%d: %.0f%% of the plain copy's bandwidth %s" % (
                int(math.log2(r["n"])), r["k"], 100 * r["ratio_to_copy"], verdict))
    wrong = [r for r in res if not r["correct"]]
    lines.append("answers equal to torch.topk's: %d of %d" % (len(res) - len(wrong), len(res)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a small grid, for trying the script")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--report", metavar="JSONL",
                    help="only print the table and acceptance of an earlier run's gpu_bench.jsonl")
    args = ap.parse_args()
    if args.report:
        rows = [json.loads(line) for line in open(args.report)]
        print(table(rows) + "\n\n## Acceptance\n\n" + acceptance(rows))
        return
    load()
    check(lib.gpu_device_open(0), "open device")
    torch.cuda.init()

    cal = Calibration()
    start = time.perf_counter()
    check(lib.gpu_topk_calibration(ctypes.byref(cal)), "calibration")
    calibration_s = time.perf_counter() - start
    big = torch.rand(1 << 30, device="cuda")
    t_read = wall(lambda: big.max(), 10)
    bandwidth = big.numel() * 4 / t_read
    del big
    torch.cuda.empty_cache()
    gpu = torch.cuda.get_device_name(0)
    head = ["# GPU top-k engine benchmark", "",
            "- machine: %s, %d SMs; driver %s; torch %s" % (
                gpu, torch.cuda.get_device_properties(0).multi_processor_count,
                subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True).stdout.strip(), torch.__version__),
            "- date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "- command: `make bench-lib && python3 bench/gpu_bench.py%s`" % (" --quick" if args.quick else ""),
            "- read bandwidth (torch max over 4 GiB): %.0f GB/s; the engine's calibration (%.0f ms, once per process): delegate pass %.0f GB/s, host-to-device %.1f GB/s, kernel launch %.1f us; cost model (a, b n, c m, d g, e k; gpu_topk.h), 4-byte keys: radix %s, delegates %s" % (
                bandwidth / 1e9, calibration_s * 1e3, cal.read_bytes_per_s / 1e9, cal.copy_bytes_per_s / 1e9,
                cal.launch_s * 1e6, [float("%.3g" % x) for x in cal.radix[0]],
                [float("%.3g" % x) for x in cal.delegates[0]]),
            "- times are medians of wall-clock runs (device-resident keys, exact top-k, answer sorted on the device): ours timed from C around"
            " each engine call, as the extension calls it, torch.topk's from Python with synchronisation (the JSONL also has ours from Python"
            " below 2^27 keys, python_timed_ms); floor = bytes of keys / read bandwidth; x floor = auto / floor; speed-up = torch.topk / auto", ""]
    print("\n".join(head), flush=True)

    ks = [1, 32, 256, 1024, 16384, 262144, 1 << 20]
    dists = ["normal", "sorted", "reversed", "all-equal", "few-distinct", "narrow-range", "zipf"]
    if args.quick:
        grid = [dict(type="float4", n=1 << 24, dist=d, ks=[32, 1024], cub=d == "uniform")
                for d in ["uniform"] + dists]
    else:
        grid = []
        for t, top in (("float4", 30), ("int8", 29)):
            for lg in range(20, top + 1, 2 if t == "float4" else 3):
                grid.append(dict(type=t, n=1 << lg, dist="uniform", ks=ks, cub=True))
            for lg in (24, top):
                for d in dists:
                    grid.append(dict(type=t, n=1 << lg, dist=d, ks=[1, 32, 1024, 16384, 262144]))
    rows = []
    with open(os.path.join(args.out, "gpu_bench.jsonl"), "w") as log:
        for cfg in grid:
            run_grid(cfg, bandwidth, rows, log)
        streaming(1 << (24 if args.quick else 30), [32, 1024], rows, log)
    report = "\n".join(head) + "\n" + table(rows) + "\n\n## Acceptance\n\n" + acceptance(rows) + "\n"
    with open(os.path.join(args.out, "gpu_bench.md"), "w") as f:
        f.write(report)
    print("\n## Acceptance\n" + acceptance(rows))


if __name__ == "__main__":
    sys.exit(main())
