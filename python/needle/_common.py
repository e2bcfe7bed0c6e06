"""What the Parquet-directory and the Delta Lake front ends share: candidates, values, row reads."""

from __future__ import annotations

import bisect
import datetime as _dt
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle._native import NeedleError, instant_key

if TYPE_CHECKING:
    import pyarrow

PathLike = str | os.PathLike[str]

_NANOS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "day": 86_400_000_000_000}
_DAY = _NANOS["day"]
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


@dataclass(frozen=True)
class Candidate:
    """A file that may hold the value; ``row_group`` is set for an index of row groups."""

    path: Path
    row_group: int | None


@dataclass(frozen=True)
class Key:
    """A looked-up value: ``native`` is what the index hashes; rows are compared with ``value``
    (an int, str or bytes) or, for dates, times and timestamps, with the instant (nanoseconds
    since 1970-01-01T00:00:00Z) or time of day (nanoseconds since midnight) in ``nanos``."""

    kind: str
    value: Any
    nanos: int | None
    native: int | str | bytes


def is_temporal(value: Any) -> bool:
    """Dates, times and durations: hashed by the integer their column stores."""
    return isinstance(value, (_dt.date, _dt.time, _dt.timedelta))


def _unit_name(type_: pyarrow.DataType) -> str:
    return {"s": "s", "ms": "ms", "us": "us", "ns": "ns"}[type_.unit]


def _instant_nanos(value: Any, unit: str) -> int:
    """An instant as nanoseconds since the epoch: a ``datetime`` (without a zone: UTC), a
    ``date`` (its midnight), a pyarrow timestamp or date scalar, or an int in ``unit``."""
    import pyarrow as pa

    if isinstance(value, pa.Scalar) and (pa.types.is_timestamp(value.type) or pa.types.is_date(value.type)):
        if not value.is_valid:
            raise TypeError("a null is not a value to look up")
        if pa.types.is_timestamp(value.type):
            return int(value.cast(pa.int64()).as_py()) * _NANOS[_unit_name(value.type)]
        value = value.as_py()
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
        nanos = (aware - _EPOCH) // _dt.timedelta(microseconds=1) * 1000
        return nanos + getattr(value, "nanosecond", 0)  # pandas.Timestamp
    if isinstance(value, _dt.date):
        return (value - _EPOCH.date()).days * _DAY
    if isinstance(value, int) and not isinstance(value, bool):
        return value * _NANOS[unit]
    raise TypeError(f"the index holds timestamp values; {value!r} is a {type(value).__name__}")


