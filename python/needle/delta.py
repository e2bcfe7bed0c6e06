"""Delta Lake tables: the index follows the table's versions, and a lookup at any version never
misses a file live in it, however far the index lags behind.

The transaction log is read by the Delta kernel (``delta_kernel``, built into the native module),
as in the ``needle`` command; no Delta package is needed. The index lives in
``TABLE/.needle-index`` (Delta readers and ``VACUUM`` leave hidden folders alone) with the
version it covers; its partitions are the table's data files, by their path in the log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle import _native
from needle._common import Candidate, Key, PathLike, concat, index_value, is_temporal, matching_rows, sort_candidates
from needle._native import DeltaSnapshot, NeedleError, parquet_index_info, split_partition_id
from needle.parquet import index_dir_of

if TYPE_CHECKING:
    import pyarrow


def _local(table: PathLike) -> Path:
    uri = os.fspath(table)
    if "://" in uri and not uri.startswith("file://"):
        raise NeedleError(f"{uri}: only tables on a local file system are supported")
    return Path(uri.removeprefix("file://"))


def _open(table: PathLike, version: int | None) -> DeltaSnapshot:
    return DeltaSnapshot.load(os.fspath(_local(table)), version)


def index_delta(
    table: PathLike,
    column: str,
    *,
    index: PathLike | None = None,
    row_groups: bool = False,
    buckets: int | None = None,
    fingerprint_bits: int = 16,
    progress: Callable[[int, int, str], Any] | None = None,
) -> dict[str, int]:
    """Brings the index of a Delta table up to its latest version on ``column``: files added by
    the commits since the version it covers are indexed, files they removed are dropped, and the
    new version is recorded. A first run indexes every live file.

    Returns ``{"version", "added", "removed", "unchanged", "values"}``.

    Raises:
        NeedleError: the table cannot be read, uses what this version does not read (column
            mapping), ``column`` is a partition column, or a file cannot be indexed (the message
            names it).
    """
    root = _local(table)
    return _native.index_delta(
        os.fspath(root),
        column,
        row_groups=row_groups,
        index=None if index is None else os.fspath(index),
        buckets=buckets,
        fingerprint_bits=fingerprint_bits,
        progress=progress,
    )


def indexed_version(table: PathLike, *, index: PathLike | None = None) -> int | None:
    """The table version the index covers, or None if it was never brought up to one."""
    return _native.delta_indexed_version(os.fspath(index_dir_of(_local(table), index)))


def _candidates(snap: DeltaSnapshot, value: Any, index: PathLike | None) -> tuple[list[Candidate], str, Key, list[str]]:
    root = Path(snap.root)
    index_dir = index_dir_of(root, index)
    info = parquet_index_info(os.fspath(index_dir))
    # Raises if the column is not there at this version (schema evolution added it later).
    snap.check_column(info["column"])
    field = _arrow_schema(snap).field(info["column"]) if is_temporal(value) else None
    key = index_value(value, info["type"], info["unit"], field)
    ids = snap.candidates(os.fspath(index_dir), key.native)
    found = []
    for pid in ids:
        rel, rg = split_partition_id(pid)
        found.append(Candidate(root / rel, rg))
    return sort_candidates(found), info["column"], key, ids


def delta_candidate_files(
    table: PathLike, value: Any, *, version: int | None = None, index: PathLike | None = None
) -> list[Candidate]:
    """The data files of the table at ``version`` (default: the latest) that may hold ``value``:
    the index's candidates among the files live at that version, plus every live file the index
    does not cover. Never misses a file that holds the value, whatever the index's lag."""
    return _candidates(_open(table, version), value, index)[0]


def delta_lookup(
    table: PathLike,
    value: Any,
    *,
    version: int | None = None,
    index: PathLike | None = None,
    columns: Sequence[str] | None = None,
) -> pyarrow.Table:
    """The rows of the table at ``version`` (default: the latest) whose indexed column equals
    ``value``, read from the candidate files alone, partition columns included, without the rows
    that deletion vectors hide, as one ``pyarrow.Table`` typed as the table's schema says.

    Raises:
        NeedleError: the index or the table cannot be read, the column does not exist at that
            version (schema evolution added it later), or a data file of that version was
            removed (by VACUUM).
    """
    snap = _open(table, version)
    candidates, column, key, ids = _candidates(snap, value, index)
    # Raises if VACUUM removed a file this version reads.
    snap.check_files(ids)
    schema = _arrow_schema(snap)
    root = Path(snap.root)
    live = snap.files

    def partition_values(path: Path) -> dict[str, pyarrow.Scalar]:
        return {
            name: _partition_scalar(raw, schema.field(name).type)
            for name, raw in live[os.fspath(path.relative_to(root))].items()
        }

    with_vectors = set(snap.files_with_deletion_vectors)

    def deleted(path: Path) -> list[int]:
        rel = os.fspath(path.relative_to(root))
        return snap.deleted_rows(rel) if rel in with_vectors else []

    try:
        parts = matching_rows(candidates, column, key, columns, partition_values, deleted)
    except FileNotFoundError:
        snap.check_files(ids)  # removed while it was read
        raise
    return concat(parts, None if parts else schema, columns, declared=schema)


def _partition_scalar(raw: Any, type_: pyarrow.DataType) -> pyarrow.Scalar:
    """A partition value as the column's type (the log may give it as text)."""
    import pyarrow as pa

    try:
        return pa.scalar(raw, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.scalar(str(raw)).cast(type_)


def _arrow_schema(snap: DeltaSnapshot) -> pyarrow.Schema:
    """The table's schema as Arrow types, as the Delta kernel maps them."""
    import pyarrow as pa

    return pa.ipc.open_stream(snap.arrow_schema_ipc()).schema
