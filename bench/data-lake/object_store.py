#!/usr/bin/env python3
"""Point lookups in Parquet files on object storage, at an emulated distance: Needle against DuckDB.

A real S3-compatible server (s3s-fs, installed by ``make s3-server``) holds tables of Parquet files
(by default 500 and 5,000 files of 20,000 rows, Bloom filters on the key column as DuckDB writes
them, the same files for both). A proxy holds every request ``--delay-ms`` (default 20) before the
server sees it: the latency of a distant object store. Present and absent keys are looked up by

  ``needle``       ``needle lookup s3://...``, a new process per query: the published index
                   (two round trips), then the candidate files (two more, only if any);
  ``duckdb-cold``  a new DuckDB connection per query, ``read_parquet('s3://.../*.parquet')``
                   with its min/max pruning and the files' Bloom filters;
  ``duckdb-warm``  one DuckDB connection for every query of a table, its metadata caches on,
                   after a first query (footers and Bloom filters it has read are kept).

Each query is answered by the three in a random order; every answer's row count is compared.
Requests and bytes are counted at the proxy, for every method alike. Then, through the same
proxy, DataFusion alone against DataFusion with Needle (``datafusion.py``'s lookups in Rust, the
table read from the server; ``--datafusion-queries`` per kind, the first also in a new context;
DataFusion's target partitions as many as DuckDB's threads). Results:
``bench/results/data-lake-object-store/{queries.csv,summary.json,datafusion-N.jsonl}``; the
DataFusion medians and targets of the largest table also go into
``bench/results/data-lake/summary.json`` (section ``datafusion-object-store``).

    bench/data-lake/object_store.py                          # the default sizes (about 4.3 GB under --data)
    bench/data-lake/object_store.py --files 100 --queries 3  # a quick one
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from datafusion import merge_into, merge_section
from datafusion import summarize as summarize_datafusion
from latency_proxy import LatencyProxy
from tables import key_of, log, timed, write_files

ROOT = Path(__file__).resolve().parents[2]
ACCESS_KEY, SECRET_KEY = "needle", "needle-secret"
S3_SERVER_VERSION = "0.14.1"  # the Makefile's S3_SERVER_VERSION
METHODS = ("needle", "duckdb-cold", "duckdb-warm")
TARGET_SPEEDUP = 20.0
TARGET_INDEX_ROUND_TRIPS = 3
DATAFUSION_NEW_QUERIES = 1  # of DataFusion's queries per kind, those also run in a new context
# Needle's per-lookup report on stderr.
REQUESTS = re.compile(
    r"index (\d+) requests in (\d+) round trips \((\d+) bytes\), files (\d+) requests in (\d+) round trips"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root: Path) -> tuple[subprocess.Popen, int]:
    cache = Path(os.environ.get("NEEDLE_CACHE", Path.home() / ".cache/needle"))
    binary = Path(os.environ.get("NEEDLE_S3_SERVER", cache / f"s3s-fs-{S3_SERVER_VERSION}/bin/s3s-fs"))
    if not binary.exists():
        sys.exit(f"the S3-compatible server is not at {binary}: install it with `make s3-server`")
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [str(binary), "--host", "127.0.0.1", "--port", str(port)]
        + ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                sys.exit(f"s3s-fs did not listen on port {port}")
            time.sleep(0.05)


def httpfs_extension() -> str:
    """The httpfs extension of this DuckDB version, from the ``duckdb-ext-httpfs`` package."""
    for p in map(Path, sys.path):
        found = sorted(p.glob(f"duckdb_ext/extensions/v{duckdb.__version__}/*/httpfs.duckdb_extension"))
        if found:
            return str(found[0])
    sys.exit(f"no httpfs extension for DuckDB {duckdb.__version__}: pip install -r bench/data-lake/requirements.txt")


def duckdb_on(port: int, threads: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "threads": threads})
    con.sql(f"LOAD '{httpfs_extension()}'")
    con.sql(
        f"CREATE SECRET s3 (TYPE s3, KEY_ID '{ACCESS_KEY}', SECRET '{SECRET_KEY}', REGION 'us-east-1', "
        f"ENDPOINT '127.0.0.1:{port}', URL_STYLE 'path', USE_SSL false)"
    )
    return con


def needle_env(port: int) -> dict[str, str]:
    return dict(
        os.environ,
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION="us-east-1",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ALLOW_HTTP="true",
    )


def needle_lookup(
    binary: Path, port: int, table: str, key: int, index: str | None = None
) -> tuple[int, dict[str, int]]:
    """The rows ``needle lookup`` found for ``key`` in ``table`` (through the index ``index``, or
    the table's own), and the requests it reported."""
    cmd = [str(binary), "lookup", table, "--value", str(key)] + (["--index", index] if index else [])
    out = subprocess.run(cmd, env=needle_env(port), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"needle lookup {table} {key} failed: {out.stderr.strip()}")
    m = REQUESTS.search(out.stderr)
    if not m:
        raise RuntimeError(f"needle lookup printed no request counts: {out.stderr.strip()}")
    counts = dict(
        zip(
            ("index_requests", "index_round_trips", "index_bytes", "file_requests", "file_round_trips"),
            map(int, m.groups()),
            strict=True,
        )
    )
    return len(out.stdout.splitlines()), counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="500,5000", help="table sizes, in files (comma-separated)")
    ap.add_argument("--rows", type=int, default=20000, help="rows per file")
    ap.add_argument("--queries", type=int, default=5, help="queries per kind (present, absent) and size")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="latency added to every request")
    ap.add_argument("--duckdb-threads", type=int, default=32, help="DuckDB's threads (its requests in flight)")
    ap.add_argument("--bloom-fpr", type=float, default=0.001, help="false-positive rate of the files' Bloom filters")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("NEEDLE_BENCH_DATA", "/tmp/needle-bench-data")))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/data-lake-object-store")
    ap.add_argument("--keep", action="store_true", help="keep the server's files")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--datafusion-queries", type=int, default=5, help="DataFusion's queries per kind (0: none)")
    ap.add_argument("--summary", type=Path, default=ROOT / "bench/results/data-lake/summary.json")
    args = ap.parse_args()
    sizes = [int(s) for s in args.files.split(",")]
    binary = ROOT / "rust/target/release/needle"
    if not binary.exists():
        sys.exit(f"{binary} is missing: cargo build --release -p needle-cli (in rust/)")
    root = args.data / "s3-root"
    server, server_port = start_server(root)
    proxy = LatencyProxy(server_port, args.delay_ms)
    rng = random.Random(args.seed)
    rows_out: list[dict] = []
    builds: dict[int, dict] = {}
    try:
        direct = duckdb_on(server_port, 4)
        (root / "bench").mkdir(exist_ok=True)
        for n in sizes:
            table = f"s3://bench/t{n}"
            written = len(list((root / "bench" / f"t{n}").glob("*.parquet")))
            if written != n:
                log(f"writing {n} files of {args.rows} rows to {table}")
                shutil.rmtree(root / "bench" / f"t{n}", ignore_errors=True)
                write_files(direct, table, n, args.rows, args.bloom_fpr)
            log(f"indexing {table}")
            ms, out = timed(
                lambda table=table: subprocess.run(
                    [str(binary), "index-parquet", table, "--column", "key"],
                    env=needle_env(server_port),
                    capture_output=True,
                    text=True,
                )
            )
            if out.returncode != 0:
                sys.exit(f"indexing {table} failed: {out.stderr}")
            published = re.search(r"published (\d+) segments \((\d+) bytes\)", out.stdout)
            builds[n] = {"ms": round(ms), "index_bytes": int(published.group(2)) if published else None}

            warm = duckdb_on(proxy.port, args.duckdb_threads)
            warm.sql("SET enable_http_metadata_cache = true; SET parquet_metadata_cache = true")
            query = f"SELECT count(*) FROM read_parquet('{table}/*.parquet') WHERE key = $1"
            warm.execute(query, [key_of(0)]).fetchone()  # the first query reads and keeps the footers

            def run(
                method: str, key: int, table: str = table, warm: duckdb.DuckDBPyConnection = warm, query: str = query
            ):
                before = proxy.snapshot()
                extra: dict[str, int] = {}
                if method == "needle":
                    ms, (found, extra) = timed(lambda: needle_lookup(binary, proxy.port, table, key))
                elif method == "duckdb-cold":

                    def cold():
                        con = duckdb_on(proxy.port, args.duckdb_threads)
                        try:
                            return con.execute(query, [key]).fetchone()[0]
                        finally:
                            con.close()

                    ms, found = timed(cold)
                else:
                    ms, found = timed(lambda: warm.execute(query, [key]).fetchone()[0])
                after = proxy.snapshot()
                return ms, found, after.requests - before.requests, after.bytes_down - before.bytes_down, extra

            total = n * args.rows
            for q in range(args.queries):
                for kind, key in (
                    ("present", key_of(rng.randrange(total))),
                    ("absent", key_of(total + rng.randrange(10**9))),
                ):
                    answers = {}
                    for method in rng.sample(METHODS, len(METHODS)):
                        ms, found, requests, bytes_down, extra = run(method, key)
                        answers[method] = found
                        rows_out.append(
                            {"files": n, "kind": kind, "query": q, "method": method, "ms": round(ms, 2), "rows": found}
                            | {"requests": requests, "bytes_down": bytes_down}
                            | extra
                        )
                    if len(set(answers.values())) != 1 or answers["needle"] != (kind == "present"):
                        sys.exit(f"answers differ for key {key} ({kind}) at {n} files: {answers}")
                log(f"  {n} files: query {q + 1} of {args.queries}")
            warm.close()
            if args.datafusion_queries:
                run_datafusion(args, table, n, proxy.port)
    finally:
        proxy.close()
        server.kill()
        server.wait()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "queries.csv", "w", newline="") as f:
        fields = sorted(
            {k for r in rows_out for k in r}, key=lambda k: list(rows_out[0]).index(k) if k in rows_out[0] else 99
        )
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows_out)
    summary = summarize(rows_out, builds, sizes, args)
    if args.datafusion_queries:
        largest = max(sizes)
        raw = datafusion_raw(args, largest)
        rows = [json.loads(line) for line in raw.read_text().splitlines()]
        run = argparse.Namespace(
            files=largest, rows=args.rows, queries=args.datafusion_queries, new_queries=DATAFUSION_NEW_QUERIES
        )
        storage = f"S3 API (s3s-fs), {args.delay_ms:g} ms added per request"
        df = summarize_datafusion(rows, run, "datafusion-object-store", storage)
        df["config"]["target_partitions"] = args.duckdb_threads
        summary["datafusion"] = df
        summary["targets"] |= {t["target"] + " (DataFusion on S3)": t for t in df["targets"]}
        merge_into(args.summary, df, "datafusion-object-store")
    else:
        carry_datafusion_over(args.out / "summary.json", summary)
    merge_needle_into(args.summary, summary)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(f"wrote {args.out}/summary.json")


