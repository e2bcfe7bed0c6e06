"""Charts and summaries of needle-bench results.

    needle_plot.py chart RESULTS.json [--out DIR]
        one PNG per cache state and delete mode: median latency per variant with a whisker to p99
    needle_plot.py summarize-scheme1 [--results DIR]
        bench/results/scheme1/summary.json (the storage-filter tables of the 2022 Journal of Big
        Data paper, with the targets checked), tables.md and the charts of every table
    needle_plot.py summarize-scheme2 [--results DIR]
        bench/results/scheme2/summary.json (the node-filter tables, every latency profile run,
        and the staleness probe's staleness.json, with the targets checked), tables.md, the
        staleness curve (staleness.png) and the load's resource timeline (NAME-resources.png)

Only the standard library and matplotlib; the summary needs no matplotlib.
"""

import argparse
import json
import sys
from pathlib import Path

VARIANT_COLORS = {"stock": "#7f7f7f", "needle-bloom": "#1f77b4", "needle-cuckoo": "#d62728"}
SCHEME1 = [f"scheme1-table{i}" for i in range(1, 6)]
# The node-filter lookup targets per latency profile: stock / Needle-Cuckoo median at 100% remote.
SCHEME2_REMOTE_GAIN = {"lan": 3.0, "az": 5.0}
# The staleness targets: p99.9 of the time until every coordinator holds a new key, per phase (ms),
# and the wire bytes of the sync per changed key and receiving node.
STALENESS_MS = {"idle": 50, "load": 250}
SYNC_BYTES_PER_CHANGE = 32
# The load targets (Tables 10-13): the cluster's CPU per insert at the same insert rate (a paced
# point), Needle-Cuckoo against stock.
CPU_PER_INSERT_RATIO = 1.05


def load(path):
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        sys.exit(f"needle_plot: {path} not found; run the experiment first (make bench-{path.parent.name})")
    except json.JSONDecodeError as e:
        sys.exit(f"needle_plot: {path} is not valid JSON ({e}); was the run interrupted while writing?")
    if "runs" not in doc:
        sys.exit(f"needle_plot: {path} is not a needle-bench result (no 'runs')")
    return doc


def is_insert(doc):
    return doc["experiment"]["run"]["op"] == "insert"


def groups(doc):
    """Runs grouped by (cache, delete mode), in the order they were measured."""
    out = {}
    for r in doc["runs"]:
        out.setdefault((r["cache"], r.get("delete_mode")), []).append(r)
    return out


def x_labels(doc, runs):
    if len({r.get("partitions") for r in runs}) > 1:
        return [f"{r['partitions']:,} partitions\n{gib(r, 'stock'):.2f} GiB" for r in runs]
    return [r["point"].replace(", ", ",\n") for r in runs]  # long labels on two lines


def gib(run, variant):
    sizes = run.get("table_bytes", {}).get(variant)
    return sizes["data"] / 2**30 if sizes else float("nan")


