#!/usr/bin/env python3
"""Prints the Markdown tables of docs/partition-index.md from summary.json."""
import json, sys

s = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "bench/results/partition-index/summary.json"))

def lat(q, k="p50"):
    return "%.1f" % q["latency_us"][k]

print("| indexed values | partitions | row bytes (×2 per query) | warm p50 µs | warm p99 µs | warm p50, no row CRC µs | cold p50 µs | cold mean µs | warm per-thread rate GB/s (p50) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
by = {}
for q in s["latency_vs_partitions"]:
    key = "cold" if q["cold"] else ("warm" if q["verify_reads"] else "noverify")
    by.setdefault(q["partitions"], {})[key] = q
for p in sorted(by):
    d = by[p]
    w, c, n = d.get("warm"), d.get("cold"), d.get("noverify")
    print("| %.0e | %d | %d | %s | %s | %s | %s | %s | %.2f |" % (
        w["indexed_values"], p, w["bytes_per_query"] / 2, lat(w), lat(w, "p99"), lat(n) if n else "-",
        lat(c) if c else "-", lat(c, "mean") if c else "-", w["scan_gb_per_second_per_thread_p50"]))
print()
print("| buckets | avg slots per partition | occupancy | row bytes | warm p50 µs | warm p99 µs | measured FPR | expected FPR |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
builds = {b["buckets"]: b for b in s["buckets_builds"]}
for q in s["latency_vs_buckets"]:
    b = builds.get(q["buckets"], {})
    print("| %d | %.2f | %.3f | %d | %s | %s | %.2e | %.2e |" % (q["buckets"], b.get("avg_slots", 0), q["occupancy"], q["bytes_per_query"] / 2, lat(q), lat(q, "p99"), q["measured_fpr_per_partition"], q["expected_fpr_per_partition"]))
print()
print("| partitions | threads | row CRC | cold | p50 µs | mean µs | p99 µs | queries/s | MB/s read |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for q in s["threads"]:
    print("| %d | %d | %s | %s | %s | %s | %s | %.0f | %.0f |" % (q["partitions"], q["threads"], "on" if q["verify_reads"] else "off", "cold" if q["cold"] else "warm", lat(q), lat(q, "mean"), lat(q, "p99"), q["queries_per_second"], q["read_mb_per_second"]))
print()
print("| step | partitions added | append s | values/s | segments merged | merge s | merge MB/s (read+written) | bytes per value |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for b in s["build_and_merge"]:
    print("| to %d | %d | %.1f | %.2e | %d | %.1f | %.0f | %.3f |" % (b["partitions"], b["added"], b["append_seconds"], b["append_values_per_second"], b["merge_inputs"], b["merge_seconds"], b["merge_mb_per_second"] if b["merge_inputs"] else 0, b["bytes_per_value"]))
print()
print("| threads | row CRC | cold | p50 µs | mean µs | queries/s | CPU µs/query | waiting for a CPU µs/query | load average |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for q in s.get("threads_with_scheduler_stats", []):
    print("| %d | %s | %s | %s | %s | %.0f | %.1f | %.1f | %s |" % (q["threads"], "on" if q["verify_reads"] else "off", "cold" if q["cold"] else "warm", lat(q), lat(q, "mean"), q["queries_per_second"], q["cpu_us_per_query"], q["runqueue_wait_us_per_query"], q["loadavg_1m_before"]))
