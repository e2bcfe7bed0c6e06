"""The summary of a JVM filter benchmark run: JMH results and the space/FPR pass of bench/jvm-filters/run.sh
joined into one object per library and configuration, with machine facts, exact JMH settings and targets."""

import datetime
import glob
import json
import math
import os

from machine_facts import recorded_machine

NEEDLE = "needle-cuckoo"
# A cuckoo filter with 4-slot buckets fills to about 95% (the 2014 CoNEXT paper): target (b)'s load.
DESIGN_LOAD = 0.95
CF4J = "cuckoofilter4j"

# Display order and one-line descriptions.
LIBRARIES = [
    ("needle-cuckoo", "Needle CuckooFilter (bit-packed f-bit fingerprints, 4 slots, stash)"),
    ("needle-cuckoo-batch", "same filter, lookups through mightContainBatch (one lock stamp per 1024 keys)"),
    (
        "needle-cuckoo-xxh64",
        "same filter, each key hashed with XXH64 of its 8 bytes first (what a caller with raw keys pays)",
    ),
    ("needle-deletion-aware", "Needle DeletionAwareCuckooFilter (three-state lookupHash; f+1 bits per slot)"),
    ("needle-adaptive", "Needle AdaptiveCuckooFilter (f+2 bits per slot, plus a 64-bit key store per slot)"),
    ("needle-bloom", "Needle BloomFilter baseline (no delete)"),
    (
        "cuckoofilter4j",
        "CuckooFilter4J 1.0.2 (the library of the IEEE Big Data 2018 and Journal of Big Data 2022 papers)",
    ),
    ("fastfilter-cuckoo", "fastfilter_java 1.0.2 Cuckoo8/Cuckoo16 (fixed-width fingerprints; no delete)"),
    ("fastfilter-bloom", "fastfilter_java 1.0.2 Bloom"),
    ("fastfilter-blockedbloom", "fastfilter_java 1.0.2 BlockedBloom (one cache line per key)"),
    ("guava-bloom", "Guava 33.2.1 BloomFilter"),
]
ORDER = {name: i for i, (name, _) in enumerate(LIBRARIES)}
METRICS = {
    "InsertBenchmark.insertAll": "insert",
    "LookupBenchmark.positive": "positive_lookup",
    "LookupBenchmark.negative": "negative_lookup",
    "DeleteBenchmark.deleteAll": "delete",
}
METRIC_LABEL = {
    "insert": "insert",
    "positive_lookup": "positive lookup",
    "negative_lookup": "negative lookup",
    "delete": "delete",
}
DELETABLE = {"needle-cuckoo", "needle-deletion-aware", "needle-adaptive", "cuckoofilter4j"}
LOOKUP_ONLY = {"needle-cuckoo-batch", "needle-cuckoo-xxh64"}


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def num(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def key_of(lib, n, fpp):
    return (lib, int(n), float(fpp))


def per_key(entry, n):
    """A JMH result as nanoseconds per key (single-shot builds/deletes of n keys are divided by n)."""
    pm = entry["primaryMetric"]
    unit = pm["scoreUnit"]
    if unit == "ns/op":
        scale = 1.0
    elif unit == "us/op":
        scale = 1e3
    elif unit == "ms/op":
        scale = 1e6
    elif unit == "s/op":
        scale = 1e9
    else:
        raise ValueError("unexpected JMH unit " + unit)
    if entry["mode"] == "ss":
        scale /= n  # one invocation = n keys
    samples = [v * scale for fork in pm.get("rawData", []) for v in fork]
    err = num(pm.get("scoreError"))
    ordered = sorted(samples)
    median = None
    if ordered:
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "ns_per_key": pm["score"] * scale,
        "median_ns": median,
        "error_ns": err * scale if err is not None else None,
        "error_kind": "JMH 99.9% confidence half-width"
        if err is not None
        else "n/a (fewer than 3 measured iterations; see min/max)",
        "min_ns": min(samples) if samples else None,
        "max_ns": max(samples) if samples else None,
        "samples_ns": samples,
        "jmh_score": pm["score"],
        "jmh_unit": unit,
        "jmh_mode": entry["mode"],
    }


def jmh_settings(entry):
    return {
        "benchmark": entry["benchmark"].rsplit(".", 2)[-2] + "." + entry["benchmark"].rsplit(".", 1)[-1],
        "mode": entry["mode"],
        "forks": entry["forks"],
        "threads": entry["threads"],
        "warmup_iterations": entry["warmupIterations"],
        "warmup_time": entry.get("warmupTime"),
        "warmup_batch_size": entry.get("warmupBatchSize"),
        "measurement_iterations": entry["measurementIterations"],
        "measurement_time": entry.get("measurementTime"),
        "measurement_batch_size": entry.get("measurementBatchSize"),
        "jvm_args": entry.get("jvmArgs"),
        "jmh_version": entry.get("jmhVersion"),
    }


def iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat(timespec="seconds") if epoch else None


