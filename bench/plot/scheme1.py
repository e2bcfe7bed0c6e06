"""The storage-filter tables of the 2022 Journal of Big Data paper (Tables 1-5): summary and targets."""

import sys
from pathlib import Path

from charts import chart
from harness_results import load, rows_per_partition, summary_rows, target_check, write_summary

SCHEME1 = [f"scheme1-table{i}" for i in range(1, 6)]


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
