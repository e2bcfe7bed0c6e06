#!/usr/bin/env python3
"""Prints the Markdown tables of docs/partition-index.md from summary.json."""

import json
import sys

s = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "bench/results/partition-index/summary.json"))


def lat(q, k="p50"):
    return "{:.1f}".format(q["latency_us"][k])


def row(*cells):
    """One Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def header(*names):
    """A Markdown table's header and rule."""
    return row(*names) + "\n" + row(*["---"] * len(names))


def yes_no(met):
    return "yes" if met else "no"


# The targets, as summarize.py computed them from the measured values.
t = s["targets"]
scan = t["scan_gb_per_second_per_thread_warm"]
median = t["median_query_latency_us_warm_1e9_values"]
append = t["append_100k_partition_amortized_ms"]
print(header("target", "measured", "met"))
print(
    row(
        f"fingerprint scan ≥ {scan['target']:g} GB/s per thread, index in page cache",
        f"{scan['measured_at_p50']:.2f} GB/s at the median query, {scan['measured_at_mean']:.2f} at the mean"
        f" ({scan['note']})",
        f"at the median, {yes_no(scan['met_at_p50'])}; at the mean, {yes_no(scan['met_at_mean'])}",
    )
)
print(
    row(
        f"median query latency < {median['target']:g} µs warm at {median['indexed_values']:,} values",
        f"{median['measured']:.1f} µs",
        yes_no(median["met"]),
    )
)
print(
    row(
        f"append of a new 100,000-value partition < {append['target']:g} ms amortized",
        f"{append['measured']:.2f} ms",
        yes_no(append["met"]),
    )
)
print()
print(
    header(
        "indexed values",
        "partitions",
        "row bytes (×2 per query)",
        "warm p50 µs",
        "warm p99 µs",
        "warm p50, no row CRC µs",
        "cold p50 µs",
        "cold mean µs",
        "warm per-thread rate GB/s (p50)",
    )
)
by = {}
for q in s["latency_vs_partitions"]:
    key = "cold" if q["cold"] else ("warm" if q["verify_reads"] else "noverify")
    by.setdefault(q["partitions"], {})[key] = q
for p in sorted(by):
    d = by[p]
    w, c, n = d.get("warm"), d.get("cold"), d.get("noverify")
    print(
        row(
            format(w["indexed_values"], ".0e"),
            int(p),
            int(w["bytes_per_query"] / 2),
            lat(w),
            lat(w, "p99"),
            lat(n) if n else "-",
            lat(c) if c else "-",
            lat(c, "mean") if c else "-",
            format(w["scan_gb_per_second_per_thread_p50"], ".2f"),
        )
    )
print()
print(
    header(
        "buckets",
        "avg slots per partition",
        "occupancy",
        "row bytes",
        "warm p50 µs",
        "warm p99 µs",
        "measured FPR",
        "expected FPR",
    )
)
builds = {b["buckets"]: b for b in s["buckets_builds"]}
for q in s["latency_vs_buckets"]:
    b = builds.get(q["buckets"], {})
    print(
        row(
            int(q["buckets"]),
            format(b.get("avg_slots", 0), ".2f"),
            format(q["occupancy"], ".3f"),
            int(q["bytes_per_query"] / 2),
            lat(q),
            lat(q, "p99"),
            format(q["measured_fpr_per_partition"], ".2e"),
            format(q["expected_fpr_per_partition"], ".2e"),
        )
    )
print()
print(
    header(
        "partitions",
        "threads",
        "row CRC",
        "cold",
        "p50 µs",
        "mean µs",
        "p99 µs",
        "queries/s",
        "MB/s read",
    )
)
for q in s["threads"]:
    print(
        row(
            int(q["partitions"]),
            int(q["threads"]),
            "on" if q["verify_reads"] else "off",
            "cold" if q["cold"] else "warm",
            lat(q),
            lat(q, "mean"),
            lat(q, "p99"),
            format(q["queries_per_second"], ".0f"),
            format(q["read_mb_per_second"], ".0f"),
        )
    )
print()
print(
    header(
        "step",
        "partitions added",
        "append s",
        "values/s",
        "segments merged",
        "merge s",
        "merge MB/s (read+written)",
        "bytes per value",
    )
)
for b in s["build_and_merge"]:
    print(
        row(
            "to " + str(int(b["partitions"])),
            int(b["added"]),
            format(b["append_seconds"], ".1f"),
            format(b["append_values_per_second"], ".2e"),
            int(b["merge_inputs"]),
            format(b["merge_seconds"], ".1f"),
            format(b["merge_mb_per_second"] if b["merge_inputs"] else 0, ".0f"),
            format(b["bytes_per_value"], ".3f"),
        )
    )
print()
print(
    header(
        "threads",
        "row CRC",
        "cold",
        "p50 µs",
        "mean µs",
        "queries/s",
        "CPU µs/query",
        "waiting for a CPU µs/query",
        "load average",
    )
)
for q in s.get("threads_with_scheduler_stats", []):
    print(
        row(
            int(q["threads"]),
            "on" if q["verify_reads"] else "off",
            "cold" if q["cold"] else "warm",
            lat(q),
            lat(q, "mean"),
            format(q["queries_per_second"], ".0f"),
            format(q["cpu_us_per_query"], ".1f"),
            format(q["runqueue_wait_us_per_query"], ".1f"),
            q["loadavg_1m_before"],
        )
    )
