#!/usr/bin/env python3
"""Where a cold ``needle.duckdb_lookup`` spends its time, phase by phase.

Runs on the tables ``run.py --keep`` leaves under ``--data`` and, for each table size, drops
the page cache (root only) before each query, then times the phases of the lookup one after the
other: reading the index's column file, opening the index, the candidates' query (for an absent
value also the index's first file, for the columns of the empty answer), DuckDB's read of the
candidate files (of that first file for an absent value), and the CPU time of the calling
thread. Medians per size and kind go to stdout as JSON.

``--after-scan`` scans the whole table with DuckDB before each query (then drops the page cache
again), in this process (``same``) or in another one (``other``): what a lookup costs right after
such a scan, as in ``run.py``, where the methods take turns in one process.

    bench/data-lake/cold_phases.py --data /work/bench-data --files 500,2000,5000 --queries 10
    bench/data-lake/cold_phases.py --data /work/bench-data --files 5000 --after-scan same
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from run import drop_caches, key_of

from needle._native import PartitionIndex, parquet_index_info, split_partition_id


def phases(con: duckdb.DuckDBPyConnection, directory: Path, value: int) -> tuple[dict[str, float], int]:
    """The milliseconds of each phase of one lookup, and the rows found."""
    out = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        out[name] = (now - t) * 1000.0
        t = now

    index_dir = directory / ".needle-index"
    info = parquet_index_info(os.fspath(index_dir))
    lap("column file")
    ix = PartitionIndex.snapshot(os.fspath(index_dir))  # as the lookups open it: no lock
    lap("index open")
    ids = ix.candidates(value)
    known = None if ids else ix.any_partition()
    ix.close()
    lap("candidates")
    files = sorted({str(directory / split_partition_id(i)[0]) for i in ids})
    where = f"{info['column']} = $value"
    if not files:
        files = [str(directory / split_partition_id(known)[0])]
        where = "false AND " + where
    rows = con.sql(f"SELECT * FROM read_parquet({files}) WHERE {where}", params={"value": value}).fetchall()
    lap("duckdb read")
    return out, len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="the --data folder of a run.py --keep run")
    ap.add_argument("--files", default="500,2000,5000", help="table sizes, in files (comma-separated)")
    ap.add_argument("--rows", type=int, default=20000, help="rows per file, as the tables were written")
    ap.add_argument("--queries", type=int, default=10, help="cold queries per kind and size")
    ap.add_argument(
        "--after-scan",
        choices=["none", "same", "other"],
        default="none",
        help="scan the table with DuckDB before each query: in this process, or in another one",
    )
    args = ap.parse_args()
    if not drop_caches():
        raise SystemExit("cannot drop the page cache: run as root")
    con = duckdb.connect()
    con.sql("SET threads TO 2")
    rnd = random.Random(7)
    result = {}
    for n in (int(s) for s in args.files.split(",")):
        directory = args.data / "data-lake" / f"plain-{n}"
        total = n * args.rows
        for kind in ("present", "absent"):
            laps: dict[str, list[float]] = {}
            for _ in range(args.queries):
                i = rnd.randrange(total) if kind == "present" else total + rnd.randrange(10**9)
                scan = f"SELECT * FROM read_parquet('{directory}/*.parquet') WHERE key = {key_of(0)}"
                if args.after_scan == "same":
                    drop_caches()
                    con.sql(scan).fetchall()
                elif args.after_scan == "other":
                    drop_caches()
                    code = f"import duckdb; c = duckdb.connect(); c.sql('SET threads TO 2'); c.sql({scan!r}).fetchall()"
                    subprocess.run([sys.executable, "-c", code], check=True)
                drop_caches()
                start = time.perf_counter()
                cpu = time.thread_time()
                got, rows = phases(con, directory, key_of(i))
                got["total"] = (time.perf_counter() - start) * 1000.0
                got["thread cpu"] = (time.thread_time() - cpu) * 1000.0
                if rows != (kind == "present"):
                    raise SystemExit(f"wrong answer for row {i} ({kind}) in {n} files: {rows} rows")
                for name, ms in got.items():
                    laps.setdefault(name, []).append(ms)
            result[f"{n} files, {kind}"] = {name: round(statistics.median(v), 2) for name, v in laps.items()}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
