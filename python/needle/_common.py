"""What the Parquet-directory and the Delta Lake front ends share: candidates, values, row reads."""

from __future__ import annotations

import bisect
import datetime as _dt
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Candidate:
    """A file that may hold the value; ``row_group`` is set for an index of row groups."""

    path: Path
    row_group: int | None


def is_temporal(value: Any) -> bool:
    """Dates, times and durations: hashed by the integer their column stores."""
    return isinstance(value, (_dt.date, _dt.time, _dt.timedelta))


def index_value(value: Any, kind: str, field: pyarrow.Field | None) -> int | str | bytes:
    """The value as the index hashed the column: dates, times and timestamps by their integer
    in the column's own unit, as Parquet stores them."""
    if is_temporal(value) and field is not None:
        import pyarrow as pa

        narrow = pa.types.is_date32(field.type) or pa.types.is_time32(field.type)
        return pa.scalar(value, type=field.type).cast(pa.int32() if narrow else pa.int64()).as_py()
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "binary" and isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"the index holds {kind} values; {value!r} is a {type(value).__name__}")


def sort_candidates(candidates: Iterable[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (str(c.path), -1 if c.row_group is None else c.row_group))


def matching_rows(
    candidates: Iterable[Candidate],
    column: str,
    value: Any,
    columns: Sequence[str] | None,
    constants: Callable[[Path], dict[str, pyarrow.Scalar]] | None = None,
    deleted: Callable[[Path], Sequence[int]] | None = None,
) -> list[pyarrow.Table]:
    """The rows of each candidate file (only its candidate row groups, if any) whose ``column``
    equals ``value``, one table per file; ``constants(path)`` adds columns a file does not store
    (a Delta table's partition values), and the rows at the positions ``deleted(path)`` gives (a
    Delta table's deletion vector) are left out."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    by_file: dict[Path, list[int] | None] = {}
    for c in candidates:
        if c.row_group is None:
            by_file[c.path] = None
        elif by_file.get(c.path, []) is not None:
            by_file.setdefault(c.path, []).append(c.row_group)
    tables = []
    for path, groups in by_file.items():
        f = pq.ParquetFile(path)
        stored = [n for n in (columns or []) if n in f.schema_arrow.names]
        read = None if columns is None else list(dict.fromkeys([*stored, column]))
        t = f.read(columns=read) if groups is None else f.read_row_groups(groups, columns=read)
        matching = pc.equal(t[column], pa.scalar(value, type=t.schema.field(column).type))
        hidden = deleted(path) if deleted else ()
        if hidden:
            # Only the matching rows' positions are looked up in the vector (a file has millions).
            hidden_set = set(hidden)
            position = _position_of(f, groups)
            rows = pc.indices_nonzero(matching).to_pylist()
            t = t.take(pa.array([i for i in rows if position(i) not in hidden_set], pa.uint64()))
        else:
            t = t.filter(matching)
        for name, scalar in (constants(path) if constants else {}).items():
            t = t.append_column(pa.field(name, scalar.type), pa.array([scalar.as_py()] * t.num_rows, scalar.type))
        tables.append(t)
    return tables


def _position_of(f: Any, groups: list[int] | None) -> Callable[[int], int]:
    """Maps the index of a row read from ``f`` (all of it, or ``groups`` in order) to its
    position in the file, as deletion vectors count rows."""
    md = f.metadata
    starts = [0]
    for g in range(md.num_row_groups):
        starts.append(starts[-1] + md.row_group(g).num_rows)
    if groups is None:
        return lambda i: i
    read_starts = [0]  # where each read group begins among the rows read
    for g in groups:
        read_starts.append(read_starts[-1] + starts[g + 1] - starts[g])

    def position(i: int) -> int:
        k = bisect.bisect_right(read_starts, i) - 1
        return starts[groups[k]] + i - read_starts[k]

    return position


def concat(tables: list[pyarrow.Table], empty: pyarrow.Schema | None, columns: Sequence[str] | None) -> pyarrow.Table:
    """One table of the parts (or an empty one with the given schema), with ``columns`` in order."""
    import pyarrow as pa

    if not tables:
        tables = [empty.empty_table() if empty is not None else pa.table({})]
    result = pa.concat_tables(tables, promote_options="default")
    return result if columns is None else result.select(list(columns))
