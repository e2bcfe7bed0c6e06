#!/usr/bin/env python3
"""Point lookups in a directory of Parquet files: DataFusion alone against DataFusion with Needle.

The table is the data-lake benchmark's (``tables.py``: files of 20,000 rows, a BIGINT ``key``
spread like hashes), indexed by ``needle index-parquet``. The lookups themselves run in Rust
(``rust/needle-datafusion/benches/point_lookups.rs``), through DataFusion's ``SessionContext``:

  (a) ``datafusion``: the table registered once with ``register_parquet`` (DataFusion's own
      pruning), the context kept across queries;
  (b) ``needle+datafusion``: the same table registered as a ``NeedleTable``, which hands
      DataFusion only the candidate files of ``key = v``;
  (c) ``datafusion-new`` and ``needle+datafusion-new``: a new context, and the table registered
      in it, for each of the first queries.

Results: ``bench/results/data-lake-datafusion/{queries.jsonl,summary.json}``; the medians and
targets are also written into ``bench/results/data-lake/summary.json`` (section ``datafusion``),
beside DuckDB's.

    bench/data-lake/datafusion.py                      # 5,000 files (2.7 GB under --data)
    bench/data-lake/datafusion.py --files 200 --queries 10 --new-queries 2   # a quick one
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
from pathlib import Path

import duckdb
from tables import log, write_files

ROOT = Path(__file__).resolve().parents[2]
NEEDLE = ROOT / "rust/target/release/needle"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=5000, help="files in the table")
    ap.add_argument("--rows", type=int, default=20000, help="rows per file")
    ap.add_argument("--queries", type=int, default=50, help="queries per kind (present, absent), context kept")
    ap.add_argument("--new-queries", type=int, default=5, help="of those, also run in a new context")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("NEEDLE_BENCH_DATA", "/tmp/needle-bench-data")))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/data-lake-datafusion")
    ap.add_argument("--summary", type=Path, default=ROOT / "bench/results/data-lake/summary.json")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--summarize-only", action="store_true", help="summarize the queries of the last run again")
    args = ap.parse_args()
    raw = args.out / "queries.jsonl"
    if not args.summarize_only:
        measure(args, raw)
    rows = [json.loads(line) for line in raw.read_text().splitlines()]
    summary = summarize(rows, args)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    merge_into(args.summary, summary)
    print(json.dumps(summary["targets"], indent=1))


def measure(args, raw: Path) -> None:
    """Writes the table and its index if missing, then runs the lookups into ``raw``."""

    data = args.data / "data-lake"
    table = data / f"plain-{args.files}"
    if not table.exists():
        con = duckdb.connect()
        con.sql("SET threads TO 2")
        log(f"writing {args.files} files of {args.rows} rows")
        write_files(con, data / "plain", args.files, args.rows, None)
        table.mkdir(parents=True)
        for p in sorted((data / "plain").glob("*.parquet"))[: args.files]:
            (table / p.name).symlink_to(p)
    if not (table / ".needle-index").exists():
        log(f"indexing {table}")
        subprocess.run([str(NEEDLE), "index-parquet", str(table), "--column", "key"], check=True)

    args.out.mkdir(parents=True, exist_ok=True)
    log("running the lookups")
    subprocess.run(
        [
            "cargo", "bench", "-q", "-p", "needle-datafusion", "--bench", "point_lookups", "--",
            "--table", str(table), "--rows", str(args.rows), "--files", str(args.files),
            "--queries", str(args.queries), "--new-queries", str(args.new_queries), "--out", str(raw),
        ],
        cwd=ROOT / "rust",
        check=True,
    )  # fmt: skip
    if not args.keep:
        shutil.rmtree(data)


def summarize(
    rows: list[dict], args, benchmark: str = "datafusion", storage: str = "local disk, warm page cache"
) -> dict:
    """Medians, ratios and targets of one run of the Rust lookups (``args``: files, rows, queries,
    new_queries); ``benchmark`` names its targets and its section in the data-lake summary."""
    registration = next(r for r in rows if r.get("registration"))
    lookups = [r for r in rows if not r.get("registration")]
    med, p99 = {}, {}
    for key in sorted({(r["kind"], r["method"]) for r in lookups}):
        ms = sorted(r["ms"] for r in lookups if (r["kind"], r["method"]) == key)
        med[key] = statistics.median(ms)
        p99[key] = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    medians = [
        {"files": args.files, "cache": "warm", "kind": k[0], "method": k[1], "median_ms": round(v, 3),
         "p99_ms": round(p99[k], 3), "queries": sum(1 for r in lookups if (r["kind"], r["method"]) == k)}
        for k, v in med.items()
    ]  # fmt: skip
    # The target is on DataFusion's best, the kept context (as DuckDB's is on its best); the
    # ratios with a new context per query are reported beside it.
    targets, ratios = [], {}
    for kind in ("present", "absent"):
        for suffix in ("", "-new"):
            base, ours = med.get((kind, "datafusion" + suffix)), med.get((kind, "needle+datafusion" + suffix))
            if base is not None and ours is not None:
                ratios[f"{kind}, {'new context' if suffix else 'context kept'}"] = round(base / ours, 1)
        ratio = med[(kind, "datafusion")] / med[(kind, "needle+datafusion")]
        targets.append(
            {
                "target": f"{kind} values: DataFusion alone / DataFusion with Needle median, context kept, >= 20",
                "benchmark": benchmark,
                "files": args.files,
                "kind": kind,
                "value": round(ratio, 1),
                "met": ratio >= 20,
            }
        )
    return {
        "experiment": "point lookups in a Parquet table: DataFusion alone against DataFusion with Needle",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "config": {
            "storage": storage,
            "files": args.files,
            "rows_per_file": args.rows,
            "queries": args.queries,
            "new_queries": args.new_queries,
            "datafusion": cargo_version("datafusion"),
            "methods": {
                "datafusion": "SessionContext kept, register_parquet over every file",
                "needle+datafusion": "SessionContext kept, the table a NeedleTable",
                "datafusion-new": "a new SessionContext and register_parquet per query",
                "needle+datafusion-new": "a new SessionContext and NeedleTable::open per query",
            },
        },
        "registration_ms": {
            "datafusion": round(registration["datafusion_ms"], 1),
            "needle+datafusion": round(registration["needle_ms"], 1),
        },
        "medians": medians,
        "ratios": ratios,
        "targets": targets,
    }


def cargo_version(package: str) -> str:
    lock = (ROOT / "rust/Cargo.lock").read_text().split("[[package]]")
    for block in lock:
        if f'name = "{package}"\n' in block:
            return block.split('version = "')[1].split('"')[0]
    return "unknown"


def merge_into(path: Path, summary: dict, section: str = "datafusion") -> None:
    """Puts the DataFusion rows into the data-lake benchmark's summary, beside DuckDB's, as
    ``section`` (which their targets name as their benchmark)."""
    rows = {k: summary[k] for k in ("config", "registration_ms", "medians", "ratios")}
    merge_section(path, section, rows, summary["targets"])


def merge_section(path: Path, section: str, rows: dict, targets: list[dict]) -> None:
    """Replaces benchmark ``section`` of the data-lake summary at ``path``: its rows, and its
    targets (those naming it as their benchmark), then counts the targets met again."""
    whole = json.loads(path.read_text())
    whole[section] = rows
    whole["targets"] = [t for t in whole["targets"] if t.get("benchmark") != section] + targets
    whole["targets_met"] = sum(t["met"] for t in whole["targets"])
    whole["targets_checked"] = len(whole["targets"])
    path.write_text(json.dumps(whole, indent=1) + "\n")


if __name__ == "__main__":
    main()