def _time_nanos(value: Any, unit: str) -> int:
    """A time of day as nanoseconds since midnight: a ``time`` or an int in ``unit``."""
    if isinstance(value, _dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return micros * 1000
    if isinstance(value, int) and not isinstance(value, bool):
        return value * _NANOS[unit]
    raise TypeError(f"the index holds time values; {value!r} is a {type(value).__name__}")


def index_value(value: Any, kind: str, unit: str | None, field: pyarrow.Field | None = None) -> Key:
    """The value as the index hashed the column. Dates and timestamps of every unit are one
    instant (a date is its midnight, a ``datetime`` without a zone is UTC); an int given for them
    is in ``unit``, the one the index reports. ``field`` (the column in a file) turns durations
    into their integers."""
    if kind == "timestamp":
        nanos = _instant_nanos(value, unit or "us")
        return Key(kind, value, nanos, instant_key(nanos))
    if kind == "time":
        nanos = _time_nanos(value, unit or "us")
        return Key(kind, value, nanos, nanos)
    if is_temporal(value) and field is not None:
        import pyarrow as pa

        narrow = pa.types.is_date32(field.type) or pa.types.is_time32(field.type)
        value = pa.scalar(value, type=field.type).cast(pa.int32() if narrow else pa.int64()).as_py()
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return Key(kind, value, None, value)
    if kind == "string" and isinstance(value, str):
        return Key(kind, value, None, value)
    if kind == "binary" and isinstance(value, (bytes, bytearray)):
        return Key(kind, bytes(value), None, bytes(value))
    raise TypeError(f"the index holds {kind} values; {value!r} is a {type(value).__name__}")


def sort_candidates(candidates: Iterable[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (str(c.path), -1 if c.row_group is None else c.row_group))


def plain_type(type_: pyarrow.DataType) -> pyarrow.DataType:
    """The type a lookup answers with for a column a file stores as ``type_``: one string type
    for string, string_view and large_string, one binary type likewise, dictionaries as their
    values, one list type, the same within nested types (as DuckDB reads them all as VARCHAR,
    BLOB, LIST)."""
    import pyarrow as pa

    t = pa.types
    if t.is_string_view(type_) or t.is_large_string(type_):
        return pa.string()
    if t.is_binary_view(type_) or t.is_large_binary(type_):
        return pa.binary()
    if t.is_dictionary(type_):
        return plain_type(type_.value_type)
    if t.is_list(type_) or t.is_large_list(type_) or t.is_list_view(type_) or t.is_large_list_view(type_):
        return pa.list_(type_.value_field.with_type(plain_type(type_.value_type)))
    if t.is_fixed_size_list(type_):
        return pa.list_(type_.value_field.with_type(plain_type(type_.value_type)), type_.list_size)
    if t.is_map(type_):
        return pa.map_(
            type_.key_field.with_type(plain_type(type_.key_type)),
            type_.item_field.with_type(plain_type(type_.item_type)),
            type_.keys_sorted,
        )
    if t.is_struct(type_):
        return pa.struct([f.with_type(plain_type(f.type)) for f in type_])
    return type_


def plain_schema(schema: pyarrow.Schema) -> pyarrow.Schema:
    import pyarrow as pa

    return pa.schema([f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata)


def _plain_table(t: pyarrow.Table) -> pyarrow.Table:
    """``t`` with every column of its plain type (see :func:`plain_type`)."""
    schema = plain_schema(t.schema)
    return t if schema.equals(t.schema) else t.cast(schema)


def _scalar_in(key: Key, type_: pyarrow.DataType) -> pyarrow.Scalar | None:
    """The looked-up value as a scalar of a file's column type, or None if no value of that
    type equals it (an instant finer than the file's unit, an integer out of its range)."""
    import pyarrow as pa

    t = pa.types
    try:
        if key.kind not in ("timestamp", "time"):
            return pa.scalar(key.value, type=type_)
        nanos = key.nanos
        if nanos is None:
            return None  # a temporal key is an instant or a time of day: without one, nothing equals it
        if key.kind == "timestamp":
            if t.is_timestamp(type_):
                step = _NANOS[_unit_name(type_)]
            elif t.is_date(type_):
                step = _DAY
            else:
                return None
            if nanos % step:
                return None
            # date64 counts the milliseconds of a midnight
            return pa.scalar(nanos // (1_000_000 if t.is_date64(type_) else step), type=type_)
        if not (t.is_time32(type_) or t.is_time64(type_)):
            return None
        step = _NANOS[_unit_name(type_)]
        return None if nanos % step else pa.scalar(nanos // step, type=type_)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return None


def matching_rows(
    candidates: Iterable[Candidate],
    column: str,
    key: Key,
    columns: Sequence[str] | None,
    constants: Callable[[Path], dict[str, pyarrow.Scalar]] | None = None,
    deleted: Callable[[Path], Sequence[int]] | None = None,
) -> list[pyarrow.Table]:
    """The rows of each candidate file (only its candidate row groups, if any) whose ``column``
    equals ``key``, one table per file, of plain types (:func:`plain_type`); ``constants(path)``
    adds columns a file does not store (a Delta table's partition values), and the rows at the
    positions ``deleted(path)`` gives (a Delta table's deletion vector) are left out. A file
    without ``column`` (written before schema evolution added it) holds no such row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    by_file: dict[Path, list[int] | None] = {}
    for c in candidates:
        if c.row_group is None:
            by_file[c.path] = None
        elif (groups := by_file.setdefault(c.path, [])) is not None:
            groups.append(c.row_group)
    tables = []
    for path, groups in by_file.items():
        f = pq.ParquetFile(path)
        if column not in f.schema_arrow.names:
            continue
        scalar = _scalar_in(key, plain_type(f.schema_arrow.field(column).type))
        if scalar is None:
            continue
        stored = [n for n in (columns or []) if n in f.schema_arrow.names]
        read = None if columns is None else list(dict.fromkeys([*stored, column]))
        t = f.read(columns=read) if groups is None else f.read_row_groups(groups, columns=read)
        t = _plain_table(t)
        matching = pc.equal(t[column], scalar)
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


def _common_type(name: str, types: list[pyarrow.DataType]) -> pyarrow.DataType:
    """One type for a column the parts hold as ``types``: timestamps of the finest unit (with
    the zone of those that have one; dates as their midnight), times likewise, else what
    pyarrow's permissive promotion gives (wider integers, ...)."""
    import pyarrow as pa

    t = pa.types
    distinct = list(dict.fromkeys(types))
    if len(distinct) == 1:
        return distinct[0]
    finest = ["ns", "us", "ms", "s"]
    if all(t.is_timestamp(x) or t.is_date(x) for x in distinct):
        stamps = [x for x in distinct if t.is_timestamp(x)]
        if not stamps:
            return pa.date32()
        unit = min((_unit_name(x) for x in stamps), key=finest.index)
        return pa.timestamp(unit, next((x.tz for x in stamps if x.tz is not None), None))
    if all(t.is_time32(x) or t.is_time64(x) for x in distinct):
        unit = min((_unit_name(x) for x in distinct), key=finest.index)
        return pa.time64(unit) if unit in ("us", "ns") else pa.time32(unit)
    try:
        schemas = [pa.schema([(name, x)]) for x in distinct]
        return pa.unify_schemas(schemas, promote_options="permissive").field(name).type
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        kinds = ", ".join(str(x) for x in distinct)
        raise NeedleError(
            f"column {name!r} is {kinds} in different files, which do not combine into one table ({e}); "
            "leave it out with columns=[...]"
        ) from None


def concat(
    tables: list[pyarrow.Table],
    empty: pyarrow.Schema | None,
    columns: Sequence[str] | None,
    declared: pyarrow.Schema | None = None,
) -> pyarrow.Table:
    """One table of the parts (or an empty one with the given schema), with ``columns`` in order.
    A column the parts hold as different types is one type: ``declared``'s (a table's schema) if
    it has the column, else the parts' common type (:func:`_common_type`)."""
    import pyarrow as pa

    if not tables:
        tables = [plain_schema(empty).empty_table() if empty is not None else pa.table({})]
    types: dict[str, list[pyarrow.DataType]] = {}
    for part in tables:
        for field in part.schema:
            types.setdefault(field.name, []).append(field.type)
    target = {}
    for name, found in types.items():
        if declared is not None and name in declared.names:
            target[name] = declared.field(name).type
        else:
            target[name] = _common_type(name, found)
    unified = []
    for part in tables:
        schema = pa.schema([f.with_type(target[f.name]) for f in part.schema], metadata=part.schema.metadata)
        try:
            unified.append(part if schema.equals(part.schema) else part.cast(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise NeedleError(f"the rows found do not combine into one table: {e}") from None
    result = pa.concat_tables(unified, promote_options="default")
    return result if columns is None else result.select(list(columns))
