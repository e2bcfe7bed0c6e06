"""Needle's partition index for Parquet files.

The index answers, for a value of one column, which files (or row groups) may hold it, in two
reads, and never misses one that does. On top of it, :func:`lookup` returns the matching rows as
a ``pyarrow.Table`` and :func:`duckdb_lookup` runs the point query in DuckDB over the candidate
files alone.

Example::

    import needle
    needle.index_parquet("lake/events", "user_id")          # builds lake/events/.needle-index
    needle.candidate_files("lake/events", 42)               # [Candidate(path=..., row_group=None)]
    needle.lookup("lake/events", 42)                        # pyarrow.Table of the rows
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle._native import (
    NeedleError,
    PartitionIndex,
    default_index_dir,
    parquet_index_info,
    split_partition_id,
)
from needle._native import index_parquet as _index_parquet

if TYPE_CHECKING:
    import duckdb
    import pyarrow

__all__ = [
    "Candidate",
    "NeedleError",
    "PartitionIndex",
    "candidate_files",
    "duckdb_lookup",
    "index_parquet",
    "lookup",
]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Candidate:
    """A file that may hold the value; ``row_group`` is set for an index of row groups."""

    path: Path
    row_group: int | None


def index_parquet(
    directory: PathLike,
    column: str,
    *,
    row_groups: bool = False,
    index: PathLike | None = None,
    buckets: int | None = None,
    fingerprint_bits: int = 16,
    progress: Callable[[int, int, str], Any] | None = None,
) -> dict[str, int]:
    """Indexes every Parquet file under ``directory`` on ``column``.

    Run it again after files were added or deleted: new files are indexed, files already
    indexed are left alone, and the partitions of files that are gone are removed. The index
    lives in ``directory/.needle-index`` unless ``index`` names another directory.

    Args:
        directory: the directory of Parquet files (searched recursively, hidden folders skipped).
        column: the top-level column to index (integers, strings or binary).
        row_groups: one partition per row group instead of one per file.
        index: where the index lives.
        buckets: buckets of a new index (default: sized from the median file).
        fingerprint_bits: 8, 16 or 32 bits per fingerprint of a new index.
        progress: called as ``progress(done, total, file)`` after each file.

    Returns:
        ``{"added", "removed", "unchanged", "values"}``.

    Raises:
        NeedleError: a file cannot be read, lacks the column, or holds values of a type the
            index does not take; the message names the file.
    """
    return _index_parquet(
        os.fspath(directory),
        column,
        row_groups=row_groups,
        index=None if index is None else os.fspath(index),
        buckets=buckets,
        fingerprint_bits=fingerprint_bits,
        progress=progress,
    )


def _index_of(directory: PathLike, index: PathLike | None) -> Path:
    return Path(index) if index is not None else Path(default_index_dir(os.fspath(directory)))


def _parquet_files(directory: Path) -> list[Path]:
    """The Parquet files the index covers: under ``directory``, hidden folders skipped."""
    return sorted(
        p
        for p in directory.rglob("*.parquet")
        if not any(part.startswith(".") for part in p.relative_to(directory).parts[:-1])
    )


def _schema_field(directory: Path, column: str) -> pyarrow.Field | None:
    import pyarrow.parquet as pq

    files = _parquet_files(directory)
    if not files:
        return None
    schema = pq.read_schema(files[0])
    return schema.field(column) if column in schema.names else None


def _index_value(value: Any, kind: str, field: pyarrow.Field | None) -> int | str | bytes:
    """The value as the index hashed the column: dates, times and timestamps by their integer
    in the column's own unit, as Parquet stores them."""
    if isinstance(value, (_dt.date, _dt.time, _dt.timedelta)) and field is not None:
        import pyarrow as pa

        storage = pa.int32() if pa.types.is_date32(field.type) or pa.types.is_time32(field.type) else pa.int64()
        return pa.scalar(value, type=field.type).cast(storage).as_py()
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "binary" and isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"the index holds {kind} values; {value!r} is a {type(value).__name__}")


def candidate_files(directory: PathLike, value: Any, *, index: PathLike | None = None) -> list[Candidate]:
    """The files (or row groups) of ``directory`` that may hold ``value`` in the indexed column.

    Never misses one that holds it; a few that do not may be returned (the filters' false
    positives). ``value`` is an ``int``, ``str`` or ``bytes`` as the column is, or a
    ``datetime.date``/``datetime``/``time`` for temporal columns.
    """
    directory = Path(directory)
    index_dir = _index_of(directory, index)
    info = parquet_index_info(os.fspath(index_dir))
    field = _schema_field(directory, info["column"]) if isinstance(value, (_dt.date, _dt.time)) else None
    v = _index_value(value, info["type"], field)
    with PartitionIndex.open(os.fspath(index_dir), read_only=True) as ix:
        ids = ix.candidates(v)
    out = []
    for pid in ids:
        rel, rg = split_partition_id(pid)
        out.append(Candidate(directory / rel, rg))
    return sorted(out, key=lambda c: (str(c.path), -1 if c.row_group is None else c.row_group))


def lookup(
    directory: PathLike,
    value: Any,
    *,
    index: PathLike | None = None,
    columns: Sequence[str] | None = None,
) -> pyarrow.Table:
    """The rows of ``directory`` whose indexed column equals ``value``, read from the candidate
    files (or row groups) alone, as one ``pyarrow.Table`` (empty, with the files' schema, when
    there are none)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    directory = Path(directory)
    column = parquet_index_info(os.fspath(_index_of(directory, index)))["column"]
    by_file: dict[Path, list[int] | None] = {}
    for c in candidate_files(directory, value, index=index):
        if c.row_group is None:
            by_file[c.path] = None
        elif by_file.get(c.path, []) is not None:
            by_file.setdefault(c.path, []).append(c.row_group)
    read_columns = None if columns is None else list(dict.fromkeys([*columns, column]))
    tables = []
    for path, groups in by_file.items():
        f = pq.ParquetFile(path)
        t = f.read(columns=read_columns) if groups is None else f.read_row_groups(groups, columns=read_columns)
        target = pa.scalar(value, type=t.schema.field(column).type)
        tables.append(t.filter(pc.equal(t[column], target)))
    if not tables:
        files = _parquet_files(directory)
        tables = [pq.read_schema(files[0]).empty_table() if files else pa.table({})]
    result = pa.concat_tables(tables, promote_options="default")
    return result if columns is None else result.select(list(columns))


def _sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _sql_identifier(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def duckdb_lookup(
    connection: duckdb.DuckDBPyConnection,
    directory: PathLike,
    value: Any,
    *,
    index: PathLike | None = None,
    select: str = "*",
) -> duckdb.DuckDBPyRelation:
    """The point query ``SELECT <select> WHERE <column> = value`` run by DuckDB over the
    candidate files alone (DuckDB prunes row groups within them by their statistics)."""
    directory = Path(directory)
    column = parquet_index_info(os.fspath(_index_of(directory, index)))["column"]
    files = sorted({str(c.path) for c in candidate_files(directory, value, index=index)})
    where = f"{_sql_identifier(column)} = $value"
    if not files:
        # No candidate: an empty answer with the table's columns.
        files = [str(p) for p in _parquet_files(directory)[:1]]
        where = "false AND " + where
        if not files:
            raise NeedleError(f"{directory} holds no Parquet files")
    file_list = "[" + ", ".join(_sql_string(f) for f in files) + "]"
    query = f"SELECT {select} FROM read_parquet({file_list}, union_by_name = true) WHERE {where}"
    return connection.sql(query, params={"value": value})
