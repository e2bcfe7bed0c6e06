"""Indexing real Parquet files (written by pyarrow) and looking rows up, against full scans."""

import datetime as dt
import decimal
import os
import random

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import needle

CODECS = ["snappy", "zstd", "gzip", "lz4", "brotli", "none"]


def write_files(directory, column_type, make_value, *, files=6, rows=400, row_group_size=100, seed=1):
    """Files of ``rows`` rows each; ``make_value(rnd)`` gives the key column's values (None: null)."""
    rnd = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        keys = [make_value(rnd) for _ in range(rows)]
        table = pa.table(
            {"key": pa.array(keys, type=column_type), "payload": pa.array([f"file{f}-row{r}" for r in range(rows)])}
        )
        pq.write_table(
            table,
            directory / f"part-{f:03}.parquet",
            compression=CODECS[f % len(CODECS)],
            row_group_size=row_group_size,
            use_dictionary=f % 2 == 0,
        )


def files_holding(directory, value):
    """Ground truth: the files whose key column holds ``value``, by a full scan in DuckDB."""
    rows = duckdb.sql(
        f"SELECT DISTINCT filename FROM read_parquet('{directory}/*.parquet', filename = true) WHERE key = $v",
        params={"v": value},
    ).fetchall()
    return {os.path.basename(r[0]) for r in rows}


def full_scan(directory, value):
    t = pa.concat_tables(pq.read_table(p) for p in sorted(directory.glob("*.parquet")))
    return t.filter(pc.equal(t["key"], pa.scalar(value, type=t.schema.field("key").type)))


def sort_rows(table):
    return sorted(zip(*(table[c].to_pylist() for c in table.column_names), strict=True), key=repr)


def unicode_text(rnd):
    return rnd.choice(["", "é", "ß", "日本", "🧵", "a"]) + str(rnd.randrange(3000))


TYPES = {
    "int64": (pa.int64(), lambda r: r.randrange(-(2**40), 2**40) if r.random() > 0.05 else None),
    "int32": (pa.int32(), lambda r: r.randrange(-5000, 5000)),
    "string": (pa.string(), lambda r: unicode_text(r) if r.random() > 0.05 else None),
    "binary": (pa.binary(), lambda r: bytes([r.randrange(256) for _ in range(r.randrange(0, 4))])),
    "date": (pa.date32(), lambda r: dt.date(2020, 1, 1) + dt.timedelta(days=r.randrange(2000))),
    "timestamp": (
        pa.timestamp("us"),
        lambda r: dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=r.randrange(10**12)),
    ),
    "timestamp_ns": (
        pa.timestamp("ns"),
        lambda r: dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=r.randrange(10**12)),
    ),
    "time": (pa.time64("us"), lambda r: dt.time(r.randrange(24), r.randrange(60), r.randrange(60), r.randrange(10**6))),
    "uint64": (pa.uint64(), lambda r: r.randrange(2**64 - 5000, 2**64) if r.random() > 0.5 else r.randrange(5000)),
    "timestamp_ms": (
        pa.timestamp("ms"),
        lambda r: dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=r.randrange(10**9)),
    ),
}


@pytest.mark.parametrize("row_groups", [False, True])
@pytest.mark.parametrize("kind", sorted(TYPES))
def test_no_false_negative_and_lookup_equals_a_full_scan(tmp_path, kind, row_groups):
    column_type, make = TYPES[kind]
    lake = tmp_path / "lake"
    write_files(lake, column_type, make)
    report = needle.index_parquet(lake, "key", row_groups=row_groups)
    assert report["added"] == (6 * 4 if row_groups else 6)
    every = pa.concat_tables(pq.read_table(p) for p in sorted(lake.glob("*.parquet")))["key"].to_pylist()
    present = [v for v in dict.fromkeys(every) if v is not None]
    rnd = random.Random(3)
    for value in rnd.sample(present, 25):
        found = {c.path.name for c in needle.candidate_files(lake, value)}
        assert files_holding(lake, value) <= found, value
        assert sort_rows(needle.lookup(lake, value)) == sort_rows(full_scan(lake, value))
    # A value no file holds: an empty table with the files' columns.
    absent = make(random.Random(999))
    while absent in present or absent is None:
        absent = make(rnd)
    empty = needle.lookup(lake, absent)
    assert empty.num_rows == 0 and empty.column_names == ["key", "payload"]


