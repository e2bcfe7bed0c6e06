"""Delta Lake tables written by a real Delta writer (the deltalake package): the index follows
appends, deletes, overwrites, compaction and checkpoints, and a lookup at any version equals a
full read of that version by deltalake, also while the index lags behind. Needle reads the log
itself; deltalake writes the tables and is the oracle."""

import datetime
import decimal
import json
import random
import struct

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

import needle


def batch(rnd, n, lo=0, hi=3000):
    keys = [rnd.randrange(lo, hi) for _ in range(n)]
    return pa.table({"key": pa.array(keys, pa.int64()), "name": [f"n{k}-{rnd.randrange(10**6)}" for k in keys]})


def truth(table, version, value):
    t = DeltaTable(str(table), version=version).to_pyarrow_table()
    return t.filter(pc.equal(t["key"], value))


def rows(t):
    return sorted(zip(t["key"].to_pylist(), t["name"].to_pylist(), strict=True))


def check_versions(table, rnd, versions, values):
    for v in versions:
        for value in values:
            assert rows(needle.delta_lookup(table, value, version=v)) == rows(truth(table, v, value)), (v, value)
            holding = {
                f
                for f in DeltaTable(str(table), version=v).file_uris()
                if value in pq.read_table(f, columns=["key"])["key"].to_pylist()
            }
            found = {str(c.path) for c in needle.delta_candidate_files(table, value, version=v)}
            assert holding <= found, (v, value)


def test_the_index_follows_every_kind_of_commit(tmp_path):

    rnd = random.Random(5)
    table = tmp_path / "events"
    write_deltalake(str(table), batch(rnd, 500))
    first = needle.index_delta(table, "key")
    assert first["version"] == 0 and first["added"] == 1
    assert needle.indexed_version(table) == 0
    for _ in range(4):
        write_deltalake(str(table), batch(rnd, 300), mode="append")
    dt = DeltaTable(str(table))
    dt.delete("key < 200")  # rewrites the files that held such keys
    write_deltalake(str(table), batch(rnd, 200, 3000, 4000), mode="append")
    DeltaTable(str(table)).optimize.compact()
    DeltaTable(str(table)).create_checkpoint()
    latest = DeltaTable(str(table)).version()
    values = [10, 150, 999, 2500, 3500, 4999] + [rnd.randrange(4000) for _ in range(10)]
    # The index lags (it covers version 0): every version still answers exactly.
    check_versions(table, rnd, range(latest + 1), values)
    report = needle.index_delta(table, "key")
    assert report["version"] == latest and needle.indexed_version(table) == latest
    assert report["removed"] >= 1, "files removed by the commits leave the index"
    # Caught up: the latest version and the old ones (time travel) still answer exactly.
    check_versions(table, rnd, range(latest + 1), values)
    # After compaction the latest version is one file: an absent key finds no candidate.
    assert needle.delta_candidate_files(table, 10**9) == []


def test_lookups_answer_while_an_indexing_run_holds_the_index(tmp_path):
    # A lookup reads a snapshot of the index without a lock; the commit the index does not
    # cover yet is read whole.
    rnd = random.Random(6)
    table = tmp_path / "t"
    write_deltalake(str(table), batch(rnd, 300))
    needle.index_delta(table, "key")
    write_deltalake(str(table), batch(rnd, 100, 3000, 4000), mode="append")
    with needle.PartitionIndex.open(table / ".needle-index"):
        check_versions(table, rnd, [0, 1], [5, 1500, 3500, 10**6])


def test_an_overwrite_replaces_every_file(tmp_path):

    rnd = random.Random(8)
    table = tmp_path / "t"
    write_deltalake(str(table), batch(rnd, 200))
    write_deltalake(str(table), batch(rnd, 200), mode="append")
    needle.index_delta(table, "key")
    write_deltalake(str(table), batch(rnd, 100, 5000, 6000), mode="overwrite")
    report = needle.index_delta(table, "key")
    assert report["removed"] == 2 and report["added"] == 1
    check_versions(table, rnd, [0, 1, 2], [5, 100, 5500, 5999])


