"""The PartitionIndex class against a model of what it holds."""

import random

import pytest

import needle


def test_candidates_never_miss_a_partition_that_holds_the_value(tmp_path):
    rnd = random.Random(7)
    model: dict[str, set] = {}
    with needle.PartitionIndex.create(tmp_path / "ix", buckets=512, sync=False) as ix:
        for step in range(300):
            op = rnd.random()
            if op < 0.6 or not model:
                pid = f"p{rnd.randrange(40)}"
                values = {
                    rnd.choice(
                        [rnd.randrange(5_000), f"s{rnd.randrange(5_000)}", b"\x00" + bytes([rnd.randrange(256)])]
                    )
                    for _ in range(rnd.randrange(1, 30))
                }
                values -= model.get(pid, set())
                ix.add(pid, sorted(values, key=repr))
                model.setdefault(pid, set()).update(values)
            elif op < 0.75:
                pid = rnd.choice(sorted(model))
                gone = set(rnd.sample(sorted(model[pid], key=repr), min(3, len(model[pid]))))
                ix.delete(pid, sorted(gone, key=repr))
                model[pid] -= gone
            elif op < 0.85:
                pid = rnd.choice(sorted(model))
                ix.remove(pid)
                del model[pid]
            elif op < 0.92:
                ix.flush()
            else:
                ix.merge()
            if step % 25 == 0:
                assert ix.any_partition() in model if model else ix.any_partition() is None
                for pid, values in model.items():
                    for v in values:
                        assert pid in ix.candidates(v), (pid, v)
        held = {v for values in model.values() for v in values}
        probe = sorted(held, key=repr)[:200]
        for v, found in zip(probe, ix.candidates_batch(probe), strict=True):
            assert {p for p, vs in model.items() if v in vs} <= set(found)
        assert sorted(ix.partitions()) == sorted(model)
        assert ix.stats()["distinct_ids"] == len(model)
    # Everything survives a reopen.
    with needle.PartitionIndex.open(tmp_path / "ix", read_only=True) as ix:
        for pid, values in model.items():
            for v in values:
                assert pid in ix.candidates(v)


def test_absent_values_rarely_find_a_candidate(tmp_path):
    with needle.PartitionIndex.create(tmp_path / "ix", buckets=1024, sync=False) as ix:
        for p in range(20):
            ix.add(f"p{p}", range(p * 2000, p * 2000 + 2000))
        false_positives = sum(len(ix.candidates(v)) for v in range(10**6, 10**6 + 5000))
        # 16-bit fingerprints at about 2 slots per bucket: some 6e-5 per partition and probe.
        assert false_positives < 5000 * 20 * 0.002


def test_errors_say_what_failed(tmp_path):
    with pytest.raises(needle.NeedleError, match="missing"):
        needle.PartitionIndex.open(tmp_path / "missing")
    ix = needle.PartitionIndex.create(tmp_path / "ix", sync=False)
    with pytest.raises(TypeError, match="int, str or bytes"):
        ix.add("p", [1.5])
    with pytest.raises(TypeError, match="bool"):
        ix.candidates(True)
    with pytest.raises(TypeError, match="iterable of values"):
        ix.add("p", "abc")
    with pytest.raises(ValueError, match="64 bits"):
        ix.candidates(2**70)
    with pytest.raises(needle.NeedleError, match="in use"):
        needle.PartitionIndex.open(tmp_path / "ix")
    ix.close()
    with pytest.raises(ValueError, match="closed"):
        ix.candidates(1)
    ro = needle.PartitionIndex.open(tmp_path / "ix", read_only=True)
    with pytest.raises(needle.NeedleError, match="read-only|read only"):
        ro.add("p", [1])
    ro.close()


def test_unsigned_values_above_two_to_the_63_keep_their_bits(tmp_path):
    with needle.PartitionIndex.create(tmp_path / "ix", sync=False) as ix:
        ix.add("p", [2**64 - 1])
        assert ix.candidates(-1) == ["p"]
