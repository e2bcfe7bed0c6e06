"""Delta Lake tables written by a real Delta writer (the deltalake package): the index follows
appends, deletes, overwrites, compaction and checkpoints, and a lookup at any version equals a
full read of that version, also while the index lags behind."""

import random

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


def test_errors_say_what_failed(tmp_path):
    with pytest.raises(needle.NeedleError, match="cannot open the Delta table"):
        needle.index_delta(tmp_path / "nothing", "key")
    with pytest.raises(needle.NeedleError, match="local file system"):
        needle.index_delta("s3://bucket/table", "key")
    table = tmp_path / "t"
    write_deltalake(str(table), batch(random.Random(1), 10))
    with pytest.raises(needle.NeedleError, match='no column "nope"'):
        needle.index_delta(table, "nope")
    assert needle.indexed_version(table) is None
