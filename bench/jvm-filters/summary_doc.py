"""docs/jvm-filters.md from the summary of a JVM filter benchmark run (summary_data.py builds it).

Over 500 lines because most of it is the document's own prose; each section of the document is a function of its
own, and markdown() puts them in order."""

from summary_data import DESIGN_LOAD, LIBRARIES, LOOKUP_ONLY, METRIC_LABEL, NEEDLE, ORDER, num


def fmt_shot(m):
    """Single-shot rows: the median of the shots, with their range (robust to one descheduled shot)."""
    if not m:
        return "–"
    if m["jmh_mode"] != "ss" or m.get("median_ns") is None:
        return fmt_ns(m)
    v = m["median_ns"]
    s = f"{v:.1f}" if v < 1000 else f"{v:.0f}"
    if len(m["samples_ns"]) > 1:
        s += (
            " [{:.0f}–{:.0f}]".format(m["min_ns"], m["max_ns"])
            if m["max_ns"] >= 1000
            else " [{:.1f}–{:.1f}]".format(m["min_ns"], m["max_ns"])
        )
    return s


def fmt_ns(m):
    if not m:
        return "–"
    s = "{:.1f}".format(m["ns_per_key"]) if m["ns_per_key"] < 1000 else "{:.0f}".format(m["ns_per_key"])
    if m["error_ns"] is not None:
        return s + " ± {:.1f}".format(m["error_ns"])
    if m["min_ns"] is not None and len(m["samples_ns"]) > 1:
        return s + " [{:.1f}–{:.1f}]".format(m["min_ns"], m["max_ns"])
    return s


def fmt_fpr(r):
    if r.get("fpr") is None:
        return "–"
    mark = " ✗" if r.get("fpr_significantly_above_target") else (" †" if r.get("fpr_at_most_target") is False else "")
    return "{:.2e}{}".format(r["fpr"], mark) if r["fpr"] > 0 else "0"


def fmt_num(x, f="%.2f"):
    return f % x if x is not None else "–"


def short_variant(r):
    v = r.get("variant") or ""
    lib = r["library"]
    if lib == "fastfilter-cuckoo":
        return v.replace("fastfilter ", "").replace(
            " (no fastfilter cuckoo variant reaches this rate; closest)", " (closest; none reaches ε)"
        )
    if r.get("fingerprint_bits"):
        sb = r.get("slot_bits") or r["fingerprint_bits"]
        extra = sb - r["fingerprint_bits"]
        return f"f={int(r['fingerprint_bits'])}" + (f" (+{int(extra)})" if extra else "")
    if lib in ("needle-bloom",) and "k=" in v:
        return v.split(" ")[1]
    if lib == "fastfilter-blockedbloom" and "bitsPerKey=" in v:
        return v.split(" ")[2].split("(")[0]
    return ""


def typical(m):
    """The value shown in the table: the median for single shots, JMH's mean for lookups."""
    return m["median_ns"] if m["jmh_mode"] == "ss" and m.get("median_ns") is not None else m["ns_per_key"]


def low(m):
    if m["jmh_mode"] != "ss" and m["error_ns"] is not None:
        return m["ns_per_key"] - m["error_ns"]
    return m["min_ns"] if m.get("min_ns") is not None else m["ns_per_key"]


def high(m):
    if m["jmh_mode"] != "ss" and m["error_ns"] is not None:
        return m["ns_per_key"] + m["error_ns"]
    return m["max_ns"] if m.get("max_ns") is not None else m["ns_per_key"]


def slower_cases(rows):
    """Where a competitor is faster than Needle's cuckoo filter for the same operation and configuration."""
    out = []
    for r in rows:
        if r["library"] != NEEDLE:
            continue
        for other in rows:
            if other["n"] != r["n"] or other["fpp"] != r["fpp"] or other["library"].startswith("needle-"):
                continue
            for m in ("insert", "positive_lookup", "negative_lookup", "delete"):
                a, b = r.get(m), other.get(m)
                if a and b and typical(b) < typical(a):
                    out.append(
                        (
                            r["n"],
                            r["fpp"],
                            m,
                            other["library"],
                            other.get("variant"),
                            typical(a),
                            typical(b),
                            high(b) < low(a),
                        )
                    )
    return out


