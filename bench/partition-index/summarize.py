#!/usr/bin/env python3
"""Collects bench/results/partition-index/raw/*.jsonl into summary.json with machine facts."""

import datetime
import json
import os
import platform
import re
import subprocess
import sys

out, config = sys.argv[1], sys.argv[2]


def lines(name):
    p = os.path.join(out, "raw", name)
    if not os.path.exists(p):
        return []
    return [json.loads(line) for line in open(p) if line.strip()]


def cpu():
    model = "unknown"
    flags = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "unknown":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = line
    return model, [f for f in ("sse2", "sse4_2", "avx2", "avx512f") if re.search(rf"\b{f}\b", flags)]


def mem_gb():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal"):
            return round(int(line.split()[1]) / 1024 / 1024, 1)


model, simd = cpu()
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
crit = open(os.path.join(out, "criterion.txt")).read() if os.path.exists(os.path.join(out, "criterion.txt")) else ""


def enrich(qs):
    # Per-thread processing rate at the median: the mean is dominated by scheduler stalls on this shared machine.
    for q in qs:
        q["scan_gb_per_second_per_thread_p50"] = round(q["bytes_per_query"] / (q["latency_us"]["p50"] * 1000.0), 2)
    return qs


parts = enrich(lines("partitions.jsonl"))
warm = {q["partitions"]: q for q in parts if not q["cold"] and q["verify_reads"]}
# The targets are stated for 10^9 values (10,000 partitions of 100,000 values) when measured.
biggest = warm.get(10000) or (warm[max(warm)] if warm else None)
appends = lines("append.jsonl")
summary = {
    "machine": {
        "cpu": model,
        "cores": os.cpu_count(),
        "simd": simd,
        "memory_gb": mem_gb(),
        "kernel": platform.release(),
        "rustc": rustc,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "note": "shared 2-core machine: other builds, Cassandra test clusters and a JMH run were active; "
        "numbers are noisy",
    },
    "configuration": config
    + " fingerprint_bits=16 verify_reads=true(unless noted)"
    + " partitions=ranges of consecutive integers hashed with XXH64",
    "targets": {
        "scan_gb_per_second_per_thread_warm": {
            "target": 5.0,
            "measured_at_p50": biggest and biggest["scan_gb_per_second_per_thread_p50"],
            "measured_at_mean": biggest and biggest["scan_gb_per_second_per_thread"],
            "note": "end to end per query: pread copy + CRC32C + SIMD compare of two bucket rows",
        },
        "median_query_latency_us_warm_1e9_values": {
            "target": 40.0,
            "indexed_values": biggest and biggest["indexed_values"],
            "measured": biggest and biggest["latency_us"]["p50"],
        },
        "append_100k_partition_amortized_ms": {
            "target": 10.0,
            "measured": appends[0]["amortized_ms_per_partition"] if appends else None,
        },
    },
    "latency_vs_partitions": parts,
    "build_and_merge": lines("build.jsonl"),
    "latency_vs_buckets": enrich(lines("buckets.jsonl")),
    "buckets_builds": lines("buckets-build.jsonl"),
    "threads": enrich(lines("threads.jsonl")),
    # Runs that recorded per-thread CPU and run-queue time (at 10^9 values).
    "threads_with_scheduler_stats": enrich(
        [
            q
            for q in lines("threads.jsonl") + lines("threads-schedstat.jsonl")
            if "cpu_us_per_query" in q and q["partitions"] == 10000
        ]
    ),
    "append": appends,
    "occupancy_vs_buckets": (lines("occupancy.jsonl") or [None])[0],
    "criterion": crit.splitlines(),
}


def flag_targets(targets):
    """Each target's "met", computed from its measured values: a rate is met when at least its
    target, a time when at most; the scan rate separately at the median and at the mean."""
    scan = targets["scan_gb_per_second_per_thread_warm"]
    for at in ("p50", "mean"):
        v = scan[f"measured_at_{at}"]
        scan[f"met_at_{at}"] = None if v is None else v >= scan["target"]
    for name in ("median_query_latency_us_warm_1e9_values", "append_100k_partition_amortized_ms"):
        t = targets[name]
        t["met"] = None if t["measured"] is None else t["measured"] <= t["target"]


flag_targets(summary["targets"])
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