def carry_datafusion_over(path: Path, summary: dict) -> None:
    """Keeps the DataFusion results of the last run that had them (``--datafusion-queries 0``
    does not run DataFusion again), marked as such."""
    if not path.exists():
        return
    before = json.loads(path.read_text())
    if "datafusion" not in before:
        return
    summary["datafusion"] = before["datafusion"] | {"from_an_earlier_run": True}
    summary["targets"] |= {k: v for k, v in before["targets"].items() if k.endswith("(DataFusion on S3)")}


def merge_needle_into(path: Path, summary: dict) -> None:
    """Puts Needle's targets against DuckDB on the object store into the data-lake benchmark's
    summary, beside the local ones, as the benchmark "object-store"."""
    largest = max(summary["config"]["files"])
    delay = summary["config"]["delay_ms_per_request"]
    targets = []
    for kind in ("present", "absent"):
        value = summary["medians"][f"{largest}/{kind}"]["speedup_over_best_duckdb"]
        what = f"{kind} values on S3, {delay:g} ms a request"
        targets.append(
            {
                "target": f"{what}: best of DuckDB / Needle median >= {TARGET_SPEEDUP:g}",
                "benchmark": "object-store",
                "files": largest,
                "kind": kind,
                "value": value,
                "met": value >= TARGET_SPEEDUP,
            }
        )
    trips = next(v for k, v in summary["targets"].items() if "round trips to the index" in k)
    targets.append(
        {
            "target": f"at most {TARGET_INDEX_ROUND_TRIPS} round trips to the index per lookup on S3 (every lookup)",
            "benchmark": "object-store",
            "files": summary["config"]["files"],
            "value": trips["measured"],
            "met": trips["met"],
        }
    )
    merge_section(path, "object-store", {k: summary[k] for k in ("config", "medians")}, targets)