def _row(res, lib, n, fpp):
    """The result of one library at one size and false-positive target, or None."""
    return next((r for r in res if r["library"] == lib and r["n"] == n and r["fpp"] == fpp), None)


def _cf4j_at_largest(res):
    """The run's largest n, and CuckooFilter4J's result there (its power-of-two table's load), or None."""
    n = max(r["n"] for r in res)
    return n, next((r for r in res if r["library"] == "cuckoofilter4j" and r["n"] == n), None)


def reasons(res):
    """Why each competitor can be faster than Needle, with its space and load from this run's results."""
    n_small = min(r["n"] for r in res)
    n_large, cf4j = _cf4j_at_largest(res)
    fpps = sorted({r["fpp"] for r in res}, reverse=True)
    needle_bits = " / ".join(
        "{:.1f}".format(r["bits_per_key"]) for r in (_row(res, NEEDLE, n_small, f) for f in fpps) if r
    )
    ff = [r for r in (_row(res, "fastfilter-cuckoo", n_small, f) for f in fpps) if r]
    ff_bits = ", ".join(sorted({"{:.1f}".format(r["bits_per_key"]) for r in ff}))
    ff_tightest = ff[-1] if ff else None
    out = {
        "fastfilter-blockedbloom": (
            "**fastfilter BlockedBloom** touches one cache line per key (one 512-bit block, a few bits in it) and "
            "needs no lock; it is the fastest structure here when the filter does not fit in cache, but its "
            "false-positive rate at the same bits per key is clearly worse than the target (see the FPR column) and "
            "it cannot delete."
        ),
        "fastfilter-bloom": (
            "**fastfilter Bloom** answers most negative lookups after the first zero bit (one cache miss) and its "
            "insert is a lock-free loop; it cannot delete."
        ),
        "guava-bloom": (
            "**Guava BloomFilter** takes no lock per operation, a negative lookup usually stops at the first zero bit, "
            "and an insert sets k bits (7 at ε = 0.01) without ever evicting anything, while a Needle cuckoo insert "
            f"near the {DESIGN_LOAD:.0%} design load walks eviction chains; Guava pays Murmur3-128 and boxing per "
            "key, and it cannot delete."
        ),
    }
    if ff_tightest:
        out["fastfilter-cuckoo"] = (
            "**fastfilter Cuckoo16** stores fixed 16-bit fingerprints, four to an aligned 64-bit word, so a bucket is "
            "one load and one SWAR compare, and its operations take no lock. Needle bit-packs fingerprints of exactly "
            "the width the target needs, so a bucket sits at any bit offset and often spans two words (more loads, "
            "shifts and masks; past 16 bits a bucket is wider than 64 bits and is tested as two groups), and every "
            "operation goes through the filter's StampedLock so that readers and writers can share a filter: an "
            "optimistic stamp per lookup, and the write lock (an atomic compare-and-swap and a releasing store) per "
            "insert and delete, which also keeps the CPU from overlapping the cache misses of consecutive inserts. "
            "What fastfilter gets in return is space: {} bits per key at every target (Needle: {}), and at ε = {:g} "
            "its 16-bit fingerprints give {:.1e}; it also cannot delete and is not thread-safe.".format(
                ff_bits, needle_bits, ff_tightest["fpp"], ff_tightest["fpr"]
            )
        )
    if cf4j:
        out["cuckoofilter4j"] = (
            "**CuckooFilter4J** rounds its bucket count up to a power of two, so at some sizes its table is far from "
            "full (load {:.2f} at {:,} keys) and its inserts rarely need to evict.".format(cf4j["load"], n_large)
        )
    return out


def _intro(summary, w):
    """The title and where the numbers come from."""
    run = summary["run"]
    w("# JVM filters: Needle against CuckooFilter4J, fastfilter_java and Guava")
    w("")
    w(
        "_Generated by `bench/jvm-filters/summarize.py` from the run of {} ({} wall time{}); "
        "the numbers below are from that one run on a shared 2-core machine. Raw data: `{}/summary.json`._".format(
            run.get("started_at") or "?",
            human(run.get("wall_seconds")),
            ", QUICK smoke-test settings" if run.get("quick") else "",
            summary.get("results_dir", "bench/results/jvm-filters"),
        )
    )
    w("")