def build(results_dir):
    jmh_entries = []
    for path in sorted(
        glob.glob(os.path.join(results_dir, "lookup*.json"))
        + glob.glob(os.path.join(results_dir, "insert-*.json"))
        + glob.glob(os.path.join(results_dir, "delete-*.json"))
    ):
        with open(path) as f:
            for e in json.load(f):
                e["_file"] = os.path.basename(path)
                jmh_entries.append(e)
    space = []
    space_path = os.path.join(results_dir, "space.json")
    if os.path.exists(space_path):
        with open(space_path) as f:
            space = json.load(f)
    meta = {}
    meta_path = os.path.join(results_dir, "run-meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)

    rows = {}

    def row(lib, n, fpp):
        k = key_of(lib, n, fpp)
        if k not in rows:
            rows[k] = {"library": lib, "n": int(n), "fpp": float(fpp)}
        return rows[k]

    settings = {}
    for e in jmh_entries:
        short = ".".join(e["benchmark"].rsplit(".", 2)[-2:])
        metric = METRICS.get(short)
        if metric is None:
            continue
        p = e["params"]
        r = row(p["library"], p["n"], p["fpp"])
        r[metric] = per_key(e, int(p["n"]))
        s = jmh_settings(e)
        settings.setdefault(e["_file"] + ": " + s["benchmark"], s)

    space_by_key = {}
    for s in space:
        space_by_key[key_of(s["library"], s["n"], s["fpp"])] = s
        r = row(s["library"], s["n"], s["fpp"])
        r["variant"] = s["variant"]
        for f in (
            "bits_per_key",
            "extra_bits_per_key",
            "size_bits",
            "size_source",
            "load",
            "fingerprint_bits",
            "slot_bits",
            "fpr",
            "false_positives",
            "absent_keys",
            "false_negatives",
            "false_negatives_batch_api",
            "not_live_three_state",
            "failed_inserts",
            "failed_deletes",
            "count_after_delete_all",
            "positives_after_delete_all",
        ):
            r[f] = s.get(f)
        if s.get("fpr") is not None:
            eps = float(s["fpp"])
            sigma = math.sqrt(eps * (1 - eps) / s["absent_keys"])
            r["fpr_at_most_target"] = s["fpr"] <= eps
            # Above the target by more than 3 binomial standard deviations: not sampling noise.
            r["fpr_significantly_above_target"] = s["fpr"] > eps + 3 * sigma
    # The lookup-only variants share needle-cuckoo's filter: space, FPR and load are the same filter's.
    for (lib, n, fpp), r in rows.items():
        if lib in LOOKUP_ONLY:
            base = space_by_key.get(key_of(NEEDLE, n, fpp))
            r["same_filter_as"] = NEEDLE
            if base:
                r["variant"] = base["variant"] + (
                    " via mightContainBatch" if lib.endswith("batch") else " + XXH64 per call"
                )
                for f in ("bits_per_key", "load", "fingerprint_bits", "fpr"):
                    r[f] = base.get(f) if not lib.endswith("xxh64") or f != "fpr" else None
        r["delete_supported"] = lib in DELETABLE
        for m in ("insert", "positive_lookup", "negative_lookup", "delete"):
            r.setdefault(m, None)

    ordered = sorted(rows.values(), key=lambda r: (r["n"], -r["fpp"], ORDER.get(r["library"], 99)))
    targets = compute_targets(rows)
    wall = meta.get("wall_seconds")
    summary = {
        "what": "Needle's JVM filters against CuckooFilter4J 1.0.2, fastfilter_java 1.0.2 and Guava 33.2.1 "
        "BloomFilter: "
        "ns per key for insert (full build of n keys), positive and negative lookup, delete (every key), "
        "bits per key, measured false-positive rate, load. Keys: random 64-bit longs (SplittableRandom, fixed seeds), "
        "given to Needle as its 64-bit key hash and to the competitors as their long key.",
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "run": {
            "quick": meta.get("quick"),
            "started_at": iso(meta.get("start_epoch")),
            "finished_at": iso(meta.get("end_epoch")),
            "wall_seconds": wall,
            "phases": meta.get("phases"),
            "load_average_observed": meta.get("load_average_observed"),
            "jar": meta.get("jar"),
            "jar_sha256": meta.get("jar_sha256"),
            "jar_built_at": iso(meta.get("jar_mtime_epoch")),
            "needle_filter_sources_sha256_at_run_end": meta.get("needle_filter_sources_sha256_at_run_end"),
            "git_head": meta.get("git_head"),
        },
        "machine": recorded_machine(results_dir, jmh_entries),
        "jmh_settings": settings,
        "units": {
            "ns_per_key": "nanoseconds per key: lookups = JMH average time per lookup (1024 lookups per invocation); "
            "insert/delete = JMH single-shot time of the whole build/delete pass divided by n",
            "bits_per_key": "filter bits from the library's own size API divided by n",
            "fpr": "false positives among 1,000,000 keys checked not to be inserted",
            "load": "occupied slots / slots (cuckoo filters only)",
        },
        "results": ordered,
        "targets": targets,
    }
    return summary


def compute_targets(rows):
    ratios = []
    space_checks = []
    fn_checks = []
    configs = sorted({(n, fpp) for (_, n, fpp) in rows})
    for n, fpp in configs:
        nd = rows.get(key_of(NEEDLE, n, fpp))
        cf = rows.get(key_of(CF4J, n, fpp))
        for metric in ("positive_lookup", "negative_lookup"):
            a = nd.get(metric) if nd else None
            b = cf.get(metric) if cf else None
            if not a or not b:
                ratios.append({"n": n, "fpp": fpp, "lookup": metric, "met": None, "why": "missing measurement"})
                continue
            ratio = b["ns_per_key"] / a["ns_per_key"]
            # Conservative: CuckooFilter4J's fastest measured iteration against Needle's slowest (JMH's 99.9% interval
            # from 3 iterations is too wide to bound anything).
            b_lo, a_hi = b["min_ns"], a["max_ns"]
            entry = {
                "n": n,
                "fpp": fpp,
                "lookup": metric,
                "needle_ns": a["ns_per_key"],
                "cuckoofilter4j_ns": b["ns_per_key"],
                "ratio": ratio,
                "ratio_conservative": (b_lo / a_hi) if (b_lo and a_hi) else None,
                "ratio_of_medians": (b["median_ns"] / a["median_ns"])
                if (a.get("median_ns") and b.get("median_ns"))
                else None,
                "met": ratio >= 2.0,
            }
            xx = rows.get(key_of("needle-cuckoo-xxh64", n, fpp), {}).get(metric)
            if xx:
                entry["ratio_with_xxh64_hashing"] = b["ns_per_key"] / xx["ns_per_key"]
            bt = rows.get(key_of("needle-cuckoo-batch", n, fpp), {}).get(metric)
            if bt:
                entry["ratio_batch_api"] = b["ns_per_key"] / bt["ns_per_key"]
            ratios.append(entry)
        if nd and nd.get("bits_per_key") is not None and nd.get("load"):
            # The reference divides by the design load, not the filter's own: a filter sized too
            # loosely (a lower load) or with longer fingerprints has more bits per key and fails.
            ideal = (math.log2(1 / fpp) + 3) / DESIGN_LOAD
            rel = nd["bits_per_key"] / ideal - 1
            space_checks.append(
                {
                    "n": n,
                    "fpp": fpp,
                    "bits_per_key": nd["bits_per_key"],
                    "load": nd["load"],
                    "fingerprint_bits": nd.get("fingerprint_bits"),
                    "reference_bits_per_key": ideal,
                    "relative_difference": rel,
                    "met": abs(rel) <= 0.05,
                }
            )
        for lib in (name for name, _ in LIBRARIES):
            r = rows.get(key_of(lib, n, fpp))
            if not r or r.get("false_negatives") is None:
                continue
            fn = r["false_negatives"]
            extra = {}
            if r.get("false_negatives_batch_api") is not None:
                extra["false_negatives_batch_api"] = r["false_negatives_batch_api"]
                fn += r["false_negatives_batch_api"]
            if r.get("not_live_three_state") is not None:
                extra["not_live_three_state"] = r["not_live_three_state"]
                fn += r["not_live_three_state"]
            fn_checks.append(
                dict(
                    {
                        "library": lib,
                        "n": n,
                        "fpp": fpp,
                        "keys_checked": n,
                        "false_negatives": r["false_negatives"],
                        "failed_inserts": r.get("failed_inserts"),
                        "met": fn == 0,
                    },
                    **extra,
                )
            )

    def overall(items):
        vals = [i["met"] for i in items]
        if not vals or any(v is None for v in vals):
            return None
        return all(vals)

    needle_fn = [c for c in fn_checks if c["library"].startswith("needle-")]
    return {
        "a_lookup_at_least_2x_cuckoofilter4j": {
            "statement": "Needle CuckooFilter lookup throughput >= 2x CuckooFilter4J, positive and negative, every "
            "configuration "
            "(ratio = CuckooFilter4J ns / Needle ns, JMH means, single-key mightContainHash; 'met' uses this ratio; "
            "ratio_conservative = CuckooFilter4J's fastest iteration / Needle's slowest; ratio_of_medians over the "
            "measured iterations; the XXH64 and batch-API ratios are for information)",
            "met": overall(ratios),
            "checks": ratios,
        },
        "b_bits_per_key_within_5pct": {
            "statement": "Needle CuckooFilter bits per key (its size over n) within 5% of (log2(1/eps) + 3) / 0.95, "
            "the space of a cuckoo filter with 4-slot buckets at its 95% design load; the filter's measured load is "
            "listed for information",
            "met": overall(space_checks),
            "checks": space_checks,
        },
        "c_zero_false_negatives": {
            "statement": "zero false negatives: every inserted key looked up after the build (Needle cuckoo also "
            "through "
            "mightContainBatch; deletion-aware: every key must answer LIVE); 'met' covers Needle's filters, "
            "competitors are listed for information",
            "met": overall(needle_fn),
            "checks": fn_checks,
        },
    }
