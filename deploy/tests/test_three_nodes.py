"""A 3-node cluster with replication factor 3 through the Python API and the CLI:
crash a node, keep reading, bring it back."""

import pytest

from conftest import assert_all_gone, ok, status, teardown
from needle_cluster import Cluster

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("three") / "cluster"
    # A lower phi threshold lets peers notice a killed node in ~10 s instead of ~20 s.
    try:
        yield Cluster.up(3, dir=d, yaml={"phi_convict_threshold": "5"})
    finally:
        teardown(d)


def _value(c, node, consistency, k):
    out = c.cql(node, f"CONSISTENCY {consistency}; SELECT v FROM ks.t WHERE k = {k};")
    return out


def test_three_nodes_survive_a_crash(cluster):
    c = cluster
    d = c.dir
    st = status(d, "--ring")
    assert [n["state"] for n in st["nodes"]] == ["up"] * 3
    assert [n["ring"] for n in st["nodes"]] == ["UN"] * 3
    assert [n["address"] for n in st["nodes"]] == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    assert len({n["jmx_port"] for n in st["nodes"]}) == 3
    pids = [n["pid"] for n in st["nodes"]]

    c.cql(1, KS + "CREATE TABLE ks.t (k int PRIMARY KEY, v text);")
    c.cql(1, "CONSISTENCY QUORUM; INSERT INTO ks.t (k, v) VALUES (1, 'quorum-write');")
    assert "quorum-write" in _value(c, 2, "QUORUM", 1)

    # Crash node2: its process is gone, its peers mark it down, reads at ONE go on.
    ok(d, "kill", "2")
    st = status(d)
    assert [n["state"] for n in st["nodes"]] == ["up", "down", "up"]
    assert st["nodes"][1]["pid"] is None
    assert "quorum-write" in _value(c, 1, "ONE", 1)
    assert "quorum-write" in _value(c, 3, "ONE", 1)
    c.cql(3, "CONSISTENCY QUORUM; INSERT INTO ks.t (k, v) VALUES (2, 'while-down');")

    # Bring it back: it rejoins and everyone sees everyone.
    ok(d, "start", "node2")
    st = status(d, "--ring")
    assert [n["state"] for n in st["nodes"]] == ["up"] * 3
    assert [n["ring"] for n in st["nodes"]] == ["UN"] * 3
    pids.append(st["nodes"][1]["pid"])
    assert "quorum-write" in _value(c, 2, "QUORUM", 1)
    assert "while-down" in _value(c, 2, "QUORUM", 2)
    assert "UN  127.0.0.2" in c.nodetool(3, "status")

    c.down()
    assert not d.exists()
    assert_all_gone(d, pids, nodes=3)