def _measured(summary, w):
    """What was measured, how, and with which libraries."""
    res = summary["results"]
    w("## What was measured")
    w("")
    w(
        "For every library, for n = {} keys and target false-positive rates ε = {}:".format(
            " and ".join(format(n, ",") for n in sorted({r["n"] for r in res})),
            ", ".join(str(f) for f in sorted({r["fpp"] for r in res}, reverse=True)),
        )
    )
    w("")
    w("- **insert**: time to create the filter and insert all n keys, per key (JMH single shot per full build);")
    w(
        "- **positive / negative lookup**: time per lookup of an inserted key / of a key never inserted, on a full "
        "filter (JMH average time, 1024 lookups per invocation, the count of hits returned so nothing is optimised "
        "away);"
    )
    w("- **delete**: time per key to delete every inserted key from a full filter (only libraries that can delete);")
    w(
        "- **bits/key**: the filter's size from the library's own API × 8 / n (fastfilter `getBitCount()`, "
        "CuckooFilter4J `getStorageSize()`, Guava: length of `writeTo` output, Needle `sizeInBytes()`), measured "
        "outside JMH together with the **false-positive rate** on 1,000,000 keys checked not to be inserted, the "
        "**load** (occupied slots / slots), and a check of every inserted key for false negatives."
    )
    w("")
    w(
        "Every JMH configuration runs in its own forked JVM. The insert benchmark saves each filter it built with the "
        "library's own serialization (Needle `FilterIO`, Guava `writeTo`, CuckooFilter4J Java serialization); the "
        "lookup and delete benchmarks and the space/FPR pass load that filter in their unmeasured setup instead of "
        "building it again (fastfilter has no serialization, so its filters are rebuilt). This keeps the 50M-key run "
        "within the time budget and means every number of a configuration describes the same filter."
    )
    w("")
    w(
        "Keys are random 64-bit longs (`SplittableRandom`, fixed seeds), the same for every library. Needle takes them "
        "as its 64-bit key hash (`insertHash(long)`), so Needle's main rows include no hashing; fastfilter mixes the "
        "long with a cheap 64-bit hash, Guava and CuckooFilter4J run Murmur3-128 through a `Funnel` (and box the key). "
        "The row `needle-cuckoo-xxh64` shows Needle's lookups when each key is first hashed with XXH64, as a caller "
        "with raw keys does."
    )
    w("")
    w("Libraries and variants:")
    w("")
    for name, desc in LIBRARIES:
        if any(r["library"] == name for r in res):
            w(f"- `{name}`: {desc}")
    w("")
    w(
        "fastfilter's cuckoo variant is chosen per ε as the smallest slot whose predicted rate 1−(1−2^−f)^(2·4·0.95) "
        "meets ε: Cuckoo8 (8-bit) predicts 2.9%, so every ε here uses **Cuckoo16**, and at ε = 0.0001 even Cuckoo16 "
        "(predicted 1.16e-4) misses the target; CuckooPlus8/16 keep 6/14-bit fingerprints in the same 8/16-bit slots, "
        "so they cannot do better."
    )
    w("")


def _reproduce(summary, w):
    """The commands that reproduce the run."""
    run = summary["run"]
    w("## How to reproduce")
    w("")
    w("```")
    w(
        "make bench-filters                  # make build, then bench/jvm-filters/run.sh (the full run%s)"
        % (
            ""
            if run.get("quick") or not run.get("wall_seconds")
            else ": " + human(run["wall_seconds"]) + " on this machine"
        )
    )
    w(
        "QUICK=1 bench/jvm-filters/run.sh    # smoke test after make build: 1M keys, short iterations, results in "
        "bench/results/jvm-filters/quick/"
    )
    w("```")
    w("")
    w(
        "`run.sh` runs JMH from `java/needle-filter-bench/target/needle-filter-benchmarks.jar` with `-rf json`, then "
        "`dev.needle.filter.bench.SpaceFprMain`, then this summary. Options (environment): `NS`, `FPPS`, `LIBS`, "
        "`HEAP`, `PHASES`, `OUT`, `DOC`."
    )
    w("")


