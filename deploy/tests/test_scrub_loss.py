"""Cassandra 5.0.9's scrub loss on a stock node: partitions with a range tombstone or a TTL are dropped.

docs/cassandra.md, "Cassandra's own scrub loss". These tests assert Cassandra's behaviour: if a
Cassandra release keeps the rows, the first two fail, and that section is out of date.
"""

import subprocess

from conftest import DEPLOY, repro

REPRO = DEPLOY / "repro" / "scrub-loss"


def test_scrub_drops_the_partition_that_holds_a_range_tombstone(tmp_path):
    res = repro("scrub-loss", tmp_path / "range")
    assert res.returncode == 1, f"exit {res.returncode}:\n{res.stdout}\n{res.stderr}"
    assert "live rows before the scrub: 29" in res.stdout, res.stdout
    assert "LOST: 5 of 29 live rows (k c): 1 0, 1 1, 1 5, 1 6, 1 7" in res.stdout, res.stdout


def test_scrub_drops_the_partition_that_holds_a_row_with_a_ttl(tmp_path):
    res = repro("scrub-loss", tmp_path / "ttl", "--with", "ttl")
    assert res.returncode == 1, f"exit {res.returncode}:\n{res.stdout}\n{res.stderr}"
    assert "LOST: 8 of 32 live rows (k c): 1 0, 1 1, 1 2, 1 3, 1 4, 1 5, 1 6, 1 7" in res.stdout, res.stdout


def test_scrub_keeps_every_row_after_row_deletes(tmp_path):
    res = repro("scrub-loss", tmp_path / "rows", "--with", "row-tombstones")
    assert res.returncode == 0, f"exit {res.returncode}:\n{res.stdout}\n{res.stderr}"
    assert "kept: all 29 live rows" in res.stdout, res.stdout


def test_a_wrong_option_is_refused():
    res = subprocess.run([str(REPRO), "--with", "all"], capture_output=True, text=True)
    assert res.returncode == 2
    assert "--with takes range-tombstone, row-tombstones or ttl" in res.stderr
