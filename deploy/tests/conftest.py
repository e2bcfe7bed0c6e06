"""Shared helpers: run the CLI, and make sure every test leaves no node behind."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from needle_cluster import procs
from needle_cluster.cluster import Cluster
from needle_cluster.config import MARKER, jmx_port

DEPLOY = Path(__file__).resolve().parents[1]
TOOL = DEPLOY / "needle-cluster"


def run(cluster_dir, *args, env=None, timeout=600):
    """Run needle-cluster with --dir; return the CompletedProcess (text, captured)."""
    cmd = [sys.executable, str(TOOL), "--dir", str(cluster_dir), *args]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )


def ok(cluster_dir, *args, **kw):
    """Run needle-cluster and fail the test (showing its output) unless it exits 0."""
    res = run(cluster_dir, *args, **kw)
    assert res.returncode == 0, f"needle-cluster {' '.join(args)} exited {res.returncode}:\n{res.stderr}\n{res.stdout}"
    return res


def status(cluster_dir, *extra):
    return json.loads(ok(cluster_dir, "status", "--json", *extra).stdout)


def node_processes(cluster_dir):
    """Pids of live Cassandra processes started from any node folder under cluster_dir."""
    prefix = f"{MARKER}{Path(cluster_dir).resolve()}/"
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            args = procs.cmdline(int(entry)) or []
            if any(a.startswith(prefix) for a in args):
                pids.append(int(entry))
    return pids


def assert_all_gone(cluster_dir, pids, nodes):
    """No process of the cluster (by pid and by command line) and no open node port."""
    for pid in pids:
        assert procs.cmdline(pid) is None or not any(a.startswith(MARKER) for a in procs.cmdline(pid)), (
            f"pid {pid} still runs"
        )
    assert node_processes(cluster_dir) == []
    for i in range(1, nodes + 1):
        for host, port in ((f"127.0.0.{i}", 9042), (f"127.0.0.{i}", 7000), ("127.0.0.1", jmx_port(i))):
            assert not procs.port_open(host, port), f"{host}:{port} still open"
            assert procs.port_free(host, port), f"{host}:{port} still bound"


def teardown(cluster_dir):
    """Stop whatever runs from cluster_dir, whatever state the test left it in."""
    try:
        if (Path(cluster_dir) / "cluster.json").exists():
            Cluster(cluster_dir, log=None).down(keep=True, kill=True)
    except Exception as e:  # the backstop below still ends every node
        print(f"teardown: {e}", file=sys.stderr)
    for pid in node_processes(cluster_dir):
        procs.signal_pid(pid, procs.SIGKILL)


def repro(script, work, *args):
    """Run deploy/repro/SCRIPT in folder WORK, keeping it (the node's data and logs) for the test to
    read; whatever happens, no node of it is left running. Returns the CompletedProcess."""
    try:
        return subprocess.run(
            [str(DEPLOY / "repro" / script), "--dir", str(work), "--keep", *args],
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    finally:
        teardown(work / "cluster")


@pytest.fixture
def cluster_dir(tmp_path):
    """A fresh cluster folder, always torn down after the test."""
    d = tmp_path / "cluster"
    yield d
    teardown(d)
