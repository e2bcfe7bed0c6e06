"""How a cluster's nodes see each other: the ring as nodetool reports it, and the UP/DOWN lines of
each node's log; waits until they agree."""

import os
import re
import time

from . import config
from .errors import ClusterError

TIMEOUT = 60  # seconds for peers to see a node come up or go down
_UP_DOWN = re.compile(r"InetAddress /?(127\.\d+\.\d+\.\d+)(?::\d+)? is now (UP|DOWN)")


def ring_view(cluster, j):
    """{address: "UN"|"DN"|...} as ``nodetool status`` on node j reports it ({} on failure)."""
    view = {}
    try:
        out = cluster.nodetool(j, "status", check=False)
    except ClusterError:
        return view
    for line in out.splitlines():
        mm = re.match(r"^([UD][NLJM])\s+(\S+)", line)
        if mm:
            view[mm.group(2)] = mm.group(1)
    return view


def wait_ring(cluster, timeout=TIMEOUT):
    """Wait until every running node's nodetool shows every running node UN."""
    t0 = time.monotonic()
    while True:
        running = cluster._running()
        want = [cluster.address(i) for i in running]
        pending = []
        for j in running:
            view = ring_view(cluster, j)
            missing = [a for a in want if view.get(a) != "UN"]
            if missing:
                pending.append(f"{config.node_name(j)} (not UN: {', '.join(missing)})")
                break  # no use asking the others this round
        if not pending:
            if len(running) > 1:
                cluster.log(
                    f"ring agrees: {len(running)} nodes UN on every node (checked in {time.monotonic() - t0:.1f} s)"
                )
            return
        if time.monotonic() - t0 > timeout:
            raise ClusterError(
                f"the ring did not settle within {timeout} s: {'; '.join(pending)}; "
                "check the nodes' logs ('needle-cluster logs N')"
            )
        time.sleep(1)


def peer_view(cluster, i):
    """{address: "UP"|"DOWN"} as node i's log says since its last start."""
    d = cluster.node_dir(i) / "logs"
    try:
        offset = int((d / "start.offset").read_text())
    except (OSError, ValueError):
        offset = 0
    view = {}
    try:
        with open(d / "system.log", "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(offset if offset <= size else 0)  # a rolled log restarts at 0
            for line in f.read().decode(errors="replace").splitlines():
                mm = _UP_DOWN.search(line)
                if mm:
                    view[mm.group(1)] = mm.group(2)
    except OSError:
        pass
    return view


def wait_seen(cluster, i, state, timeout=TIMEOUT):
    """Wait until node i and every other running node see each other as ``state``."""
    name = config.node_name(i)
    addr = cluster.address(i)
    t0 = time.monotonic()
    while True:
        others = [j for j in cluster._running() if j != i]
        if not others:
            return
        if state == "UP":
            pending = [config.node_name(j) for j in others if peer_view(cluster, j).get(addr) != "UP"]
        else:  # a peer that started after the node went down never saw it up
            pending = [config.node_name(j) for j in others if peer_view(cluster, j).get(addr) == "UP"]
        if state == "UP":
            mine = peer_view(cluster, i)
            pending += [f"{name} (about {config.node_name(j)})" for j in others if mine.get(cluster.address(j)) != "UP"]
        if not pending:
            if others:
                cluster.log(f"peers see {name} {state.lower()} after {time.monotonic() - t0:.1f} s")
            return
        if time.monotonic() - t0 > timeout:
            raise ClusterError(
                f"{', '.join(pending)} still do(es) not see {name} {state} after {timeout} s; "
                f"check the nodes' logs ('needle-cluster logs {i}')"
            )
        time.sleep(0.25)