def _machine(summary, w):
    """The machine and the exact JMH settings."""
    run = summary["run"]
    mach = summary["machine"]
    w("## Machine and settings")
    w("")
    if mach.get("recorded"):
        w("Machine facts recorded {}.".format(mach["recorded"]))
        w("")
    w(
        "- CPU: {}, {} logical CPUs{}; memory {} GiB; {} (kernel {})".format(
            mach.get("cpu_model"),
            mach.get("logical_cpus"),
            ", " + mach["virtualization"] + " guest"
            if mach.get("virtualization") and mach["virtualization"] != "none"
            else "",
            mach.get("memory_total_gib"),
            mach.get("os"),
            mach.get("kernel"),
        )
    )
    w("- JVM: {}".format(mach.get("jvm")))
    w(
        "- Run: {} to {}, {} wall time".format(
            run.get("started_at"), run.get("finished_at"), human(run.get("wall_seconds"))
        )
    )
    seen = set()
    for name, s in sorted(summary["jmh_settings"].items()):
        line = (
            "- JMH {} ({}): {}, {:d} fork, {:d} thread, warmup {:d} × {}, measurement {:d} × {}, JVM args `{}`".format(
                s["benchmark"],
                name.split(":")[0],
                {"avgt": "average time", "ss": "single shot"}.get(s["mode"], s["mode"]),
                s["forks"],
                s["threads"],
                s["warmup_iterations"],
                s["warmup_time"] if s["mode"] != "ss" else "1 shot",
                s["measurement_iterations"],
                s["measurement_time"] if s["mode"] != "ss" else "1 shot",
                " ".join(s["jvm_args"] or []),
            )
        )
        if line not in seen:
            seen.add(line)
            w(line)
    w(
        "- Lookups: JMH mean ± its 99.9% confidence half-width. Insert and delete (single shots): the **median** of "
        "the measured shots with their `[min–max]`, because on this shared machine one descheduled shot can multiply a "
        "mean (JMH's mean and error are in summary.json too); a bare number is a single measured shot (the 50M-key "
        "rows: one shot is one full build or delete pass of 10-70 s, and the JIT has compiled the loop within its "
        "first fraction of a second)."
    )
    loads = [p.get("load_average_at_start") for p in (run.get("phases") or []) if p.get("load_average_at_start")]
    loads += [p.get("load_average_at_end") for p in (run.get("phases") or []) if p.get("load_average_at_end")]
    ones = [num(load.split()[0]) for load in loads if load and load != "?"]
    ones = [x for x in ones if x is not None]
    during = (
        (f"1-minute load average {min(ones):.1f} to {max(ones):.1f} at the phase boundaries")
        if ones
        else (run.get("load_average_observed") or "load average not recorded")
    )
    w(
        f"- This machine is shared: other work ran during the run ({during}, on 2 CPUs), so absolute numbers are noisy "
        f"and some "
        "iterations are outliers; compare rows of one run, and read the ratios with their conservative bounds."
    )
    w("")


def _results(summary, w):
    """One table of every library and configuration per n."""
    res = summary["results"]
    w("## Results")
    w("")
    for n in sorted({r["n"] for r in res}):
        w("### n = {} keys".format(format(n, ",")))
        w("")
        w(
            "| library | ε | variant | insert ns/key | positive lookup ns | negative lookup ns | delete ns/key | "
            "bits/key | measured FPR | load |"
        )
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in (x for x in res if x["n"] == n):
            delete = fmt_shot(r["delete"]) if r["delete_supported"] else "n/a"
            if r["library"] in LOOKUP_ONLY:
                delete = "(same filter)"
            bits = fmt_num(r.get("bits_per_key"))
            if r.get("extra_bits_per_key"):
                bits += " (+{:.1f} key store)".format(r["extra_bits_per_key"])
            w(
                "| {} | {:g} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                    r["library"],
                    r["fpp"],
                    short_variant(r),
                    fmt_shot(r["insert"]) if r["library"] not in LOOKUP_ONLY else "(same filter)",
                    fmt_ns(r["positive_lookup"]),
                    fmt_ns(r["negative_lookup"]),
                    delete,
                    bits,
                    fmt_fpr(r),
                    fmt_num(r.get("load"), "%.3f"),
                )
            )
        w("")
    w(
        "✗ = measured false-positive rate above the target ε by more than 3 binomial standard deviations (not noise); "
        "† = above ε but within sampling noise (1M absent keys: at ε = 0.0001 that is about 100 expected false "
        "positives, ±10). CuckooFilter4J sizes its tag as ceil(log2(1/ε + 3) / 0.955) bits, which is too small for its "
        "own target (8-bit tags at ε = 0.01 give about 3%)."
    )
    w("")


