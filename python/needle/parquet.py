"""A directory of Parquet files: index it, find the candidate files of a value, read the rows."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle._common import (
    Candidate,
    Key,
    PathLike,
    concat,
    index_value,
    is_temporal,
    matching_rows,
    plain_schema,
    sort_candidates,
)
from needle._native import NeedleError, PartitionIndex, default_index_dir, parquet_index_info, split_partition_id
from needle._native import index_parquet as _index_parquet

if TYPE_CHECKING:
    import duckdb
    import pyarrow


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
        column: the top-level column to index (integers, strings or binary; dates, times and
            timestamps as the instant or time of day they mean, whatever each file's unit).
        row_groups: one partition per row group instead of one per file.
        index: where the index lives.
        buckets: buckets of a new index (default: sized from the median file).
        fingerprint_bits: 8, 16 or 32 bits per fingerprint of a new index.
        progress: called as ``progress(done, total, file)`` after each file; an exception it
            raises is raised again once the run has finished (the index is then complete).

    Returns:
        ``{"added", "removed", "unchanged", "values"}``.

    Raises:
        NeedleError: a file cannot be read, lacks the column, or holds values of a type the
            index does not take; the message names the file, and nothing is written.
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


def index_dir_of(directory: PathLike, index: PathLike | None) -> Path:
    """The index directory: ``index`` if given, else ``directory/.needle-index``."""
    return Path(index) if index is not None else Path(default_index_dir(os.fspath(directory)))


def first_parquet_file(directory: Path) -> Path | None:
    """The first Parquet file of ``directory`` in name order (hidden folders skipped), found
    without listing every file: an answer with no candidate only needs one file's columns."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return None
    for e in entries:
        if e.name.endswith(".parquet") and e.is_file():
            return Path(e.path)
    for e in entries:
        if not e.name.startswith(".") and e.is_dir():
            found = first_parquet_file(Path(e.path))
            if found is not None:
                return found
    return None


def _schema(file: Path | None) -> pyarrow.Schema | None:
    import pyarrow.parquet as pq

    return plain_schema(pq.read_schema(file)) if file is not None else None


class ParquetTable:
    """A directory of Parquet files with its index held open, for many lookups.

    The module's functions open the index for each call; an application that looks up values
    one after the other keeps one ``ParquetTable`` instead, as it keeps its DuckDB connection,
    and pays for reading the index's metadata once. It holds a snapshot of the index, without a
    lock (an ``index_parquet`` run in another process is not blocked), and sees the index as of
    its opening or its last :meth:`refresh`.

    Example::

        with needle.ParquetTable("lake/events") as events:
            for user in users:
                rows = events.duckdb_lookup(con, user).fetchall()
    """

    def __init__(self, directory: PathLike, *, index: PathLike | None = None) -> None:
        self.directory = Path(directory)
        self._index_dir = os.fspath(index_dir_of(directory, index))
        self._ix: PartitionIndex | None = None
        self.refresh()

    def refresh(self) -> None:
        """Opens the index again, to see what was written to it since."""
        info = parquet_index_info(self._index_dir)
        ix = PartitionIndex.snapshot(self._index_dir)
        self.close()
        self._ix = ix
        #: The indexed column.
        self.column: str = info["column"]
        self._kind: str = info["type"]
        self._unit: str | None = info["unit"]
        self._field: pyarrow.Field | None = None

    def close(self) -> None:
        """Releases the index; later lookups raise ``ValueError``."""
        if self._ix is not None:
            self._ix.close()
            self._ix = None

    def __enter__(self) -> ParquetTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParquetTable({os.fspath(self.directory)!r}, column={self.column!r})"

    def _index(self) -> PartitionIndex:
        if self._ix is None:
            raise ValueError(f"the ParquetTable of {self.directory} is closed")
        return self._ix

    def _found(self, value: Any) -> tuple[list[Candidate], Path | None, Key]:
        """The candidates of ``value``, when there are none a file of the table to take the
        columns of the empty answer from, and the value as the index holds it."""
        ix = self._index()
        if is_temporal(value) and self._kind not in ("timestamp", "time") and self._field is None:
            # A duration: the integer of the column's unit.
            schema = _schema(first_parquet_file(self.directory))
            self._field = schema.field(self.column) if schema is not None and self.column in schema.names else None
        key = index_value(value, self._kind, self._unit, self._field)
        ids = ix.candidates(key.native)
        candidates = sort_candidates([Candidate(self.directory / rel, rg) for rel, rg in map(split_partition_id, ids)])
        if ids:
            return candidates, None, key
        # A file the index knows costs no listing of the directory (thousands of entries), nor
        # of the index's partitions.
        known = ix.any_partition()
        file = self.directory / split_partition_id(known)[0] if known is not None else None
        return candidates, file if file is not None and file.is_file() else first_parquet_file(self.directory), key

    def candidate_files(self, value: Any) -> list[Candidate]:
        """See :func:`candidate_files`."""
        return self._found(value)[0]

    def lookup(self, value: Any, *, columns: Sequence[str] | None = None) -> pyarrow.Table:
        """See :func:`lookup`."""
        candidates, table_file, key = self._found(value)
        parts = matching_rows(candidates, self.column, key, columns)
        return concat(parts, None if parts else _schema(table_file), columns)

    def duckdb_lookup(
        self, connection: duckdb.DuckDBPyConnection, value: Any, *, select: str = "*"
    ) -> duckdb.DuckDBPyRelation:
        """See :func:`duckdb_lookup`."""
        candidates, table_file, key = self._found(value)
        files = sorted({str(c.path) for c in candidates})
        where = f"{_sql_identifier(self.column)} = $value"
        if key.kind == "timestamp" and not isinstance(value, _dt.date):
            # An integer (in the index's unit) or a pyarrow scalar: the instant, to the nanosecond.
            where = f"{_sql_identifier(self.column)} = make_timestamp_ns($value::BIGINT)"
            value = key.nanos
        elif key.kind == "time" and key.nanos is not None and not isinstance(value, _dt.time):
            seconds, micros = divmod(key.nanos // 1000, 1_000_000)
            value = _dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micros)
        if not files:
            # No candidate: an empty answer with the table's columns.
            if table_file is None:
                raise NeedleError(f"{self.directory} holds no Parquet files")
            files = [str(table_file)]
            where = "false AND " + where
        file_list = "[" + ", ".join(_sql_string(f) for f in files) + "]"
        query = f"SELECT {select} FROM read_parquet({file_list}, union_by_name = true) WHERE {where}"
        return connection.sql(query, params={"value": value})


def candidate_files(directory: PathLike, value: Any, *, index: PathLike | None = None) -> list[Candidate]:
    """The files (or row groups) of ``directory`` that may hold ``value`` in the indexed column.

    Never misses one that holds it; a few that do not may be returned (the filters' false
    positives). ``value`` is an ``int``, ``str`` or ``bytes`` as the column is. For dates and
    timestamps it is a ``datetime`` (without a zone: UTC) or ``date`` (its midnight), one instant
    whatever unit each file stores, or an int in the unit the index reports (the files' own if
    they share one, else microseconds since the epoch); for times of day a ``time``.
    """
    with ParquetTable(directory, index=index) as table:
        return table.candidate_files(value)


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
    with ParquetTable(directory, index=index) as table:
        return table.lookup(value, columns=columns)


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
    with ParquetTable(directory, index=index) as table:
        return table.duckdb_lookup(connection, value, select=select)