def test_partitioned_tables_return_their_partition_values(tmp_path):
    rnd = random.Random(9)
    table = tmp_path / "p"
    data = batch(rnd, 400).append_column("day", pa.array([f"2026-01-0{1 + i % 3}" for i in range(400)]))
    write_deltalake(str(table), data, partition_by=["day"])
    needle.index_delta(table, "key")
    for value in [data["key"][i].as_py() for i in range(0, 400, 37)]:
        got = needle.delta_lookup(table, value)
        t = DeltaTable(str(table)).to_pyarrow_table()
        want = t.filter(pc.equal(t["key"], value))
        key = ("key", "name", "day")
        assert sorted(zip(*(got[c].to_pylist() for c in key), strict=True)) == sorted(
            zip(*(want[c].to_pylist() for c in key), strict=True)
        )
    with pytest.raises(needle.NeedleError, match="partition column"):
        needle.index_delta(table, "day", index=tmp_path / "other")


def test_results_carry_the_tables_types(tmp_path):
    """Partition values come back as their columns' types, and an empty answer has the table's
    schema, as deltalake maps Delta's types to Arrow."""
    table = tmp_path / "typed"
    n = 60
    day = [datetime.date(2026, 1, 1 + i % 3) for i in range(n)]
    data = pa.table(
        {
            "key": pa.array(range(n), pa.int64()),
            "name": [f"é{i}" if i % 5 else "" for i in range(n)],
            "at": pa.array([datetime.datetime(2026, 1, 1, i % 24, tzinfo=datetime.UTC) for i in range(n)]),
            "price": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "ok": [i % 2 == 0 for i in range(n)],
            "tags": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
            "point": pa.array([{"x": i, "y": "y"} for i in range(n)]),
            "attrs": pa.array([[("a", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "day": pa.array(day),
            "shard": pa.array([i % 2 for i in range(n)], pa.int32()),
            "bucket": pa.array([decimal.Decimal(i % 2) / 2 for i in range(n)], pa.decimal128(4, 1)),
        }
    )
    write_deltalake(str(table), data, partition_by=["day", "shard", "bucket"])
    needle.index_delta(table, "key")
    declared = pa.schema(DeltaTable(str(table)).schema().to_arrow())
    empty = needle.delta_lookup(table, 10**6)
    assert empty.num_rows == 0
    assert empty.schema.equals(declared, check_metadata=False), (empty.schema, declared)
    everything = DeltaTable(str(table)).to_pyarrow_table()
    for value in (0, 7, 59):
        got = needle.delta_lookup(table, value)
        want = everything.filter(pc.equal(everything["key"], value))
        for column in ("day", "shard", "bucket", "at", "price"):
            assert got.schema.field(column).type == declared.field(column).type, column
            assert got[column].to_pylist() == want[column].to_pylist(), (value, column)


def test_errors_say_what_failed(tmp_path):
    with pytest.raises(needle.NeedleError, match="is not a Delta table"):
        needle.index_delta(tmp_path / "nothing", "key")
    with pytest.raises(needle.NeedleError, match="local file system"):
        needle.index_delta("s3://bucket/table", "key")
    table = tmp_path / "t"
    write_deltalake(str(table), batch(random.Random(1), 10))
    with pytest.raises(needle.NeedleError, match='no column "nope"'):
        needle.index_delta(table, "nope")
    assert needle.indexed_version(table) is None


def test_a_multi_part_checkpoint_replaces_the_cleaned_up_log(tmp_path):
    rnd = random.Random(11)
    table = tmp_path / "t"
    write_deltalake(str(table), batch(rnd, 300))
    for _ in range(3):
        write_deltalake(str(table), batch(rnd, 300), mode="append")
    DeltaTable(str(table)).delete("key < 500")
    DeltaTable(str(table)).create_checkpoint()
    write_deltalake(str(table), batch(rnd, 300), mode="append")
    latest = DeltaTable(str(table)).version()
    values = [rnd.randrange(3000) for _ in range(12)] + [100, 2999]
    want = {(v, x): rows(truth(table, v, x)) for v in (latest - 1, latest) for x in values}
    log = table / "_delta_log"
    # The checkpoint split in two parts, as writers do for large tables, and the commits before
    # it removed, as log retention does: the versions from the checkpoint on still read.
    single = log / f"{latest - 1:020}.checkpoint.parquet"
    actions = pq.read_table(single)
    half = actions.num_rows // 2
    pq.write_table(actions.slice(0, half), log / f"{latest - 1:020}.checkpoint.{1:010}.{2:010}.parquet")
    pq.write_table(actions.slice(half), log / f"{latest - 1:020}.checkpoint.{2:010}.{2:010}.parquet")
    single.unlink()
    (log / "_last_checkpoint").unlink(missing_ok=True)
    for v in range(latest - 1):
        (log / f"{v:020}.json").unlink()
    needle.index_delta(table, "key")
    for (v, x), expected in want.items():
        assert rows(needle.delta_lookup(table, x, version=v)) == expected, (v, x)
    with pytest.raises(needle.NeedleError, match="can no longer be read"):
        needle.delta_lookup(table, 1, version=latest - 2)


Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def inline_deletion_vector(positions):
    """The descriptor of a deletion vector stored in the log (storage type "i") that hides the
    rows at ``positions`` (an even number, fewer than 4,096, below 2**16): the portable
    serialization of a 64-bit Roaring bitmap after its magic number, Z85-encoded."""
    positions = sorted(set(positions))
    assert len(positions) % 2 == 0 and 0 < len(positions) < 4096 and positions[-1] < 2**16
    b = struct.pack("<IQIIIHHI", 1681511377, 1, 0, 12346, 1, 0, len(positions) - 1, 16)
    b += struct.pack(f"<{len(positions)}H", *positions)
    text = ""
    for i in range(0, len(b), 4):
        v = int.from_bytes(b[i : i + 4], "big")
        text += "".join(Z85[v // 85**k % 85] for k in range(4, -1, -1))
    return {"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": len(b), "cardinality": len(positions)}


def test_row_positions_count_across_row_groups(tmp_path):
    # A deletion vector counts rows from the file's start, whichever row groups were read.
    from needle._common import _position_of

    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": list(range(1000))}), path, row_group_size=128)
    f = pq.ParquetFile(path)
    for groups in (None, [0], [3, 5, 7], [7], [1, 2]):
        t = f.read() if groups is None else f.read_row_groups(groups)
        position = _position_of(f, groups)
        assert [position(i) for i in range(t.num_rows)] == t["k"].to_pylist(), groups


@pytest.mark.parametrize("row_groups", [False, True])
def test_rows_a_deletion_vector_hides_are_not_returned(tmp_path, row_groups):
    rnd = random.Random(2)
    table = tmp_path / "t"
    write_deltalake(str(table), batch(rnd, 600))
    write_deltalake(str(table), batch(rnd, 600), mode="append")
    needle.index_delta(table, "key", row_groups=row_groups)
    log = table / "_delta_log"
    adds = [
        a["add"]
        for v in (0, 1)
        for a in map(json.loads, (log / f"{v:020}.json").read_text().splitlines())
        if "add" in a
    ]
    first, second = (pq.read_table(table / a["path"]) for a in adds)
    hidden = sorted(rnd.sample(range(first.num_rows), 120))
    protocol = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
    }
    # Version 2 turns the feature on; version 3 deletes rows of the first file through a vector.
    (log / f"{2:020}.json").write_text(json.dumps(protocol) + "\n")
    remove = {"path": adds[0]["path"], "deletionTimestamp": 1, "dataChange": True}
    commit = [{"remove": remove}, {"add": {**adds[0], "deletionVector": inline_deletion_vector(hidden)}}]
    (log / f"{3:020}.json").write_text("".join(json.dumps(a) + "\n" for a in commit))
    keep = pc.invert(pc.is_in(pa.array(range(first.num_rows)), value_set=pa.array(hidden)))
    version2 = pa.concat_tables([first, second])
    version3 = pa.concat_tables([first.filter(keep), second])
    hidden_keys = sorted(set(first.take(hidden)["key"].to_pylist()))
    fewer = 0
    for value in hidden_keys + [rnd.randrange(0, 3000) for _ in range(30)]:

        def where(t, value=value):
            return rows(t.filter(pc.equal(t["key"], value)))

        assert rows(needle.delta_lookup(table, value)) == where(version3), value
        assert rows(needle.delta_lookup(table, value, version=2)) == where(version2), value
        fewer += len(where(version3)) < len(where(version2))
    assert fewer >= len(hidden_keys)


def test_files_with_string_views_and_large_strings_are_read(tmp_path):
    """deltalake writes the Arrow string type it is given (string_view, as delta-rs itself writes
    files that DELETE and UPDATE rewrite, or large_string): lookups read every file and answer
    with the table's types."""
    table = tmp_path / "t"
    for i, type_ in enumerate([pa.string_view(), pa.large_string(), pa.string()]):
        keys = [7, *range(100 * i + 10, 100 * i + 60)]
        data = pa.table({"key": pa.array(keys, pa.int64()), "name": pa.array([f"n{k}" for k in keys], type_)})
        write_deltalake(str(table), data, mode="append")
    assert {pq.read_schema(f).field("name").type for f in DeltaTable(str(table)).file_uris()} == {
        pa.string_view(),
        pa.large_string(),
        pa.string(),
    }
    for column, value in [("key", 7), ("name", "n7"), ("name", "n120")]:
        index = tmp_path / f"ix-{column}"
        needle.index_delta(table, column, index=index)
        got = needle.delta_lookup(table, value, index=index)
        everything = DeltaTable(str(table)).to_pyarrow_table()
        want = everything.filter(pc.equal(everything[column].cast(got.schema.field(column).type), value))
        assert rows(got) == rows(want) and got.num_rows == (3 if value in (7, "n7") else 1), (column, value)
        assert got.schema.field("name").type == pa.string()
        first = needle.delta_lookup(table, value, index=index, version=0, columns=["name"])
        assert first.column_names == ["name"] and first.num_rows == (1 if value != "n120" else 0)


def test_a_version_whose_files_were_vacuumed_raises_needle_error(tmp_path):
    rnd = random.Random(12)
    table = tmp_path / "t"
    write_deltalake(str(table), batch(rnd, 100))
    write_deltalake(str(table), batch(rnd, 100, 5000, 6000), mode="overwrite")
    needle.index_delta(table, "key")
    value = pq.read_table(DeltaTable(str(table), version=0).file_uris()[0])["key"][0].as_py()
    removed = DeltaTable(str(table)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert len(removed) == 1
    with pytest.raises(needle.NeedleError, match=r"version 0 .*removed") as e:
        needle.delta_lookup(table, value, version=0)
    assert removed[0] in str(e.value)
    assert rows(needle.delta_lookup(table, 5500)) == rows(truth(table, 1, 5500))


def test_a_column_added_by_schema_evolution(tmp_path):
    """A column added by schema evolution: the files from before it hold none of its values (the
    table reads them as nulls), and a lookup at a version before it existed raises, saying so."""
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"key": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    extra = pa.table({"key": pa.array([3, 4], pa.int64()), "name": ["c", "d"], "added": pa.array([30, 40], pa.int64())})
    write_deltalake(str(table), extra, mode="append", schema_mode="merge")
    report = needle.index_delta(table, "added")
    assert report["version"] == 1 and report["added"] == 2
    got = needle.delta_lookup(table, 30)
    assert got["key"].to_pylist() == [3] and got["added"].to_pylist() == [30]
    assert needle.delta_lookup(table, 30, version=1, columns=["key"])["key"].to_pylist() == [3]
    for call in (needle.delta_lookup, needle.delta_candidate_files):
        with pytest.raises(needle.NeedleError, match='version 0 of .* has no column "added"'):
            call(table, 30, version=0)
