"""The data-lake benchmarks' table: files of high-cardinality BIGINT keys spread like hashes."""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import duckdb

# Keys are i * A mod P for row number i: distinct (P is prime, A < P) and spread like hashes,
# so min/max statistics prune nothing, as with ids, hashes and UUIDs. Rows i >= total are absent.
A = 11400714819323198485 % 9223372036854775783
P = 9223372036854775783


def key_of(i: int) -> int:
    return i * A % P


def log(msg: str) -> None:
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def write_files(
    con: duckdb.DuckDBPyConnection, out: Path | str, files: int, rows: int, bloom_fpr: float | None
) -> None:
    """``files`` files of ``rows`` rows; with ``bloom_fpr``, with a Bloom filter on every column chunk of ``key``.

    ``out`` is a directory, or a URL DuckDB writes to (``s3://bucket/prefix``); existing local files are kept.
    """
    local = isinstance(out, Path)
    if local:
        out.mkdir(parents=True, exist_ok=True)
    options = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1000000"
    if bloom_fpr is not None:
        # DuckDB writes Bloom filters for dictionary-encoded columns: force the dictionary (a
        # limit far above the file's size makes DuckDB slow to write).
        options += f", DICTIONARY_SIZE_LIMIT {rows * 64}, BLOOM_FILTER_FALSE_POSITIVE_RATIO {bloom_fpr}"
    else:
        options += ", DICTIONARY_SIZE_LIMIT 1"  # no dictionary, so no Bloom filter
    for f in range(files):
        path = out / f"part-{f:05}.parquet" if local else f"{out}/part-{f:05}.parquet"
        if local and path.exists():
            continue
        lo = f * rows
        con.sql(
            f"COPY (SELECT ((range::HUGEINT * {A}) % {P})::BIGINT AS key, "
            f"'event-' || range || '-' || md5(range::VARCHAR) AS payload "
            f"FROM range({lo}, {lo + rows})) TO '{path}' ({options})"
        )
        if (f + 1) % 250 == 0:
            log(f"  {out}: {f + 1} of {files} files")


def timed(fn):
    """(milliseconds, result) of calling ``fn``."""
    t = time.perf_counter()
    result = fn()
    return (time.perf_counter() - t) * 1000.0, result
