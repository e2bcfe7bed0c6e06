"""Point lookups in a Delta table on object storage: the 5,000 files that ``object_store.py
--keep`` left on the benchmark's server, made a Delta table (hard links to the same files, one
commit that adds them all, their sizes as the log records them), indexed with ``needle
index-delta s3://...``, then looked up with ``needle lookup s3://...`` through the same 20 ms
proxy as the folder of the same files, the same keys, alternating. A Delta lookup also reads the
table's log (a listing of ``_delta_log/`` and its commit): the difference is what the log costs.

    bench/data-lake/delta_object_store.py --queries 10

Writes ``bench/results/data-lake-object-store/delta.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from latency_proxy import LatencyProxy
from object_store import ROOT, needle_env, needle_lookup, start_server
from tables import key_of, log, timed


def make_delta_table(folder: Path, table: Path) -> int:
    """Links every Parquet file of ``folder`` into ``table`` and writes version 0 of its log;
    returns the number of files."""
    files = sorted(folder.glob("*.parquet"))
    if not files:
        sys.exit(f"no Parquet files in {folder}: run object_store.py --keep first")
    (table / "_delta_log").mkdir(parents=True, exist_ok=True)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "key", "type": "long", "nullable": True, "metadata": {}},
            {"name": "payload", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-000000005000",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 0,
            }
        },
    ]
    for f in files:
        linked = table / f.name
        if not linked.exists():
            os.link(f, linked)
        size = f.stat().st_size
        actions.append(
            {"add": {"path": f.name, "partitionValues": {}, "size": size, "modificationTime": 0, "dataChange": True}}
        )
    commit = table / "_delta_log" / f"{0:020}.json"
    commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return len(files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10, help="keys per kind (present, absent)")
    ap.add_argument("--files", type=int, default=5000, help="the kept table's files")
    ap.add_argument("--rows", type=int, default=20000, help="its rows per file")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="latency added to every request")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("NEEDLE_BENCH_DATA", "/tmp/needle-bench-data")))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/data-lake-object-store/delta.json")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    binary = ROOT / "rust/target/release/needle"
    root = args.data / "s3-root"
    folder, delta = f"s3://bench/t{args.files}", f"s3://bench/d{args.files}"
    n = make_delta_table(root / "bench" / f"t{args.files}", root / "bench" / f"d{args.files}")
    server, port = start_server(root)
    proxy = LatencyProxy(port, args.delay_ms)
    try:
        log(f"indexing {delta} ({n} files)")
        ms, out = timed(
            lambda: subprocess.run(
                [str(binary), "index-delta", delta, "--column", "key"],
                env=needle_env(port), capture_output=True, text=True, check=True,
            )
        )  # fmt: skip
        log(out.stdout.strip())
        build_ms = round(ms)
        rng = random.Random(args.seed)
        total = args.files * args.rows
        rows: list[dict] = []
        for q in range(args.queries):
            keys = (("present", key_of(rng.randrange(total))), ("absent", key_of(total + rng.randrange(10**9))))
            for kind, key in keys:
                answers = {}
                order = [("folder", folder), ("delta", delta)]
                for name, table in order if q % 2 == 0 else order[::-1]:
                    ms, (found, counts) = timed(
                        lambda table=table, key=key: needle_lookup(binary, proxy.port, table, key)
                    )
                    answers[name] = found
                    row = {"kind": kind, "query": q, "table": name, "ms": round(ms, 2)}
                    rows.append(row | counts | {"rows": found})
                if answers["folder"] != answers["delta"] or (answers["delta"] > 0) != (kind == "present"):
                    sys.exit(f"answers differ for key {key} ({kind}): {answers}")
            log(f"query {q + 1} of {args.queries}")
    finally:
        proxy.close()
        server.kill()
        server.wait()
    medians = {}
    for kind in ("present", "absent"):
        for name in ("folder", "delta"):
            rs = [r for r in rows if r["kind"] == kind and r["table"] == name]
            medians[f"{kind}/{name}"] = {
                "ms": round(statistics.median(r["ms"] for r in rs), 2),
                "table_round_trips": statistics.median(r["file_round_trips"] for r in rs),
                "table_requests": statistics.median(r["file_requests"] for r in rs),
            }
    summary = {
        "experiment": "point lookups in a Delta table on object storage against the folder of the same files",
        "config": {"files": args.files, "rows_per_file": args.rows, "queries_per_kind": args.queries}
        | {"delay_ms_per_request": args.delay_ms, "log": "one commit adding every file, no checkpoint"},
        "build_ms": build_ms,
        "medians": medians,
        "queries": rows,
    }
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