def test_duckdb_over_the_candidates_equals_duckdb_over_every_file(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.string(), unicode_text, files=8)
    needle.index_parquet(lake, "key")
    con = duckdb.connect()
    values = ["", "日本7", "a12", "é3", "not there"]
    for v in values:
        mine = sorted(needle.duckdb_lookup(con, lake, v, select="key, payload").fetchall())
        theirs = sorted(
            con.sql(
                f"SELECT key, payload FROM read_parquet('{lake}/*.parquet') WHERE key = $v", params={"v": v}
            ).fetchall()
        )
        assert mine == theirs, v
    assert needle.duckdb_lookup(con, lake, "not there").fetchall() == []


def test_files_added_and_removed_are_followed(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100_000), files=4)
    assert needle.index_parquet(lake, "key")["added"] == 4
    # A new file with a value no other file holds, and one file deleted.
    pq.write_table(pa.table({"key": pa.array([10**9], pa.int64()), "payload": ["new"]}), lake / "new.parquet")
    (lake / "part-000.parquet").unlink()
    progress = []
    report = needle.index_parquet(lake, "key", progress=lambda done, total, f: progress.append((done, total, f)))
    assert report == {"added": 1, "removed": 1, "unchanged": 3, "values": 1}
    assert progress[-1][:2] == (4, 4)
    assert [c.path.name for c in needle.candidate_files(lake, 10**9)] == ["new.parquet"]
    assert all(
        c.path.name != "part-000.parquet" for v in range(0, 100_000, 997) for c in needle.candidate_files(lake, v)
    )


def test_a_held_table_answers_as_the_one_shot_functions_and_sees_the_index_as_of_its_refresh(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.timestamp("us"), TYPES["timestamp"][1], files=5)
    needle.index_parquet(lake, "key")
    con = duckdb.connect()
    every = pa.concat_tables(pq.read_table(p) for p in sorted(lake.glob("*.parquet")))["key"].to_pylist()
    values = random.Random(5).sample(every, 15) + [dt.datetime(1999, 1, 1)]
    with needle.ParquetTable(lake) as table:
        assert table.column == "key"
        for v in values:
            assert table.candidate_files(v) == needle.candidate_files(lake, v)
            assert sort_rows(table.lookup(v)) == sort_rows(needle.lookup(lake, v)) == sort_rows(full_scan(lake, v))
            held, once = table.duckdb_lookup(con, v), needle.duckdb_lookup(con, lake, v)
            assert sorted(held.fetchall()) == sorted(once.fetchall())
        # A file indexed after the table was opened: seen after refresh(), not before.
        late = dt.datetime(2030, 1, 1)
        late_rows = pa.table({"key": pa.array([late], pa.timestamp("us")), "payload": ["late"]})
        pq.write_table(late_rows, lake / "late.parquet")
        needle.index_parquet(lake, "key")
        assert table.candidate_files(late) == []
        table.refresh()
        assert [c.path.name for c in table.candidate_files(late)] == ["late.parquet"]
        assert table.lookup(late)["payload"].to_pylist() == ["late"]
    with pytest.raises(ValueError, match="closed"):
        table.lookup(late)


def test_lookups_answer_while_a_writer_holds_the_index(tmp_path):
    # Readers take snapshots without a lock: a lookup during an indexing run answers.
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100_000), files=3)
    needle.index_parquet(lake, "key")
    value = pq.read_table(lake / "part-001.parquet")["key"][7].as_py()
    with needle.PartitionIndex.open(lake / ".needle-index"):
        assert "part-001.parquet" in {c.path.name for c in needle.candidate_files(lake, value)}
        assert sort_rows(needle.lookup(lake, value)) == sort_rows(full_scan(lake, value))
        with needle.ParquetTable(lake) as table:
            assert sort_rows(table.lookup(value)) == sort_rows(full_scan(lake, value))


