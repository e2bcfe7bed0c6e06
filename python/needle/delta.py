"""Delta Lake tables: the index follows the table's versions, and a lookup at any version never
misses a file live in it, however far the index lags behind.

The transaction log is read by the ``deltalake`` package (``pip install deltalake``). The index
lives in ``TABLE/.needle-index`` (Delta readers and ``VACUUM`` leave hidden folders alone) with
the version it covers; its partitions are the table's data files, by their path in the log.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle._common import Candidate, PathLike, concat, index_value, is_temporal, matching_rows, sort_candidates
from needle._native import NeedleError, PartitionIndex, parquet_index_info, split_partition_id
from needle._native import index_files as _index_files
from needle.parquet import index_dir_of

if TYPE_CHECKING:
    import deltalake
    import pyarrow

VERSION_FILE = "delta-version.txt"


def _open(table: PathLike, version: int | None) -> deltalake.DeltaTable:
    try:
        from deltalake import DeltaTable
    except ImportError as e:
        raise NeedleError("Delta Lake tables need the deltalake package: pip install deltalake") from e
    uri = os.fspath(table)
    if "://" in uri and not uri.startswith("file://"):
        raise NeedleError(f"{uri}: only tables on a local file system are supported")
    try:
        return DeltaTable(uri.removeprefix("file://"), version=version)
    except Exception as e:  # deltalake raises its own TableNotFoundError, DeltaError, ...
        raise NeedleError(f"cannot open the Delta table {uri} at version {version or 'latest'}: {e}") from e


def _check_supported(dt: deltalake.DeltaTable, column: str) -> None:
    features = set(dt.protocol().reader_features or [])
    config = dt.metadata().configuration or {}
    if "deletionVectors" in features:
        raise NeedleError(
            f"{dt.table_uri} uses deletion vectors, which this version does not read: rows a deletion"
            " vector hides would be returned"
        )
    if "columnMapping" in features or config.get("delta.columnMapping.mode", "none") != "none":
        raise NeedleError(f"{dt.table_uri} uses column mapping, which this version does not read")
    if column in dt.metadata().partition_columns:
        raise NeedleError(
            f"{column!r} is a partition column of {dt.table_uri}: Delta's own partition pruning finds its files"
        )


def _live_files(dt: deltalake.DeltaTable) -> dict[str, dict[str, Any]]:
    """The data files of the loaded version, by path relative to the table, with their partition values."""
    import pyarrow as pa

    actions = pa.table(dt.get_add_actions(flatten=True))
    prefix = "partition."
    parts = [n for n in actions.column_names if n.startswith(prefix)]
    out = {}
    for row in actions.select(["path", *parts]).to_pylist():
        rel = urllib.parse.unquote(row["path"])
        if "://" in rel or rel.startswith("/"):
            raise NeedleError(
                f"{dt.table_uri} holds a file outside its folder ({rel}), which this version does not read"
            )
        out[rel] = {n[len(prefix) :]: row[n] for n in parts}
    return out


def _root(dt: deltalake.DeltaTable) -> Path:
    return Path(dt.table_uri.removeprefix("file://"))


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
        NeedleError: the table cannot be read, uses features this version does not read
            (deletion vectors, column mapping), ``column`` is a partition column, or a file
            cannot be indexed (the message names it).
    """
    dt = _open(table, None)
    _check_supported(dt, column)
    version = dt.version()
    root = _root(dt)
    files = [os.fspath(root / rel) for rel in sorted(_live_files(dt))]
    index_dir = index_dir_of(root, index)
    report = _index_files(
        os.fspath(root),
        files,
        column,
        row_groups=row_groups,
        index=os.fspath(index_dir),
        buckets=buckets,
        fingerprint_bits=fingerprint_bits,
        progress=progress,
    )
    # Recorded after the index holds the version's files: a crash before this only repeats work.
    tmp = index_dir / (VERSION_FILE + ".tmp")
    tmp.write_text(f"{version}\n")
    os.replace(tmp, index_dir / VERSION_FILE)
    return {"version": version, **report}


def indexed_version(table: PathLike, *, index: PathLike | None = None) -> int | None:
    """The table version the index covers, or None if it was never brought up to one."""
    f = index_dir_of(Path(os.fspath(table).removeprefix("file://")), index) / VERSION_FILE
    try:
        return int(f.read_text().strip())
    except FileNotFoundError:
        return None


def _candidates(
    dt: deltalake.DeltaTable, value: Any, index: PathLike | None
) -> tuple[list[Candidate], dict[str, dict[str, Any]], str]:
    root = _root(dt)
    index_dir = index_dir_of(root, index)
    info = parquet_index_info(os.fspath(index_dir))
    _check_supported(dt, info["column"])
    field = None
    if is_temporal(value):
        import pyarrow as pa

        schema = pa.schema(dt.schema().to_arrow())
        field = schema.field(info["column"])
    v = index_value(value, info["type"], field)
    live = _live_files(dt)
    with PartitionIndex.open(os.fspath(index_dir), read_only=True) as ix:
        ids = ix.candidates(v)
        covered = {split_partition_id(p)[0] for p in ix.partitions()}
    found = []
    for pid in ids:
        rel, rg = split_partition_id(pid)
        if rel in live:
            found.append(Candidate(root / rel, rg))
    # Files of this version the index does not hold (written after its last run, or removed
    # from it since) may hold the value: they are candidates too.
    found += [Candidate(root / rel, None) for rel in live if rel not in covered]
    return sort_candidates(found), live, info["column"]


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
    ``value``, read from the candidate files alone, partition columns included, as one
    ``pyarrow.Table``."""
    import pyarrow as pa

    dt = _open(table, version)
    candidates, live, column = _candidates(dt, value, index)
    schema = pa.schema(dt.schema().to_arrow())
    root = _root(dt)

    def partition_values(path: Path) -> dict[str, pyarrow.Scalar]:
        return {
            name: _partition_scalar(raw, schema.field(name).type)
            for name, raw in live[os.fspath(path.relative_to(root))].items()
        }

    parts = matching_rows(candidates, column, value, columns, partition_values)
    return concat(parts, None if parts else schema, columns)


def _partition_scalar(raw: Any, type_: pyarrow.DataType) -> pyarrow.Scalar:
    """A partition value as the column's type (the log may give it as text)."""
    import pyarrow as pa

    try:
        return pa.scalar(raw, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.scalar(str(raw)).cast(type_)