def _targets(summary, w):
    """The targets (a), (b) and (c), each with its checks."""
    res = summary["results"]
    w("## Targets")
    w("")
    t = summary["targets"]
    a = t["a_lookup_at_least_2x_cuckoofilter4j"]
    w(
        "**(a) Needle lookup throughput ≥ 2× CuckooFilter4J: {}.** Ratio = CuckooFilter4J ns / Needle ns from the JMH "
        "means (this decides \"met\"); conservative = CuckooFilter4J's fastest iteration / Needle's slowest; median = "
        "ratio of the medians of the three measured iterations; the XXH64 and batch-API columns use those Needle "
        "rows instead.".format(verdict(a["met"]))
    )
    w("")
    w(
        "| n | ε | lookup | Needle ns | CuckooFilter4J ns | ratio | conservative | median | with XXH64 hashing | batch "
        "API | met |"
    )
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in a["checks"]:
        if c.get("met") is None:
            w(
                "| {} | {:g} | {} | – | – | – | – | – | – | – | missing |".format(
                    format(c["n"], ","), c["fpp"], c["lookup"]
                )
            )
            continue
        w(
            "| {} | {:g} | {} | {:.1f} | {:.1f} | {:.2f}× | {} | {} | {} | {} | {} |".format(
                format(c["n"], ","),
                c["fpp"],
                METRIC_LABEL[c["lookup"]].split()[0],
                c["needle_ns"],
                c["cuckoofilter4j_ns"],
                c["ratio"],
                "{:.2f}×".format(c["ratio_conservative"]) if c.get("ratio_conservative") else "–",
                "{:.2f}×".format(c["ratio_of_medians"]) if c.get("ratio_of_medians") else "–",
                "{:.2f}×".format(c["ratio_with_xxh64_hashing"]) if c.get("ratio_with_xxh64_hashing") else "–",
                "{:.2f}×".format(c["ratio_batch_api"]) if c.get("ratio_batch_api") else "–",
                "yes" if c["met"] else "**no**",
            )
        )
    w("")
    for sub in summary.get("supplementary_runs", []):
        w(
            "Supplementary run `{}` ({}, {} wall time, {}; a separate run, not mixed into the numbers above): target "
            "(a) {}, "
            "ratios {}.".format(
                sub["dir"],
                sub["started_at"],
                human(sub["wall_seconds"]),
                sub["scope"],
                verdict(sub["met"]),
                ", ".join(
                    "{}/{:g}/{} {:.2f}×".format(format(c["n"], ","), c["fpp"], c["lookup"].split("_")[0], c["ratio"])
                    for c in sub["checks"]
                    if c.get("ratio")
                ),
            )
        )
        w("")
    b = t["b_bits_per_key_within_5pct"]
    w("**(b) Needle bits per key within 5% of (log2(1/ε) + 3) / 0.95: {}.**".format(verdict(b["met"])))
    w("")
    w("| n | ε | f | load | bits/key | (log2(1/ε)+3)/0.95 | difference | met |")
    w("|---|---|---|---|---|---|---|---|")
    for c in b["checks"]:
        w(
            "| {} | {:g} | {} | {:.4f} | {:.3f} | {:.3f} | {:+.1f}% | {} |".format(
                format(c["n"], ","),
                c["fpp"],
                c["fingerprint_bits"],
                c["load"],
                c["bits_per_key"],
                c["reference_bits_per_key"],
                100 * c["relative_difference"],
                "yes" if c["met"] else "**no**",
            )
        )
    w("")
    w(
        "Needle's fingerprint is f = ceil(log2(2·4·0.95/ε)) = ceil(log2(1/ε) + 2.93) bits, so the excess over the "
        "reference is the rounding of f up to a whole bit (largest at ε = 0.01 and 0.0001), plus one spare 64-bit word."
    )
    w("")
    c_ = t["c_zero_false_negatives"]
    bad = [c for c in c_["checks"] if not c["met"]]
    w(
        "**(c) Zero false negatives: {}.** Every inserted key of every configuration was looked up after the build "
        "({:d} filters checked, {} keys in all){}.".format(
            verdict(c_["met"]),
            len(c_["checks"]),
            format(sum(c["keys_checked"] for c in c_["checks"]), ","),
            ""
            if not bad
            else "; failures: "
            + ", ".join("{} n={} ε={:g}: {}".format(c["library"], c["n"], c["fpp"], c["false_negatives"]) for c in bad),
        )
    )
    dels = [r for r in res if r.get("failed_deletes") is not None]
    if dels:
        failed = [
            r
            for r in dels
            if r["failed_deletes"] or r.get("count_after_delete_all") or r.get("positives_after_delete_all")
        ]
        w(
            "Deleting every inserted key {} ({:d} filters: every delete reported success, count() was 0 afterwards "
            "and no deleted key still answered present){}.".format(
                "worked everywhere" if not failed else "did NOT always work",
                len(dels),
                ""
                if not failed
                else ": "
                + ", ".join(
                    "{} n={} ε={:g}: {} failed, count after {}, {} still present".format(
                        r["library"],
                        r["n"],
                        r["fpp"],
                        r["failed_deletes"],
                        r["count_after_delete_all"],
                        r["positives_after_delete_all"],
                    )
                    for r in failed
                ),
            )
        )
    w("")