def datafusion_raw(args, files: int) -> Path:
    """Where the DataFusion lookups of the table of ``files`` files are written."""
    return args.out / f"datafusion-{files}.jsonl"


def run_datafusion(args, table: str, files: int, port: int) -> None:
    """DataFusion alone and with Needle on ``table``, through the proxy on ``port``."""
    log(f"DataFusion on {table}")
    args.out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "cargo", "bench", "-q", "-p", "needle-datafusion", "--bench", "point_lookups", "--",
            "--table", table, "--rows", str(args.rows), "--files", str(files),
            "--queries", str(args.datafusion_queries), "--new-queries", str(DATAFUSION_NEW_QUERIES),
            "--partitions", str(args.duckdb_threads), "--out", str(datafusion_raw(args, files)),
        ],
        cwd=ROOT / "rust",
        env=needle_env(port),
        check=True,
    )  # fmt: skip


def summarize(rows_out: list[dict], builds: dict, sizes: list[int], args) -> dict:
    medians: dict[str, dict] = {}
    for n in sizes:
        for kind in ("present", "absent"):
            cell = {}
            for method in METHODS:
                rs = [r for r in rows_out if r["files"] == n and r["kind"] == kind and r["method"] == method]
                cell[method] = {
                    "ms": round(statistics.median(r["ms"] for r in rs), 2),
                    "requests": statistics.median(r["requests"] for r in rs),
                    "bytes_down": statistics.median(r["bytes_down"] for r in rs),
                }
            best_duckdb = min(cell["duckdb-cold"]["ms"], cell["duckdb-warm"]["ms"])
            cell["speedup_over_best_duckdb"] = round(best_duckdb / cell["needle"]["ms"], 2)
            medians[f"{n}/{kind}"] = cell
    needle_rows = [r for r in rows_out if r["method"] == "needle"]
    largest = max(sizes)
    speedups = {kind: medians[f"{largest}/{kind}"]["speedup_over_best_duckdb"] for kind in ("present", "absent")}
    max_rt = max(r["index_round_trips"] for r in needle_rows)
    return {
        "experiment": "point lookups in Parquet files on object storage (S3 API, s3s-fs), Needle against DuckDB",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "duckdb": duckdb.__version__},
        "config": {
            "files": sizes,
            "rows_per_file": args.rows,
            "queries_per_kind": args.queries,
            "delay_ms_per_request": args.delay_ms,
            "duckdb_threads": args.duckdb_threads,
            "bloom_fpr": args.bloom_fpr,
        },
        "builds": builds,
        "medians": medians,
        "targets": {
            f"needle at least {TARGET_SPEEDUP:g}x faster than DuckDB's best at {largest} files (median)": {
                "measured": speedups,
                "met": all(s >= TARGET_SPEEDUP for s in speedups.values()),
            },
            f"at most {TARGET_INDEX_ROUND_TRIPS} round trips to the index per lookup (every lookup)": {
                "measured": max_rt,
                "met": max_rt <= TARGET_INDEX_ROUND_TRIPS,
            },
        },
    }


if __name__ == "__main__":
    main()
