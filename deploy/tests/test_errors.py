"""Bad input and a hostile machine: clear one-line errors, non-zero exits, nothing lost."""

import json
import os
import socket
import stat
import subprocess
import time

from conftest import node_processes, run


def _cluster_json(d, **kw):
    d.mkdir(parents=True, exist_ok=True)
    meta = {"tool": "needle-cluster", "format": 1, "name": "other", "version": "5.0.9", "nodes": 3}
    meta.update(kw)
    (d / "cluster.json").write_text(json.dumps(meta))
    return meta


def _error_line(res):
    lines = res.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("needle-cluster: error: "), res.stderr
    return lines[-1]


def test_busy_port_is_named(cluster_dir):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 9042))
        s.listen()
        res = run(cluster_dir, "up", "-n", "1")
    assert res.returncode == 1
    line = _error_line(res)
    assert "127.0.0.1:9042" in line and "CQL port of node1" in line
    assert f"pid {os.getpid()}" in line, "the holder is named when ss can tell"
    assert node_processes(cluster_dir) == []
    assert not cluster_dir.exists(), "nothing is left behind"


def test_folder_of_another_cluster_is_left_alone(cluster_dir):
    meta = _cluster_json(cluster_dir)
    (cluster_dir / "node1").mkdir()
    (cluster_dir / "node1" / "precious").write_text("data")
    res = run(cluster_dir, "up", "-n", "1")
    assert res.returncode == 2
    assert "holds another cluster ('other', 3 nodes" in _error_line(res)
    assert json.loads((cluster_dir / "cluster.json").read_text()) == meta
    assert (cluster_dir / "node1" / "precious").read_text() == "data"


def test_a_wrong_loopback_block_is_refused(cluster_dir):
    res = run(cluster_dir, "up", "-n", "1", "--net", "127.0.300")
    assert res.returncode == 2
    assert "cannot use loopback block 127.0.300" in _error_line(res)
    assert not cluster_dir.exists(), "nothing is left behind"
    meta = _cluster_json(cluster_dir, name="needle", nodes=1, net="127.0.0")
    res = run(cluster_dir, "up", "-n", "1", "--version", "5.0.9", "--net", "127.0.5")
    assert res.returncode == 2
    assert "listens on 127.0.0.x, not 127.0.5.x" in _error_line(res)
    assert json.loads((cluster_dir / "cluster.json").read_text()) == meta
    assert node_processes(cluster_dir) == []


def test_foreign_folder_is_left_alone(cluster_dir):
    cluster_dir.mkdir()
    (cluster_dir / "notes.txt").write_text("mine")
    for args in (["up", "-n", "1"], ["down"], ["status"]):
        res = run(cluster_dir, *args)
        assert res.returncode == 2, args
        _error_line(res)
    assert (cluster_dir / "notes.txt").read_text() == "mine"
    (cluster_dir / "cluster.json").write_text('{"something": "else"}')
    res = run(cluster_dir, "down")
    assert res.returncode == 2 and "does not describe a needle-cluster cluster" in _error_line(res)
    assert (cluster_dir / "notes.txt").exists()


def test_recycled_pid_is_never_signalled(cluster_dir):
    _cluster_json(cluster_dir, nodes=1, name="needle")
    (cluster_dir / "node1").mkdir()
    other = subprocess.Popen(["sleep", "60"])
    try:
        (cluster_dir / "node1" / "node.pid").write_text(f"{other.pid}\n")
        st = json.loads(run(cluster_dir, "status", "--json").stdout)
        assert st["nodes"][0]["state"] == "down" and st["nodes"][0]["pid"] is None
        for args in (["kill", "1", "--no-wait"], ["stop", "node1"], ["down", "--keep"]):
            res = run(cluster_dir, *args)
            assert res.returncode == 0, res.stderr
            assert "not running" in res.stderr
        time.sleep(0.2)
        assert other.poll() is None, "an unrelated process was killed"
    finally:
        other.kill()
        other.wait()


def test_unknown_node_exits_2(cluster_dir):
    _cluster_json(cluster_dir, name="needle")
    for args in (
        ["stop", "4"],
        ["kill", "node0"],
        ["start", "nodeX"],
        ["restart", "9"],
        ["cql", "5", "-e", "SELECT 1"],
        ["nodetool", "7", "status"],
        ["logs", "node4"],
    ):
        res = run(cluster_dir, *args)
        assert res.returncode == 2, args
        assert "unknown node" in _error_line(res) and "node1..node3" in res.stderr


def test_missing_and_wrong_java(cluster_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty-bin")
    res = run(cluster_dir, "up", "-n", "1", env=env)
    assert res.returncode == 1 and "Java not found" in _error_line(res)

    fake = tmp_path / "jdk21"
    (fake / "bin").mkdir(parents=True)
    java = fake / "bin" / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"21.0.2\" 2024-01-16' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    res = run(cluster_dir, "up", "-n", "1", env=dict(os.environ, JAVA_HOME=str(fake)))
    assert res.returncode == 1
    line = _error_line(res)
    assert "Java 21" in line and "JAVA_HOME" in line
    assert not cluster_dir.exists()


def test_maven_central_unreachable(cluster_dir, tmp_path):
    # A mirror on a closed loopback port stands in for an unreachable Central,
    # with an empty local repository and an empty cache.
    settings = tmp_path / "settings.xml"
    settings.write_text("""<settings><mirrors><mirror><id>down</id><mirrorOf>*</mirrorOf>
      <url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>""")
    env = dict(
        os.environ,
        NEEDLE_CACHE=str(tmp_path / "cache"),
        NEEDLE_MVN_ARGS=f"-s {settings} -Dmaven.repo.local={tmp_path / 'm2'}",
    )
    res = run(cluster_dir, "up", "-n", "1", env=env)
    assert res.returncode == 1
    line = _error_line(res)
    assert "Maven Central is unreachable" in line and "cached copy would be used" in line
    assert not cluster_dir.exists()
    assert not list((tmp_path / "cache").glob("cassandra/*/classpath.txt"))