def _slower(summary, w):
    """Where a competitor was faster than Needle, and why."""
    res = summary["results"]
    w("## Where Needle is slower, and why")
    w("")
    cases = slower_cases(res)
    n_large, cf4j = _cf4j_at_largest(res)
    cf4j_load = cf4j["load"] if cf4j else 0
    if not cases:
        w("In this run no competitor was faster than Needle's cuckoo filter for any operation and configuration.")
    else:
        w("In this run these competitors were faster than Needle's cuckoo filter (same operation, same n and ε):")
        w("")
        w("| n | ε | operation | competitor | Needle ns | competitor ns | Needle slower by | beyond noise |")
        w("|---|---|---|---|---|---|---|---|")
        for n, fpp, m, lib, _variant, a_ns, b_ns, clear in sorted(cases, key=lambda c: (c[0], -c[1], c[2], c[3])):
            w(
                "| {} | {:g} | {} | {} | {:.1f} | {:.1f} | {:.2f}× | {} |".format(
                    format(n, ","), fpp, METRIC_LABEL[m], lib, a_ns, b_ns, a_ns / b_ns, "yes" if clear else "no"
                )
            )
        w("")
        w(
            "\"Beyond noise\" = the competitor's upper bound (mean + error, or its slowest shot) is below Needle's "
            "lower bound; "
            '"no" rows may be artifacts of the shared machine (a single 50M-key shot has no bound, so it counts as its '
            "own "
            "bound). Needle's largest inserts also include the eviction walks of a filter filled to its design load "
            f"of {DESIGN_LOAD:.0%}: the last keys cost several microseconds each, while CuckooFilter4J's "
            f"power-of-two table at {n_large:,} keys is {cf4j_load:.0%} full."
        )
        w("")
        why = reasons(res)
        for lib in sorted({c[3] for c in cases}, key=lambda name: ORDER.get(name, 99)):
            if lib in why:
                w("- " + why[lib])
        w("")
    w("Other costs users should know:")
    w("")
    w(
        "- `needle-deletion-aware` answers three states; a key that is not LIVE is looked up a second time for its "
        "DELETED pattern, so negative lookups read both buckets twice in the SWAR sense (same cache lines) and cost "
        "more than the plain filter."
    )
    w(
        '- `needle-adaptive` tries all four fingerprint selectors before it can answer "absent" (positive lookups '
        "usually stop at "
        "selector 0), computes a 64-bit mix per selector, takes its second bucket from a separate hash, and keeps a "
        "64-bit key per slot beside the filter (the `+ key store` bits), which is also why its inserts are slower."
    )
    w(
        "- `needle-cuckoo-batch` (`mightContainBatch`) writes its answers at the same indexes as the input, so the "
        "caller's output array must span the whole input array, not just the batch."
    )
    w("")


def markdown(summary):
    """docs/jvm-filters.md from a summary: every section in order."""
    lines = []
    for section in (_intro, _measured, _reproduce, _machine, _results, _targets, _slower):
        section(summary, lines.append)
    return "\n".join(lines) + "\n"


def verdict(met):
    return "met" if met else ("NOT met" if met is False else "not measured")


def human(seconds):
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s"