def chart(doc, out_dir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (cache, mode), runs in groups(doc).items():
        variants = list(runs[0]["variants"])
        labels = x_labels(doc, runs)
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(runs) + 2), 4.2))
        width = 0.8 / len(variants)
        for i, v in enumerate(variants):
            med = [r["variants"][v]["p50_us"] / 1000 for r in runs]
            p99 = [r["variants"][v]["p99_us"] / 1000 for r in runs]
            xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(runs))]
            ax.bar(xs, med, width, label=v, color=VARIANT_COLORS.get(v))
            ax.errorbar(
                xs,
                med,
                yerr=[[0] * len(med), [p - m for p, m in zip(p99, med, strict=True)]],
                fmt="none",
                ecolor="black",
                elinewidth=0.8,
                capsize=2,
            )
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(labels, fontsize=8)
        what = "insert" if is_insert(doc) else "lookup"
        ax.set_ylabel(f"{what} latency, ms (bar: median, whisker: p99)")
        sub = f"{cache} cache" + (
            "" if mode is None else f", {mode}-level deletes" if mode == "partition" else ", row-by-row deletes"
        )
        ax.set_title(f"{doc['title']}\n{sub}", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        name = f"{doc['name']}-{cache}" + ("" if mode is None else f"-{mode}") + ".png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(out_dir / name)
    if doc.get("resources", {}).get("timeline"):
        written.append(resource_chart(doc, out_dir))
    return written


def ms(us):
    return round(us / 1000.0, 3)


def summary_rows(doc):
    rows = []
    growing = len({r.get("partitions") for r in doc["runs"]}) > 1
    for r in doc["runs"]:
        row = {
            "label": r["point"] + (f", {r['partitions']:,} partitions" if growing else ""),
            "cache": r["cache"],
            "delete_mode": r.get("delete_mode"),
            "mix": r.get("mix"),
            "load": r.get("load"),
            "rate": r.get("rate"),
            "partitions": r.get("partitions", r.get("partitions_before")),
            "stock_data_gib": round(gib(r, "stock"), 3) if "table_bytes" in r else None,
            "variants": {
                v: {
                    "p50_ms": ms(s["p50_us"]),
                    "p99_ms": ms(s["p99_us"]),
                    "mean_ms": ms(s["mean_us"]),
                    "throughput_ops_s": s["throughput_ops_s"],
                    "count": s["count"],
                    "wrong_results": s["wrong_results"],
                    **(
                        {"needle_skipped": s["needle_skipped"], "needle_passed": s["needle_passed"]}
                        if "needle_skipped" in s
                        else {}
                    ),
                }
                for v, s in r["variants"].items()
            },
            "ratio_p50_stock_over_cuckoo": r.get("ratio_p50_stock_over_cuckoo"),
            "ratio_p99_stock_over_cuckoo": r.get("ratio_p99_stock_over_cuckoo"),
        }
        for v, st in r["variants"].items():
            for k in ("needle_node_skipped", "needle_node_passed_live", "needle_node_passed_stale"):
                if k in st:
                    row["variants"][v][k] = st[k]
            if "resources" in st:
                row["variants"][v]["resources"] = {k: st["resources"].get(k) for k in RESOURCE_FIELDS}
        if r.get("remote") is not None:
            row["remote"] = r["remote"]
        # A floor without its query was a read of system.local, a real table: no floor.
        if r.get("request_floor", {}).get("query"):
            row["request_floor_p50_ms"] = ms(r["request_floor"]["p50_us"])
        rows.append(row)
    return rows


# What a variant's measured rounds cost the cluster, as the summary keeps it.
RESOURCE_FIELDS = (
    "seconds",
    "ops",
    "cpu_s",
    "cpu_pct_of_one_core",
    "cpu_ms_per_op",
    "internode_sent_bytes_per_op",
    "sync_bytes_per_op",
    "internode_sent_bytes_s",
    "machine_busy_pct",
)


def rows_per_partition(doc):
    return doc["experiment"]["dataset"]["rows_per_partition"]


def target_check(target, table, row, ok, value, **where):
    """One checked target on one summary row; ``where`` adds fields between the table and the row."""
    return {
        "target": target,
        "table": table,
        **where,
        "row": row["label"],
        "cache": row["cache"],
        "delete_mode": row["delete_mode"],
        "value": value,
        "met": ok,
    }


def check_targets(docs):
    """The targets of the reproduction, each checked on every row it applies to."""
    checks = []

    def add(target, table, row, ok, value):
        checks.append(target_check(target, table, row, ok, value))

    for name, doc in docs.items():
        table = name.split("-")[-1]
        for row in summary_rows(doc):
            ratio = row["ratio_p50_stock_over_cuckoo"]
            mix = row["mix"] or {}
            if ratio is None:
                continue
            if row["delete_mode"] == "row" and mix.get("deleted") == 1.0 and rows_per_partition(doc) >= 100:
                add(
                    "deleted-key lookups, >= 100 row tombstones per partition: stock / Needle-Cuckoo median >= 5",
                    table,
                    row,
                    ratio >= 5,
                    ratio,
                )
            if mix.get("absent") == 1.0:
                add(
                    "never-written keys: Needle-Cuckoo median no slower than stock (ratio >= 1)",
                    table,
                    row,
                    ratio >= 1,
                    ratio,
                )
            if mix.get("live") == 1.0:
                add(
                    "live-key lookups: Needle-Cuckoo median within 3% of stock (ratio >= 0.97)",
                    table,
                    row,
                    ratio >= 0.97,
                    ratio,
                )
            if row["load"] is not None:
                add(
                    "inserts: Needle-Cuckoo median within 3% of stock (ratio >= 0.97)", table, row, ratio >= 0.97, ratio
                )
    return checks


def markdown(docs):
    lines = []
    for name, doc in docs.items():
        cluster = doc["experiment"].get("cluster")
        latency = f", `{latency_of(doc)}` latency" if cluster else ""
        lines.append(f"### {doc['reproduces'] or name}: {doc['title']}{latency}\n")
        what = "insert" if is_insert(doc) else "lookup"
        lines.append(f"Median / p99 {what} latency in ms; last column: stock median / Needle-Cuckoo median.\n")
        variants = list(doc["runs"][0]["variants"])
        lines.append("| cache | deletes | row | " + " | ".join(variants) + " | stock / cuckoo |")
        lines.append("|---|---|---|" + "---|" * len(variants) + "---|")
        for row in summary_rows(doc):
            cells = [f"{row['variants'][v]['p50_ms']:.3f} / {row['variants'][v]['p99_ms']:.3f}" for v in variants]
            ratio = row["ratio_p50_stock_over_cuckoo"]
            mode = {"partition": "partition", "row": "row by row", None: "-"}[row["delete_mode"]]
            last = f"{ratio:.2f}x" if ratio is not None else "-"
            lines.append(f"| {row['cache']} | {mode} | {row['label']} | " + " | ".join(cells) + f" | {last} |")
        lines += resources_markdown(doc)
        lines.append("")
    return "\n".join(lines)


def summarize_scheme1(results_dir):
    results_dir = Path(results_dir)
    docs = {}
    for name in SCHEME1:
        path = results_dir / name / "results.json"
        if path.exists():
            docs[name] = load(path)
        else:
            print(f"needle_plot: {path} missing (run make bench-{name}); left out of the summary", file=sys.stderr)
    if not docs:
        sys.exit("needle_plot: no scheme1 results to summarize")
    checks = check_targets(docs)
    body = {
        "tables": {
            name.split("-")[-1]: {
                "experiment": name,
                "title": d["title"],
                "reproduces": d["reproduces"],
                "rows_per_partition": rows_per_partition(d),
                "row_bytes": d["experiment"]["dataset"]["row_bytes"],
                "started": d["started"],
                "duration_s": d.get("duration_s"),
                "rows": summary_rows(d),
            }
            for name, d in docs.items()
        }
    }
    out = results_dir / "scheme1"
    summary = write_summary(out, docs, "2022 Journal of Big Data paper, Tables 1-5 (storage filter)", body, checks)
    try:
        for d in docs.values():
            for p in chart(d, out):
                print(f"wrote {p}")
    except ImportError:
        print("needle_plot: matplotlib missing; charts skipped (bench/plot/run installs it)", file=sys.stderr)
    return summary


def latency_of(doc):
    return (doc["experiment"].get("cluster") or {}).get("latency") or "none"


def check_scheme2_targets(docs):
    """The node-filter targets, each checked on every row it applies to (rows of one run,
    delete mode and cache are compared with each other: remote against local, against the floor)."""
    checks = []

    def add(target, name, doc, row, ok, value):
        checks.append(target_check(target, name.split("-")[1], row, ok, value, latency=latency_of(doc)))

    for name, doc in docs.items():
        rows = summary_rows(doc)
        latency = latency_of(doc)
        run = doc["experiment"].get("run") or {}
        routed_quorum = run.get("coordinator") == "token-aware" and run.get("consistency") == "QUORUM"
        for row in rows:
            mix = row["mix"] or {}
            cuckoo = row["variants"].get("needle-cuckoo")
            ratio = row["ratio_p50_stock_over_cuckoo"]
            if routed_quorum and cuckoo is not None and ratio is not None:
                # The realistic setting: the driver routes to a replica, which must still hear
                # from another replica for a quorum; only node filters can skip that round trip.
                if mix.get("live") == 1.0:
                    add(
                        "QUORUM lookups of live keys, token-aware: Needle-Cuckoo median within 3% of stock"
                        " (ratio >= 0.97)",
                        name,
                        doc,
                        row,
                        ratio >= 0.97,
                        ratio,
                    )
                elif (mix.get("absent") == 1.0 or mix.get("deleted") == 1.0) and latency in SCHEME2_REMOTE_GAIN:
                    gain = SCHEME2_REMOTE_GAIN[latency]
                    add(
                        f"QUORUM lookups of keys with no live data, token-aware, {latency}: "
                        f"stock / Needle-Cuckoo median >= {gain:g}",
                        name,
                        doc,
                        row,
                        ratio >= gain,
                        ratio,
                    )
                continue
            if cuckoo is not None and ratio is not None and row["load"] is not None:
                add(
                    "inserts: Needle-Cuckoo median within 3% of stock (ratio >= 0.97)",
                    name,
                    doc,
                    row,
                    ratio >= 0.97,
                    ratio,
                )
                # CPU compares where every variant does the same work per second (a paced point).
                cpu = cpu_ratio(row) if row["rate"] else None
                if cpu is not None:
                    add(
                        f"CPU during the load: cluster CPU per insert, Needle-Cuckoo / stock <= {CPU_PER_INSERT_RATIO}",
                        name,
                        doc,
                        row,
                        cpu <= CPU_PER_INSERT_RATIO,
                        cpu,
                    )
                continue
            if cuckoo is None or ratio is None or row.get("remote") is None:
                continue
            if mix.get("live") == 1.0:
                add(
                    "live-key lookups: Needle-Cuckoo median within 3% of stock (ratio >= 0.97)",
                    name,
                    doc,
                    row,
                    ratio >= 0.97,
                    ratio,
                )
                continue
            if not (mix.get("absent") == 1.0 or mix.get("deleted") == 1.0) or row["remote"] != 1.0:
                continue
            gain = SCHEME2_REMOTE_GAIN.get(latency)
            if gain is not None:
                add(
                    f"remote lookups of keys with no live data, 100% remote, {latency}: "
                    f"stock / Needle-Cuckoo median >= {gain:g}",
                    name,
                    doc,
                    row,
                    ratio >= gain,
                    ratio,
                )
            local = next(
                (
                    r
                    for r in rows
                    if r.get("remote") == 0.0
                    and r["cache"] == row["cache"]
                    and r["delete_mode"] == row["delete_mode"]
                    and r["mix"] == row["mix"]
                ),
                None,
            )
            if local is not None:
                slower = round(cuckoo["p50_ms"] / local["variants"]["needle-cuckoo"]["p50_ms"], 3)
                add(
                    "a remote miss costs what a local miss costs: Needle-Cuckoo median at 100% remote / at 0% <= 1.15",
                    name,
                    doc,
                    row,
                    slower <= 1.15,
                    slower,
                )
            if row.get("request_floor_p50_ms"):
                over = round(cuckoo["p50_ms"] / row["request_floor_p50_ms"], 3)
                add(
                    "skipped lookups: Needle-Cuckoo median / request floor median <= 1.2",
                    name,
                    doc,
                    row,
                    over <= 1.2,
                    over,
                )
    return checks


def cpu_ratio(row):
    """Cluster CPU seconds per insert, Needle-Cuckoo over stock; None without resource figures."""
    try:
        cuckoo = row["variants"]["needle-cuckoo"]["resources"]["cpu_ms_per_op"]
        stock = row["variants"]["stock"]["resources"]["cpu_ms_per_op"]
    except KeyError:
        return None
    return round(cuckoo / stock, 3) if stock else None


def resources_markdown(doc):
    """What each variant's measured rounds cost the cluster, and the idle periods, as Markdown."""
    res = doc.get("resources")
    if not res:
        return []
    lines = [
        "",
        "What the cluster spent in each variant's measured rounds (all nodes; CPU from /proc, internode bytes "
        "from system_views, node-filter bytes as published):",
        "",
        "| row | variant | inserts/s | CPU, % of one core | CPU ms per insert | internode bytes sent per insert "
        "| node-filter bytes per insert |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["runs"]:
        for v, st in r["variants"].items():
            t = st.get("resources")
            if t:
                lines.append(
                    f"| {r['point']} | {v} | {st['throughput_ops_s']:,.0f} | {t['cpu_pct_of_one_core']} "
                    f"| {t['cpu_ms_per_op']} | {t['internode_sent_bytes_per_op']} | {t['sync_bytes_per_op']} |"
                )
    idle = [(k, res[k]) for k in ("idle_before", "idle_after_with_needle", "idle_after_indexes_dropped") if k in res]
    if idle:
        lines += [
            "",
            "| idle period | seconds | CPU, % of one core | internode bytes sent/s | node-filter bytes/s |",
            "|---|---|---|---|---|",
        ]
        for k, t in idle:
            lines.append(
                f"| {k.replace('_', ' ')} | {t['seconds']} | {t['cpu_pct_of_one_core']} "
                f"| {t['internode_sent_bytes_s']:,} | {t['sync_bytes_s']:,} |"
            )
    return lines


def resource_chart(doc, out_dir):
    """The resource timeline of a run (the 2022 paper's Figs. 15-17): the cluster's CPU, the bytes
    the nodes received and sent, and the node filters' own bytes, the background coloured by the
    variant being measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = doc["resources"]["timeline"]
    t = [s["t_s"] / 60 for s in samples]
    step = doc["resources"]["interval_s"] / 60
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    series = (
        (axes[0], "cpu_pct", 1, "CPU, % of one core (all nodes)", "Table 11: CPU"),
        (axes[1], "received_bytes_s", 1e6, "MB/s received (all nodes)", "Table 12: internode bytes in"),
        (axes[2], "sent_bytes_s", 1e6, "MB/s sent (all nodes)", "Table 13: internode bytes out"),
    )
    for ax, key, scale, ylabel, title in series:
        ax.plot(t, [sum(s[key]) / scale for s in samples], color="black", lw=1, label="cluster")
        if key == "sent_bytes_s":
            ax.plot(
                t,
                [sum(s["sync_bytes_s"]) / scale for s in samples],
                color="#2ca02c",
                lw=1,
                label="node filters (payload, once per change)",
            )
            ax.legend(fontsize=7, loc="upper right")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        for s, x in zip(samples, t, strict=True):
            color = VARIANT_COLORS.get(s["phase"])
            if color:
                ax.axvspan(x - step, x, color=color, alpha=0.3, lw=0)
    from matplotlib.patches import Patch

    axes[0].legend(
        handles=[Patch(color=c, alpha=0.3, label=f"{v} loading") for v, c in VARIANT_COLORS.items()],
        fontsize=7,
        loc="lower left",
    )
    axes[2].set_xlabel("minutes since the sampling began (idle periods before and after the load)", fontsize=8)
    import textwrap

    fig.suptitle("\n".join(textwrap.wrap(doc["title"], 110)), fontsize=9)
    fig.tight_layout()
    out = Path(out_dir) / f"{doc['name']}-resources.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def summarize_scheme2(results_dir):
    results_dir = Path(results_dir)
    docs = {
        p.parent.name: load(p)
        for p in sorted(results_dir.glob("scheme2-*/results.json"))
        if not p.parent.name.endswith(".tmp")
    }
    if not docs:
        sys.exit(f"needle_plot: no scheme2-*/results.json under {results_dir} (run make bench-scheme2)")
    checks = check_scheme2_targets(docs)
    body = {
        "runs": {
            name: {
                "title": d["title"],
                "reproduces": d["reproduces"],
                "cluster": d["experiment"].get("cluster"),
                "index_options": d["experiment"].get("index_options"),
                "started": d["started"],
                "duration_s": d.get("duration_s"),
                "rows": summary_rows(d),
                **(
                    {"idle": {k: v for k, v in d["resources"].items() if k.startswith("idle")}}
                    if "resources" in d
                    else {}
                ),
            }
            for name, d in docs.items()
        }
    }
    staleness_file = results_dir / "scheme2" / "staleness.json"
    if staleness_file.exists():
        staleness = json.loads(staleness_file.read_text())
        checks += check_staleness_targets(staleness)
        body["staleness"] = staleness_summary(staleness)
        try:
            print(f"wrote {staleness_chart(staleness, results_dir / 'scheme2')}")
        except ImportError:
            print(
                "needle_plot: matplotlib missing; staleness chart skipped (bench/plot/run installs it)", file=sys.stderr
            )
    else:
        print(f"needle_plot: {staleness_file} missing (run bench/needle-bench staleness); left out", file=sys.stderr)
    for d in docs.values():
        if d.get("resources", {}).get("timeline"):
            try:
                print(f"wrote {resource_chart(d, results_dir / 'scheme2')}")
            except ImportError:
                print("needle_plot: matplotlib missing; resource chart skipped", file=sys.stderr)
    reproduces = "2022 Journal of Big Data paper, Tables 6-13 (node filters)"
    return write_summary(results_dir / "scheme2", docs, reproduces, body, checks)


def staleness_check(target, row, ok, value, latency):
    """One checked target of the staleness probe, in the form of the tables' checks."""
    return target_check(
        target, "staleness", {"label": row, "cache": "warm", "delete_mode": None}, ok, value, latency=latency
    )


def check_staleness_targets(doc):
    """The window of bounded staleness and the sync's bytes, from the staleness probe's file."""
    latency = doc["latency"]
    checks = []
    for phase, bound in STALENESS_MS.items():
        p999 = doc["probe"][phase]["needle-cuckoo"]["visible_at_every_coordinator_ms"]["p99.9"]
        checks.append(
            staleness_check(
                f"99.9% of new keys held by every coordinator's copy within {bound} ms ({phase})",
                phase,
                p999 <= bound,
                p999,
                latency,
            )
        )
    checks.append(
        staleness_check(
            f"no read that began more than S ({doc['staleness_bound']}) after the write missed it",
            "idle and load",
            not doc["violations"],
            len(doc["violations"]),
            latency,
        )
    )
    for phase, tables in doc["sync_cost"].items():
        if phase.startswith("idle"):
            continue
        per_change = tables["needle-cuckoo"]["wire_bytes_per_change_per_receiving_node"]
        checks.append(
            staleness_check(
                f"sync: at most {SYNC_BYTES_PER_CHANGE} bytes on the wire per changed key per receiving node",
                f"{phase.replace('_', ' ')} ({tables['needle-cuckoo']['inserts_per_s']:,} inserts/s)",
                per_change is not None and per_change <= SYNC_BYTES_PER_CHANGE,
                per_change,
                latency,
            )
        )
    return checks


def staleness_summary(doc):
    """The probe's figures with each table's curve as (bin start, miss fraction) points; a phase's
    other entries (the load, Cassandra's mutation delivery) as they are."""
    return {
        "nodes": doc["nodes"],
        "latency": doc["latency"],
        "staleness_bound": doc["staleness_bound"],
        "method": doc["method"],
        "probe": {
            phase: {
                name: ({k: v for k, v in r.items() if k != "curve"} | {"curve": curve_points(r)}) if "curve" in r else r
                for name, r in tables.items()
            }
            for phase, tables in doc["probe"].items()
        },
        "violations": len(doc["violations"]),
        "sync_cost": doc["sync_cost"],
    }


def curve_points(probe):
    """(bin start in ms, fraction of reads that missed) of one probe's curve."""
    return [[c["from_ms"], round(c["miss_fraction"], 5)] for c in probe["curve"]]


def staleness_chart(doc, out_dir):
    """The fraction of reads that miss a just-written key against the time since the write."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for phase, style in (("idle", "-"), ("load", "--")):
        for table, color in (("needle-cuckoo", VARIANT_COLORS["needle-cuckoo"]), ("stock", VARIANT_COLORS["stock"])):
            curve = doc["probe"][phase][table]["curve"]
            xs = [max(c["from_ms"], 0.1) for c in curve]
            ax.step(
                xs, [c["miss_fraction"] for c in curve], style, where="post", color=color, label=f"{table}, {phase}"
            )
    ax.set_xscale("log")
    ax.set_xlabel("time since the write was acknowledged, ms (start of the read)")
    ax.set_ylabel("fraction of reads that miss the key")
    ax.set_title(
        f"Reads of a just-written key through the other nodes: {doc['nodes']} nodes, {doc['latency']}, "
        f"S = {doc['staleness_bound']}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_dir) / "staleness.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write_summary(out, docs, reproduces, body, checks):
    """Writes ``out``/summary.json (what it reproduces, the machine, ``body``, the targets) and
    tables.md; prints the targets not met. Returns the summary."""
    first = next(iter(docs.values()))
    summary = {
        "reproduces": reproduces,
        "machine": first["machine"],
        "cassandra_version": first.get("cassandra_version"),
        **body,
        "targets": checks,
        "targets_met": sum(c["met"] for c in checks),
        "targets_checked": len(checks),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "tables.md").write_text(markdown(docs) + "\n")
    print(f"wrote {out / 'summary.json'} and {out / 'tables.md'}")
    print(f"targets met in {summary['targets_met']} of {summary['targets_checked']} checks")
    for c in checks:
        if not c["met"]:
            where = " ".join(str(c[k]) for k in ("table", "latency", "row") if k in c)
            print(f"  not met: {where} ({c['cache']}, {c['delete_mode']}): {c['value']}  [{c['target']}]")
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="needle_plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chart", help="PNG charts of one results.json")
    c.add_argument("results")
    c.add_argument("--out", help="folder for the PNGs (default: beside results.json)")
    s = sub.add_parser("summarize-scheme1", help="summary.json, tables.md and charts of Tables 1-5")
    s.add_argument("--results", default="bench/results", help="folder holding scheme1-table*/ (default bench/results)")
    s2 = sub.add_parser("summarize-scheme2", help="summary.json and tables.md of the node-filter tables")
    s2.add_argument("--results", default="bench/results", help="folder holding scheme2-table*/ (default bench/results)")
    a = ap.parse_args(argv)
    if a.cmd == "chart":
        doc = load(a.results)
        for p in chart(doc, a.out or Path(a.results).parent):
            print(f"chart: {p}")
    elif a.cmd == "summarize-scheme2":
        summarize_scheme2(a.results)
    else:
        summarize_scheme1(a.results)


if __name__ == "__main__":
    main()