def test_an_empty_answer_has_the_columns_even_when_the_indexed_files_are_gone(tmp_path):
    # The columns of an empty answer come from a file the index knows; when that file was
    # deleted after indexing (the index lags), from any file of the directory.
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100_000), files=3)
    needle.index_parquet(lake, "key")
    con = duckdb.connect()
    for gone in ["part-000.parquet", "part-001.parquet"]:
        (lake / gone).unlink()
        rel = needle.duckdb_lookup(con, lake, 10**9)
        assert [d[0] for d in rel.description] == ["key", "payload"] and rel.fetchall() == []
        assert needle.lookup(lake, 10**9).column_names == ["key", "payload"]
    (lake / "part-002.parquet").unlink()
    with pytest.raises(needle.NeedleError, match="holds no Parquet files"):
        needle.duckdb_lookup(con, lake, 10**9)


def test_the_value_type_must_match_the_column(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100), files=1)
    needle.index_parquet(lake, "key")
    with pytest.raises(TypeError, match="int values"):
        needle.candidate_files(lake, "12")


def test_bad_input_gets_an_error_that_names_the_file(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100), files=2)
    with pytest.raises(needle.NeedleError, match=r"part-000\.parquet has no column \"nope\" \(columns: key, payload\)"):
        needle.index_parquet(lake, "nope")
    (lake / "part-001.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    with pytest.raises(needle.NeedleError, match=r"part-001\.parquet"):
        needle.index_parquet(lake, "key")
    assert not (lake / ".needle-index").exists(), "nothing is written when a file is bad"
    with pytest.raises(needle.NeedleError, match="not a Parquet index"):
        needle.candidate_files(lake, 1)


def test_decimal_columns_are_refused(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.table({"key": pa.array([decimal.Decimal("1.5")], pa.decimal128(5, 2))}), lake / "d.parquet")
    with pytest.raises(needle.NeedleError, match="decimal columns are not supported"):
        needle.index_parquet(lake, "key")


def test_a_progress_callback_that_raises_stops_nothing_silently(tmp_path):
    lake = tmp_path / "lake"
    write_files(lake, pa.int64(), lambda r: r.randrange(100), files=2)

    def boom(done, total, file):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        needle.index_parquet(lake, "key", progress=boom)


def rows_as_tuples(table, columns):
    return sorted(zip(*(table[c].to_pylist() for c in columns), strict=True), key=repr)


def test_strings_and_binary_of_every_arrow_type_are_read(tmp_path):
    """pyarrow reads back the Arrow type a writer stored (string_view, large_string, dictionary):
    lookups read each of them and answer with one string and one binary type, as DuckDB unifies
    them (VARCHAR, BLOB)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    kinds = {
        "view": (pa.string_view(), pa.binary_view()),
        "large": (pa.large_string(), pa.large_binary()),
        "plain": (pa.string(), pa.binary()),
        "dict": (pa.dictionary(pa.int32(), pa.string()), pa.dictionary(pa.int32(), pa.binary())),
    }
    for i, (name, (s_type, b_type)) in enumerate(kinds.items()):
        keys = [1, *range(10 * i + 10, 10 * i + 20)]
        table = pa.table(
            {
                "k": pa.array(keys, pa.int64()),
                "s": pa.array([f"s{k}" for k in keys]).cast(s_type),
                "b": pa.array([f"b{k}".encode() for k in keys]).cast(b_type),
                "tags": pa.array([[f"t{k}"] for k in keys], pa.list_(s_type if name != "dict" else pa.string())),
            }
        )
        pq.write_table(table, lake / f"{name}.parquet", row_group_size=4)
        assert pq.read_schema(lake / f"{name}.parquet").field("s").type == s_type
    columns = ["k", "s", "b", "tags"]
    con = duckdb.connect()

    def duckdb_rows(where, value):
        t = con.sql(
            f"SELECT k, s, b, tags FROM read_parquet('{lake}/*.parquet') WHERE {where} = $v", params={"v": value}
        )
        return sorted(t.fetchall(), key=repr)

    for column, value, row_groups in [("k", 1, False), ("s", "s1", True), ("b", b"b1", False), ("s", "s35", False)]:
        index = tmp_path / f"ix-{column}-{row_groups}"
        needle.index_parquet(lake, column, index=index, row_groups=row_groups)
        found = needle.lookup(lake, value, index=index)
        assert found.schema.field("s").type == pa.string() and found.schema.field("b").type == pa.binary()
        assert found.schema.field("tags").type == pa.list_(pa.string())
        assert rows_as_tuples(found, columns) == duckdb_rows(column, value), (column, value)
        assert found.num_rows == (4 if value != "s35" else 1)
        held = needle.duckdb_lookup(con, lake, value, index=index, select="k, s, b, tags")
        assert sorted(held.fetchall(), key=repr) == duckdb_rows(column, value)
        absent = {"k": 10**9, "s": "nothing", "b": b"nothing"}[column]
        empty = needle.lookup(lake, absent, index=index)
        assert empty.num_rows == 0 and empty.schema.field("s").type == pa.string()


def test_a_timestamp_is_one_instant_whatever_the_files_unit(tmp_path):
    """One instant stored in files of different units, with and without a time zone, and dates:
    lookups find it in every file that holds it, as DuckDB compares them (a date is its
    midnight; the time zone is UTC)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    instant = dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
    midnight = dt.datetime(2024, 1, 2)
    in_ms = dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    utc = dt.UTC
    files = {
        "micros": (pa.timestamp("us"), [instant, midnight, instant + dt.timedelta(microseconds=1)]),
        "nanos": (pa.timestamp("ns"), [midnight, instant, dt.datetime(2030, 1, 1)]),
        "millis-utc": (pa.timestamp("ms", tz="UTC"), [in_ms.replace(tzinfo=utc), midnight.replace(tzinfo=utc)]),
        "seconds": (pa.timestamp("s"), [instant.replace(microsecond=0), midnight]),
        "date": (pa.date32(), [midnight.date(), dt.date(2024, 1, 3)]),
        "date64": (pa.date64(), [dt.date(2024, 1, 3), midnight.date()]),
    }
    for name, (type_, values) in files.items():
        pq.write_table(
            pa.table({"ts": pa.array(values, type_), "f": [name] * len(values), "n": list(range(len(values)))}),
            lake / f"{name}.parquet",
        )
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")

    def oracle(value):
        """(file, n) of the rows DuckDB finds, file by file (it cannot read them all as one)."""
        found = set()
        for name in files:
            path = lake / f"{name}.parquet"
            rows = con.sql(f"SELECT n FROM read_parquet('{path}') WHERE ts = $v", params={"v": value}).fetchall()
            found |= {(name, n) for (n,) in rows}
        return found

    needle.index_parquet(lake, "ts")
    epoch = dt.datetime(1970, 1, 1)
    for value in [instant, midnight, in_ms, dt.datetime(2024, 1, 3), dt.datetime(2030, 1, 1), dt.datetime(1999, 1, 1)]:
        want = oracle(value)
        assert want or value.year == 1999
        as_int = (value - epoch) // dt.timedelta(microseconds=1)  # the files' units differ: microseconds
        aware = value.replace(tzinfo=dt.timezone(dt.timedelta(hours=2))) + dt.timedelta(hours=2)
        for given in [value, as_int, aware] + ([value.date()] if value == midnight else []):
            got = needle.lookup(lake, given)
            assert set(zip(got["f"].to_pylist(), got["n"].to_pylist(), strict=True)) == want, (value, given)
            assert {c.path.stem for c in needle.candidate_files(lake, given)} >= {f for f, _ in want}
    # DuckDB over the candidates, where DuckDB reads the files as one (no time zone, no dates).
    same = tmp_path / "same"
    same.mkdir()
    for name in ["micros", "nanos"]:
        (same / f"{name}.parquet").write_bytes((lake / f"{name}.parquet").read_bytes())
    needle.index_parquet(same, "ts")
    for value in [instant, midnight]:
        everything = con.sql(f"SELECT f, n FROM read_parquet('{same}/*.parquet') WHERE ts = $v", params={"v": value})
        assert sorted(needle.duckdb_lookup(con, same, value, select="f, n").fetchall()) == sorted(everything.fetchall())
