"""Reading and tabulating needle-bench results: the rows of a summary, its Markdown tables, checked targets."""

import json
import sys
from pathlib import Path

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


def latency_of(doc):
    return (doc["experiment"].get("cluster") or {}).get("latency") or "none"


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
