"""Processes and ports: which pid is which node, and who holds a port."""

import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import time

from .config import MAIN_CLASS, MARKER

# Popen handles of nodes started by this Python process, so that ended nodes
# are reaped and never linger as zombies that still answer kill(pid, 0).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def remember_child(popen):
    _CHILDREN[popen.pid] = popen


def _reap(pid):
    p = _CHILDREN.get(pid)
    if p is not None and p.poll() is not None:
        del _CHILDREN[pid]


def cmdline(pid):
    """The argument list of ``pid``, or None when there is no such live process."""
    _reap(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        # The state letter follows the parenthesised command name.
        if stat[stat.rindex(")") + 2] in "ZX":
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except (OSError, ValueError, IndexError):
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def is_node_process(pid, node_dir):
    """True when ``pid`` is alive and is the Cassandra of ``node_dir``.

    This guards every signal: a pid from a stale pid file may have been
    recycled by an unrelated process, which must never be killed.
    """
    args = cmdline(pid)
    return bool(args) and f"{MARKER}{node_dir}" in args and MAIN_CLASS in args


def find_node_pids(node_dir):
    """All live Cassandra processes of ``node_dir`` (normally zero or one)."""
    want = f"{MARKER}{node_dir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if want in raw.split(b"\0") and is_node_process(int(entry), node_dir):
            found.append(int(entry))
    return found


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def exiting_or_alive(pid):
    """True while any thread of ``pid`` still exists.

    A dying JVM's main thread turns zombie before its other threads have
    finished exiting and released its sockets, so "zombie" alone does not
    mean "gone"; only a lone zombie (or no /proc entry) does.
    """
    _reap(pid)
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return False
    state = fields.get("State", "").strip()[:1]
    threads = int(fields.get("Threads", "1").strip() or 1)
    return not (state in "ZX" and threads <= 1)


def wait_gone(pid, timeout):
    """Wait until every thread of ``pid`` has exited; True if that happened in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not exiting_or_alive(pid):
            return True
        time.sleep(0.1)
    return not exiting_or_alive(pid)


def port_open(host, port, timeout=0.5):
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(host, port):
    """True when a server could listen on host:port now.

    SO_REUSEADDR makes leftover TIME_WAIT connections of a stopped node not
    count as busy, while a listening (or plainly bound) socket still does.
    """
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError as e:
        return e.errno not in (errno.EADDRINUSE, errno.EACCES)
    finally:
        s.close()


def port_holder(host, port):
    """Best-effort description of the process listening on host:port, via ``ss``."""
    ss = shutil.which("ss")
    if not ss:
        return None
    try:
        out = subprocess.run([ss, "-Hltnp"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        cols = line.split()
        if len(cols) < 4:
            continue
        local = cols[3]
        addr, _, p = local.rpartition(":")
        if p != str(port) or addr.strip("[]") not in (host, "0.0.0.0", "*", "::", "::ffff:" + host):
            continue
        m = re.search(r'\("([^"]+)",pid=(\d+)', line)
        if not m:
            return "another process (run as root to see which)"
        pid = int(m.group(2))
        desc = f"pid {pid} ({m.group(1)})"
        args = cmdline(pid) or []
        marker = [a[len(MARKER) :] for a in args if a.startswith(MARKER)]
        if marker:
            desc += f", the Cassandra of {marker[0]}"
        elif MAIN_CLASS in args:
            desc += ", a Cassandra node"
        return desc
    return None


SIGTERM = signal.SIGTERM
SIGKILL = signal.SIGKILL
