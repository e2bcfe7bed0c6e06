#!/usr/bin/env python3
"""Point lookups in a directory of Parquet files: DuckDB alone against DuckDB over Needle's candidates.

For each table size (by default 500, 1,000, 2,000 and 5,000 files of 20,000 rows), present and absent
values of a high-cardinality BIGINT column are looked up:

  (a) ``duckdb``: DuckDB scans every file with its own pruning (min/max statistics);
  (b) ``duckdb-bloom``: the same rows in files that carry Parquet Bloom filters, sized for the
      same false-positive rate as Needle's index, which DuckDB uses to skip row groups;
  (c) ``needle+duckdb``: Needle's candidate files, then DuckDB reading only those, through a
      ``needle.ParquetTable`` opened once per table, as the DuckDB connection is (the index's
      metadata is read once; each query reads its buckets and the candidate files);
  (d) ``needle+duckdb-open``: the same through ``needle.duckdb_lookup``, which opens the index
      for every query (shown for what opening costs; the targets use (c)).

Each query is answered by the four in a random order. Warm runs
repeat each query on a warm page cache; cold runs drop the cache before each query and method
(root only). Index build time and size are compared with the bytes of Parquet's Bloom filters.
Results: ``bench/results/data-lake/{queries.csv,summary.json}`` and a chart in ``docs/img``.

    bench/data-lake/run.py                       # the default sizes (several GB of data under --data)
    bench/data-lake/run.py --files 500,1000,2000,5000,10000   # the committed run (5.5 GB at 10,000 files)
    bench/data-lake/run.py --files 100,200 --queries 10 --cold-queries 3   # a quick one
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import shutil
import statistics
from pathlib import Path

import duckdb
from tables import key_of, log, timed, write_files

import needle

ROOT = Path(__file__).resolve().parents[2]


def subset(all_dir: Path, dest: Path, n: int) -> Path:
    """A directory holding the first ``n`` files of ``all_dir`` (as symbolic links)."""
    if dest.exists():
        return dest
    dest.mkdir(parents=True)
    for p in sorted(all_dir.glob("*.parquet"))[:n]:
        (dest / p.name).symlink_to(p)
    return dest


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def bloom_bytes(con: duckdb.DuckDBPyConnection, directory: Path) -> int:
    return con.sql(
        f"SELECT sum(bloom_filter_length) FROM parquet_metadata('{directory}/*.parquet') WHERE path_in_schema = 'key'"
    ).fetchone()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="500,1000,2000,5000", help="table sizes, in files (comma-separated)")
    ap.add_argument("--rows", type=int, default=20000, help="rows per file")
    ap.add_argument("--queries", type=int, default=50, help="warm queries per kind (present, absent) and size")
    ap.add_argument("--cold-queries", type=int, default=10, help="cold queries per kind and size (root only)")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("NEEDLE_BENCH_DATA", "/tmp/needle-bench-data")))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/data-lake")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument(
        "--generate-only", action="store_true", help="write the files (kept) and stop: a later run measures them"
    )
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.files.split(","))
    total_files = sizes[-1]
    data = args.data / "data-lake"
    con = duckdb.connect()
    con.sql("SET threads TO 2")

    # Needle's index is built first: its expected false-positive rate sets the Bloom filters'.
    log(f"writing {total_files} files of {args.rows} rows (plain)")
    write_files(con, data / "plain", total_files, args.rows, None)
    builds = {}
    for n in sizes:
        d = subset(data / "plain", data / f"plain-{n}", n)
        shutil.rmtree(d / ".needle-index", ignore_errors=True)
        ms, report = timed(lambda d=d: needle.index_parquet(d, "key"))
        with needle.PartitionIndex.open(d / ".needle-index", read_only=True) as ix:
            stats = ix.stats()
        builds[n] = {"files": n, "build_ms": round(ms), "index_bytes": stats["bytes_on_disk"], **stats}
        log(f"  index of {n} files: {ms / 1000:.1f} s, {stats['bytes_on_disk']} bytes, fpr {stats['expected_fpr']:.2g}")
    fpr = max(b["expected_fpr"] for b in builds.values())
    log(f"writing the same rows with Parquet Bloom filters at fpr {fpr:.2g}")
    write_files(con, data / f"bloom-{fpr:.2g}", total_files, args.rows, fpr)
    if args.generate_only:
        log(f"files written under {data}")
        return
    for n in sizes:
        d = subset(data / f"bloom-{fpr:.2g}", data / f"bloom-{fpr:.2g}-{n}", n)
        builds[n]["bloom_bytes"] = bloom_bytes(con, d)
        builds[n]["bloom_fpr"] = fpr

    rnd = random.Random(2024)
    rows_out = []
    can_drop = drop_caches()
    if not can_drop:
        log("cannot drop the page cache (not root): cold runs skipped")
    for n in sizes:
        plain = data / f"plain-{n}"
        bloom = data / f"bloom-{fpr:.2g}-{n}"
        total = n * args.rows
        table = needle.ParquetTable(plain)
        methods = {
            "duckdb": lambda v, d=plain: con.execute(
                f"SELECT * FROM read_parquet('{d}/*.parquet') WHERE key = ?", [v]
            ).fetchall(),
            "duckdb-bloom": lambda v, d=bloom: con.execute(
                f"SELECT * FROM read_parquet('{d}/*.parquet') WHERE key = ?", [v]
            ).fetchall(),
            "needle+duckdb": lambda v, t=table: t.duckdb_lookup(con, v).fetchall(),
            "needle+duckdb-open": lambda v, d=plain: needle.duckdb_lookup(con, d, v).fetchall(),
        }
        for cache, count in (("warm", args.queries), ("cold", args.cold_queries if can_drop else 0)):
            for kind in ("present", "absent"):
                for q in range(count):
                    i = rnd.randrange(total) if kind == "present" else total + rnd.randrange(10**9)
                    v = key_of(i)
                    results = {}
                    # A random order for each query: whatever one method leaves behind (a scan
                    # of thousands of files slows the next query of the process, whatever it
                    # is) falls on every method alike. (A rotation would not do: it keeps each
                    # method's predecessor.)
                    order = list(methods.items())
                    rnd.shuffle(order)
                    for method, fn in order:
                        if cache == "cold":
                            drop_caches()
                        elif q == 0:
                            fn(v)  # warm the cache and DuckDB's plan
                        ms, rows = timed(lambda fn=fn, v=v: fn(v))
                        results[method] = len(rows)
                        rows_out.append(
                            {"files": n, "cache": cache, "kind": kind, "method": method, "ms": round(ms, 3)}
                        )
                    expected = 1 if kind == "present" else 0
                    if set(results.values()) != {expected}:
                        raise SystemExit(f"wrong answer for {v} ({kind}) in {n} files: {results}")
            log(f"  {n} files, {cache}: done")
        table.close()

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "queries.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["files", "cache", "kind", "method", "ms"])
        w.writeheader()
        w.writerows(rows_out)
    summary = summarize(rows_out, builds, sizes, args)
    keep_datafusion(args.out / "summary.json", summary)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, ROOT / "docs/img/data-lake.png")
    print(json.dumps(summary["targets"], indent=1))
    if not args.keep:
        shutil.rmtree(data)


def keep_datafusion(path: Path, summary: dict) -> None:
    """Carries the rows ``datafusion.py`` wrote into the previous summary over to this one."""
    if not path.exists():
        return
    before = json.loads(path.read_text())
    if "datafusion" not in before:
        return
    summary["datafusion"] = before["datafusion"]
    summary["targets"] += [t for t in before["targets"] if t.get("benchmark") == "datafusion"]
    summary["targets_met"] = sum(t["met"] for t in summary["targets"])
    summary["targets_checked"] = len(summary["targets"])


def summarize(rows_out, builds, sizes, args):
    med = {}
    p99 = {}
    for key in {(r["files"], r["cache"], r["kind"], r["method"]) for r in rows_out}:
        ms = sorted(r["ms"] for r in rows_out if (r["files"], r["cache"], r["kind"], r["method"]) == key)
        med[key] = statistics.median(ms)
        p99[key] = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    medians = [
        {
            "files": k[0],
            "cache": k[1],
            "kind": k[2],
            "method": k[3],
            "median_ms": round(v, 3),
            "p99_ms": round(p99[k], 3),
        }
        for k, v in sorted(med.items())
    ]
    targets = []
    biggest = sizes[-1]
    for cache in ("warm", "cold"):
        for kind in ("present", "absent"):
            if (biggest, cache, kind, "needle+duckdb") not in med:
                continue
            best = min(med[(biggest, cache, kind, "duckdb")], med[(biggest, cache, kind, "duckdb-bloom")])
            ratio = best / med[(biggest, cache, kind, "needle+duckdb")]
            targets.append(
                {
                    "target": f"{kind} values, {cache}: best of DuckDB alone / Needle + DuckDB median >= 20",
                    "files": biggest,
                    "cache": cache,
                    "kind": kind,
                    "value": round(ratio, 1),
                    "met": ratio >= 20,
                }
            )
            gains = []
            for n in sizes:
                b = min(med[(n, cache, kind, "duckdb")], med[(n, cache, kind, "duckdb-bloom")])
                gains.append(round(b / med[(n, cache, kind, "needle+duckdb")], 1))
            targets.append(
                {
                    "target": f"{kind} values, {cache}: the gain widens with the number of files",
                    "files": sizes,
                    "cache": cache,
                    "kind": kind,
                    "value": gains,
                    "met": all(a < b for a, b in zip(gains, gains[1:], strict=False)),
                }
            )
    for n in sizes:
        b = builds[n]
        targets.append(
            {
                "target": "index bytes <= Parquet Bloom filter bytes at the same false-positive rate",
                "files": n,
                "value": round(b["index_bytes"] / b["bloom_bytes"], 3),
                "met": b["index_bytes"] <= b["bloom_bytes"],
            }
        )
    return {
        "experiment": "point lookups in a Parquet table: DuckDB alone against DuckDB over Needle's candidates",
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "duckdb": duckdb.__version__,
        },
        "config": {
            "files": sizes,
            "rows_per_file": args.rows,
            "warm_queries": args.queries,
            "cold_queries": args.cold_queries,
            "methods": {
                "duckdb": "DuckDB over every file (min/max pruning)",
                "duckdb-bloom": "DuckDB over every file, with Parquet Bloom filters",
                "needle+duckdb": "needle.ParquetTable held open, DuckDB over the candidate files",
                "needle+duckdb-open": "needle.duckdb_lookup: the index opened for each query",
            },
        },
        "builds": [builds[n] for n in sizes],
        "medians": medians,
        "targets": targets,
        "targets_met": sum(t["met"] for t in targets),
        "targets_checked": len(targets),
    }


def plot(summary, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no chart")
        return
    med = summary["medians"]
    caches = [c for c in ("warm", "cold") if any(m["cache"] == c for m in med)]
    fig, axes = plt.subplots(len(caches), 2, figsize=(10, 4 * len(caches)), squeeze=False)
    for row, cache in enumerate(caches):
        for col, kind in enumerate(("present", "absent")):
            ax = axes[row][col]
            for method in ("duckdb", "duckdb-bloom", "needle+duckdb", "needle+duckdb-open"):
                style = ":" if method.endswith("-open") else "-"
                pts = sorted(
                    (m["files"], m["median_ms"])
                    for m in med
                    if m["cache"] == cache and m["kind"] == kind and m["method"] == method
                )
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=method)
            ax.set_yscale("log")
            ax.set_xlabel("Parquet files")
            ax.set_ylabel("median latency (ms)")
            ax.set_title(f"{kind} values, {cache} cache")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    log(f"chart: {path}")


if __name__ == "__main__":
    main()
