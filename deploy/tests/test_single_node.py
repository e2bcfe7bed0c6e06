"""A 1-node cluster through the CLI, as the Java tests will drive it."""

import zipfile
from pathlib import Path

from conftest import assert_all_gone, node_processes, ok, run, status
from needle_cluster import procs


def _dummy_jar(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return path


def test_one_node_lifecycle(cluster_dir, tmp_path):
    jar = _dummy_jar(tmp_path / "needle-dummy.jar")
    res = ok(
        cluster_dir,
        "up",
        "-n",
        "1",
        "--with-needle",
        str(jar),
        "--query-handler",
        "",
        "--jvm-opt=-Dneedle.test.marker=42",
    )
    assert "node1 up in" in res.stderr

    st = status(cluster_dir)
    node = st["nodes"][0]
    assert (node["name"], node["address"], node["state"]) == ("node1", "127.0.0.1", "up")
    assert st["needle"] == {"jar": str(jar), "query_handler": None}
    pid = node["pid"]
    assert int(Path(node["dir"], "node.pid").read_text()) == pid

    # The plugin plumbing reached the running JVM.
    args = procs.cmdline(pid)
    assert args[args.index("-cp") + 1].split(":")[-1] == str(jar)
    assert "-Dneedle.test.marker=42" in args
    assert not any("custom_query_handler_class" in a for a in args)

    # A second 'up' over the running cluster is refused and changes nothing.
    again = run(cluster_dir, "up", "-n", "1")
    assert again.returncode == 2 and "already running" in again.stderr
    assert status(cluster_dir)["nodes"][0]["pid"] == pid

    ok(
        cluster_dir,
        "cql",
        "1",
        "-e",
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};"
        "CREATE TABLE ks.t (k int PRIMARY KEY, v text);"
        "INSERT INTO ks.t (k, v) VALUES (1, 'needle-one');",
    )
    out = ok(cluster_dir, "cql", "node1", "-e", "SELECT v FROM ks.t WHERE k = 1;").stdout
    assert "needle-one" in out and "(1 rows)" in out
    bad = run(cluster_dir, "cql", "1", "-e", "SELECT * FROM nope.t;")
    assert bad.returncode != 0

    assert "UN  127.0.0.1" in ok(cluster_dir, "nodetool", "1", "status").stdout
    assert status(cluster_dir, "--ring")["nodes"][0]["ring"] == "UN"
    assert (
        "Starting" in ok(cluster_dir, "logs", "1", "-n", "500").stdout
        or "CassandraDaemon" in ok(cluster_dir, "logs", "1", "-n", "500").stdout
    )

    # A restart keeps the data; the node gets a new pid.
    ok(cluster_dir, "restart", "1")
    node = status(cluster_dir)["nodes"][0]
    assert node["state"] == "up" and node["pid"] != pid
    assert "needle-one" in ok(cluster_dir, "cql", "1", "-e", "SELECT v FROM ks.t WHERE k = 1;").stdout
    pids = [pid, node["pid"]]

    ok(cluster_dir, "down")
    assert not cluster_dir.exists()
    assert_all_gone(cluster_dir, pids, nodes=1)
    assert node_processes(cluster_dir) == []
