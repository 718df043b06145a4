#!/usr/bin/env python3
"""Summarises bench/gpu_check.sh's Nsight Compute run (GPU_CHECK_PROFILE=1).

    gpu_profile_summary.py PROFILE_CSV [BENCH_JSONL]
    gpu_profile_summary.py --by-shape PROFILE_CSV

PROFILE_CSV: `ncu --csv --print-units base --metrics gpu__time_duration.sum,
dram__bytes_read.sum,dram__bytes_write.sum kvmesh_gpu_bench run -m
llama-1b-q4_0.gguf --pp 512 --tg N --streams 1`. A step starts at its
embedding kernel; the run's steps are 4 prefills of 512 tokens, one of 16
tokens, then the decode steps. Prints, for the prefill and for the average
decode step: kernel time, DRAM bytes and each kernel's share. With
BENCH_JSONL (the same model's timed run without the profiler), it also
prints the decode step's wall time and how much of it no kernel ran:
launches, synchronisation and host work. --by-shape groups the kernels of
any ncu run by name and grid (the mat-vecs of llama-8b's decode, say).
"""
import csv
import json
import os
import sys
from collections import OrderedDict, defaultdict


def short(name):
    """"void kvmesh::<unnamed>::EmbedKernel<14>(...)" -> "EmbedKernel<14>"."""
    name = name.replace("<unnamed>", "anon").split("(")[0]
    name = name[5:] if name.startswith("void ") else name
    head = name.split("<")[0]
    return name[head.rfind("::") + 2:] if "::" in head else name


def read_kernels(path):
    kernels = OrderedDict()
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        try:
            key = (row["ID"], row["Process ID"])
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        k = kernels.setdefault(key, {"name": short(row["Kernel Name"]), "grid": row.get("Grid Size"),
                                     "ns": 0.0, "bytes": 0.0})
        metric = row["Metric Name"]
        if metric == "gpu__time_duration.sum":
            k["ns"] = value
        elif metric.startswith("dram__bytes"):
            k["bytes"] += value
    return list(kernels.values())


def steps_of(kernels):
    steps = []
    for k in kernels:
        if k["name"].startswith("EmbedKernel") or not steps:
            steps.append([])
        steps[-1].append(k)
    return steps


def table(title, steps):
    per = defaultdict(lambda: [0, 0.0, 0.0])
    for step in steps:
        for k in step:
            p = per[k["name"]]
            p[0] += 1
            p[1] += k["ns"]
            p[2] += k["bytes"]
    n = max(1, len(steps))
    total_ns = sum(p[1] for p in per.values()) / n
    total_bytes = sum(p[2] for p in per.values()) / n
    launches = sum(p[0] for p in per.values()) / n
    print(f"{title}: {len(steps)} steps, per step {launches:.0f} kernels, "
          f"{total_ns / 1e3:.1f} us of kernel time, {total_bytes / 1e6:.1f} MB of DRAM traffic")
    print("| kernel | per step | us per step | share | GB/s while running |")
    print("|---|---|---|---|---|")
    for name, (count, ns, b) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        gbps = b / ns if ns else 0.0
        print(f"| {name} | {count / n:.0f} | {ns / n / 1e3:.1f} | {ns / n / total_ns:.0%} | "
              f"{gbps:.0f} |")
    return total_ns, launches


def by_shape(path):
    """The mat-vec kernels of a decode, by kernel and grid: time and DRAM rate."""
    per = defaultdict(lambda: [0, 0.0, 0.0])
    for k in read_kernels(path):
        p = per[(k["name"], k["grid"])]
        p[0] += 1
        p[1] += k["ns"]
        p[2] += k["bytes"]
    print("| kernel | grid | launches | us each | MB each | GB/s |")
    print("|---|---|---|---|---|---|")
    for (name, grid), (n, ns, b) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {grid} | {n} | {ns / n / 1e3:.1f} | {b / n / 1e6:.2f} | "
              f"{b / ns if ns else 0:.0f} |")
    return 0


def main():
    if sys.argv[1] == "--by-shape":
        return by_shape(sys.argv[2])
    kernels = read_kernels(sys.argv[1])
    if not kernels:
        print("profile: no kernels in", sys.argv[1])
        return 1
    steps = steps_of(kernels)
    if len(steps) > 1 and len(steps[-1]) < len(steps[-2]):
        steps.pop()  # cut by --launch-count
    print(f"profile: {len(kernels)} kernels in {len(steps)} steps")
    if len(steps) < 6:
        print("profile: fewer steps than a prefill and a decode; the run was cut short")
        return 1
    table("pp512 prefill", steps[1:4])
    decode_ns, launches = table("batch-1 decode", steps[5:])
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        for line in open(sys.argv[2]):
            row = json.loads(line) if line.startswith("{") else {}
            if (row.get("model", "").endswith("llama-1b-q4_0.gguf") and row.get("split") == "none"
                    and row.get("tg1_tokens_per_s")):
                wall_ns = 1e9 / row["tg1_tokens_per_s"]
                print(f"batch-1 decode step: {wall_ns / 1e3:.0f} us wall (timed without the "
                      f"profiler), {decode_ns / 1e3:.0f} us in kernels "
                      f"({decode_ns / wall_ns:.0%}); {(wall_ns - decode_ns) / 1e3:.0f} us with no "
                      f"kernel running, {(wall_ns - decode_ns) / launches / 1e3:.1f} us per kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
