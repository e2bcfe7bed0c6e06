"""A local Cassandra cluster on 127.0.0.1 ... 127.0.0.N (or another loopback block), one folder per node.

Layout of a cluster folder::

    cluster.json          what the cluster is (name, version, nodes, ports, Needle)
    node1/conf/           cassandra.yaml, logback.xml, command.txt
    node1/data/ commitlog/ saved_caches/ hints/ cdc_raw/
    node1/logs/           system.log, debug.log, output.log (JVM stdout/stderr)
    node1/node.pid        pid of the running node

This module is the cluster's lifecycle (up, add, start, stop, kill, restart, down, status), over 600
lines because those steps share one lock and one metadata file; how nodes see each other is in
gossip.py, Cassandra's tools against a node in tools.py.
"""

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from . import config, gossip, procs, runtime
from .errors import ClusterError
from .tools import NodeTools

FORMAT = 1
START_TIMEOUT = 180  # seconds for one node to open its CQL port
STOP_TIMEOUT = 60  # seconds of SIGTERM grace before SIGKILL
BOOTSTRAP_RING_DELAY_MS = 15000  # gossip settles (schema versions included) before a new node bootstraps


def _stderr(msg):
    print(msg, file=sys.stderr, flush=True)


def default_dir():
    """$NEEDLE_CLUSTER_DIR, else ./.cluster."""
    return Path(os.environ.get("NEEDLE_CLUSTER_DIR") or ".cluster")


class Cluster(NodeTools):
    """A cluster folder and the nodes running from it.

    Create one with :meth:`up`, or open an existing folder with
    ``Cluster(dir)``. As a context manager it always tears the cluster down
    (all nodes stopped, folder removed) on exit.
    """

    def __init__(self, dir=None, log=_stderr):
        """Open the cluster in ``dir`` (default: $NEEDLE_CLUSTER_DIR or ./.cluster)."""
        self.dir = Path(dir or default_dir()).expanduser().resolve()
        self.log = log or (lambda msg: None)
        self.meta = self._load_meta()

    # ----------------------------------------------------------------- folder

    @property
    def meta_file(self):
        return self.dir / "cluster.json"

    def _load_meta(self):
        if not self.meta_file.is_file():
            return None
        try:
            meta = json.loads(self.meta_file.read_text())
        except (OSError, ValueError) as e:
            raise ClusterError(
                f"{self.meta_file} is unreadable ({e}); it was not written by needle-cluster: use another --dir", code=2
            ) from e
        if not isinstance(meta, dict) or meta.get("tool") != "needle-cluster" or meta.get("format") != FORMAT:
            raise ClusterError(
                f"{self.meta_file} does not describe a needle-cluster cluster; use another --dir", code=2
            )
        return meta

    def _save_meta(self):
        tmp = self.meta_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.meta, indent=2) + "\n")
        tmp.rename(self.meta_file)

    def _require(self):
        if self.meta is None:
            raise ClusterError(
                f"no cluster in {self.dir}; start one with 'needle-cluster up -n 3' "
                "or point --dir (or NEEDLE_CLUSTER_DIR) at a cluster folder",
                code=2,
            )
        return self.meta

    @contextmanager
    def _lock(self):
        # Locks the folder itself, so no lock file is left in it.
        fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @property
    def size(self):
        """Number of nodes."""
        return self._require()["nodes"]

    @property
    def net(self):
        """The loopback block the nodes listen on (127.0.0 unless the cluster was made on another)."""
        return (self.meta or {}).get("net", config.DEFAULT_NET)

    def address(self, i):
        """Node i's address."""
        return config.node_address(i, self.net)

    def jmx_port(self, i):
        """Node i's JMX port on 127.0.0.1."""
        return config.jmx_port(i, self.net)

    def node_dir(self, i):
        return self.dir / config.node_name(i)

    def log_file(self, node):
        """Path of a node's system.log."""
        return self.node_dir(self.node(node)) / "logs" / "system.log"

    def node(self, ref):
        """Node number for ``ref``: 2, "2" or "node2"; unknown nodes raise a ClusterError."""
        n = self.size
        s = str(ref).strip().lower()
        m = re.fullmatch(r"(?:node)?(\d+)", s)
        if not m or not 1 <= int(m.group(1)) <= n:
            raise ClusterError(
                f"unknown node '{ref}': this cluster has node1..node{n} (name a node as 2 or node2)", code=2
            )
        return int(m.group(1))

    # -------------------------------------------------------------- processes

    def pid(self, node):
        """Pid of a running node, or None. Only a verified pid is ever returned."""
        i = self.node(node)
        d = self.node_dir(i)
        pid_file = d / "node.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid and procs.is_node_process(pid, d):
            return pid
        # The pid file may be missing or stale; the node's marker still finds it.
        found = procs.find_node_pids(d)
        return found[0] if found else None

    def is_up(self, node):
        """True when the node runs and accepts CQL connections."""
        i = self.node(node)
        return self.pid(i) is not None and procs.port_open(self.address(i), config.NATIVE_PORT)

    def _running(self):
        return [i for i in range(1, self.size + 1) if self.pid(i)]

    # ------------------------------------------------------------------ up

    @classmethod
    def up(
        cls,
        n=1,
        dir=None,
        version=None,
        name="needle",
        with_needle=None,
        query_handler=config.DEFAULT_QUERY_HANDLER,
        jvm_opts=(),
        heap=None,
        yaml=None,
        timeout=START_TIMEOUT,
        log=_stderr,
        data_dirs=None,
        net=None,
    ):
        """Create (or resume) an n-node cluster in ``dir`` and start every node.

        ``with_needle`` is the path of the Needle plugin jar to put on each
        node's classpath, with ``query_handler`` as Cassandra's custom query
        handler class (None or "" for none). ``jvm_opts`` are extra JVM
        options and ``yaml`` a dict of extra top-level cassandra.yaml settings;
        ``data_dirs`` is the number of data directories per node (default 1).
        ``net`` is the loopback block of a new cluster (``127.0.K``; default
        ``$NEEDLE_CLUSTER_NET``, else 127.0.0): clusters on different blocks
        run side by side. These are stored in cluster.json and apply to every later start.
        A stopped cluster in ``dir`` with the same size, version and name is
        started again with its data. Returns the running Cluster.
        """
        if not isinstance(n, int) or not 1 <= n <= 9:
            raise ClusterError(f"cannot start {n} nodes: choose 1 to 9 (-n)", code=2)
        if data_dirs is not None and (not isinstance(data_dirs, int) or not 1 <= data_dirs <= 8):
            raise ClusterError(
                f"cannot give each node {data_dirs} data directories: choose 1 to 8 (--data-dirs)", code=2
            )
        chosen = net or os.environ.get(config.NET_ENV)
        try:
            net = config.parse_net(chosen) if chosen else None
        except ValueError as e:
            raise ClusterError(f"cannot use loopback block {chosen}: {e} (--net or ${config.NET_ENV})", code=2) from e
        c = cls(dir, log=log)
        created = not c.dir.exists()
        c.dir.mkdir(parents=True, exist_ok=True)
        try:
            c._up_locked(n, version, name, with_needle, query_handler, jvm_opts, heap, yaml, timeout, data_dirs, net)
        except BaseException:
            if created and not any(c.dir.iterdir()):
                c.dir.rmdir()  # leave no empty folder behind a failed first step
            raise
        return c

    def _up_locked(
        self, n, version, name, with_needle, query_handler, jvm_opts, heap, yaml, timeout, data_dirs=None, net=None
    ):
        c, log = self, self.log
        with c._lock():
            c.meta = c._load_meta()
            version = (
                version
                or (c.meta or {}).get("version")
                or os.environ.get("NEEDLE_CASSANDRA_VERSION")
                or runtime.DEFAULT_VERSION
            )
            needle = None
            if with_needle:
                jar = Path(with_needle).expanduser().resolve()
                if not jar.is_file():
                    raise ClusterError(
                        f"Needle jar {with_needle} does not exist; build it first "
                        "(make build) or give the right path to --with-needle",
                        code=2,
                    )
                needle = {"jar": str(jar), "query_handler": query_handler or None}
            if c.meta is not None:
                c._check_resume(n, version, name, net)
                if needle:
                    c.meta["needle"] = needle
                if jvm_opts:
                    c.meta["jvm_opts"] = list(jvm_opts)
                if heap:
                    c.meta["heap"] = heap
                if yaml:
                    c.meta["yaml"] = dict(yaml)
                if data_dirs:
                    c.meta["data_dirs"] = data_dirs
                log(f"resuming stopped cluster '{name}' ({n} nodes, Cassandra {version}) in {c.dir}")
            else:
                foreign = [p.name for p in c.dir.iterdir()]
                if foreign:
                    raise ClusterError(
                        f"{c.dir} is not empty and holds no needle cluster "
                        f"(found {', '.join(sorted(foreign)[:3])}); choose an empty or new "
                        "folder with --dir",
                        code=2,
                    )
                net = net or config.DEFAULT_NET
                c.meta = {
                    "tool": "needle-cluster",
                    "format": FORMAT,
                    "name": name,
                    "version": version,
                    "nodes": n,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "heap": heap or config.DEFAULT_HEAP,
                    "net": net,
                    "ports": {
                        "native": config.NATIVE_PORT,
                        "storage": config.STORAGE_PORT,
                        "jmx": [config.jmx_port(i, net) for i in range(1, n + 1)],
                    },
                    "addresses": [config.node_address(i, net) for i in range(1, n + 1)],
                    "needle": needle,
                    "jvm_opts": list(jvm_opts),
                    "yaml": dict(yaml or {}),
                    "data_dirs": data_dirs or 1,
                }
            java, _ = runtime.find_java()
            runtime.resolve_cassandra(version, log=log)
            for i in range(1, n + 1):
                c._check_ports(i)
            c._save_meta()
            t0 = time.monotonic()
            try:
                for i in range(1, n + 1):
                    # Ring agreement is checked once, after the last node.
                    c._start_locked(i, timeout=timeout, java=java, wait_peers=False)
                    gossip.wait_seen(c, i, "UP")
                gossip.wait_ring(c)
            except BaseException:
                running = c._running()  # includes a node interrupted while starting
                if running:
                    log(
                        f"stopping the nodes already started ({', '.join(map(config.node_name, running))}); "
                        f"the folder {c.dir} is kept for inspection (remove it with 'needle-cluster down')"
                    )
                    c._stop_nodes(running, sig=procs.SIGKILL)
                raise
            log(
                f"cluster '{name}' up: {n} node{'s' if n > 1 else ''} in {time.monotonic() - t0:.1f} s "
                f"(CQL on {', '.join(self.address(i) for i in range(1, n + 1))}:{config.NATIVE_PORT})"
            )

    def _check_resume(self, n, version, name, net=None):
        m = self.meta
        running = self._running()
        if running:
            raise ClusterError(
                f"cluster '{m['name']}' is already running in {self.dir} "
                f"({', '.join(map(config.node_name, running))} up); use it, or run "
                "'needle-cluster down' first, or choose another --dir",
                code=2,
            )
        if (m["nodes"], m["version"], m["name"]) != (n, version, name):
            raise ClusterError(
                f"{self.dir} holds another cluster ('{m['name']}', {m['nodes']} nodes, "
                f"Cassandra {m['version']}); remove it with 'needle-cluster down' "
                "or choose another --dir",
                code=2,
            )
        if net and net != self.net:
            raise ClusterError(
                f"the cluster in {self.dir} listens on {self.net}.x, not {net}.x: resume it without "
                f"--net (and without ${config.NET_ENV}), or choose another --dir",
                code=2,
            )

    def _check_ports(self, i):
        addr = self.address(i)
        for what, host, port in (
            ("CQL", addr, config.NATIVE_PORT),
            ("storage", addr, config.STORAGE_PORT),
            ("JMX", "127.0.0.1", self.jmx_port(i)),
        ):
            if not procs.port_free(host, port):
                holder = procs.port_holder(host, port)
                raise ClusterError(
                    f"port {host}:{port} ({what} port of {config.node_name(i)}) is in use"
                    f"{' by ' + holder if holder else ''}; stop that process (or the "
                    "cluster it belongs to) and try again"
                )

    # --------------------------------------------------------------- start

    def _write_node_files(self, i):
        m = self.meta
        d = self.node_dir(i)
        for sub in ("conf", "commitlog", "saved_caches", "hints", "cdc_raw", "logs"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for data in config.data_dirs(d, m.get("data_dirs", 1)):
            data.mkdir(parents=True, exist_ok=True)
        (d / "conf" / "cassandra.yaml").write_text(
            config.node_yaml(
                d, i, m["nodes"], m["name"], m.get("yaml"), m.get("data_dirs", 1), m.get("token_nodes"), self.net
            )
        )
        (d / "conf" / "logback.xml").write_text(config.logback_xml(d))

    def command(self, node, java="java", jars=None, extra_jvm_opts=()):
        """The java command line that starts ``node`` (jars default to the cached classpath)."""
        i = self.node(node)
        m = self._require()
        if jars is None:
            jars = runtime.resolve_cassandra(m["version"], log=self.log)
        needle = m.get("needle") or {}
        return config.node_command(
            java,
            jars,
            self.node_dir(i),
            i,
            heap=m.get("heap", config.DEFAULT_HEAP),
            needle_jar=needle.get("jar"),
            query_handler=needle.get("query_handler"),
            jvm_opts=list(m.get("jvm_opts", ())) + list(extra_jvm_opts),
            net=self.net,
        )

    def add(self, timeout=START_TIMEOUT * 3):
        """Add a node to the running cluster: it bootstraps (streams its token ranges from the
        others) and joins. Returns its number."""
        with self._lock():
            m = self._require()
            n = m["nodes"]
            if n >= 9:
                raise ClusterError("this cluster already has 9 nodes, the most needle-cluster runs", code=2)
            down = [i for i in range(1, n + 1) if not self.pid(i)]
            if down:
                raise ClusterError(
                    f"{', '.join(map(config.node_name, down))} is down; start every node before "
                    "adding one (a bootstrap streams from all replicas)"
                )
            i = n + 1
            m.setdefault("token_nodes", n)
            m["nodes"] = i
            m["addresses"] = [self.address(k) for k in range(1, i + 1)]
            m.setdefault("ports", {})["jmx"] = [self.jmx_port(k) for k in range(1, i + 1)]
            self._save_meta()
            try:
                # The short ring delay of a new cluster is too short here: a bootstrapping node
                # must learn the others' schema through gossip before it decides what to stream.
                self._start_locked(
                    i, timeout=timeout, extra_jvm_opts=[f"-Dcassandra.ring_delay_ms={BOOTSTRAP_RING_DELAY_MS}"]
                )
                gossip.wait_ring(self)
            except BaseException:
                if self.pid(i):
                    self._stop_nodes([i], sig=procs.SIGKILL)
                raise
            self.log(f"{config.node_name(i)} joined the cluster ({self.address(i)})")
            return i

    def start(self, node, timeout=START_TIMEOUT, wait_peers=True):
        """Start a stopped node and wait until it serves CQL and its peers see it up."""
        i = self.node(node)
        with self._lock():
            self._start_locked(i, timeout=timeout, wait_peers=wait_peers)

    def _start_locked(self, i, timeout=START_TIMEOUT, java=None, wait_peers=True, extra_jvm_opts=()):
        name = config.node_name(i)
        d = self.node_dir(i)
        pid = self.pid(i)
        if pid:
            self.log(f"{name} is already running (pid {pid})")
            return
        m = self._require()
        if java is None:
            java, _ = runtime.find_java()
        needle = m.get("needle") or {}
        if needle.get("jar") and not Path(needle["jar"]).is_file():
            raise ClusterError(f"Needle jar {needle['jar']} is gone; rebuild it (make build) before starting {name}")
        self._check_ports(i)
        self._write_node_files(i)
        cmd = self.command(i, java=java, extra_jvm_opts=extra_jvm_opts)
        (d / "conf" / "command.txt").write_text(" \\\n  ".join(cmd) + "\n")
        system_log = d / "logs" / "system.log"
        # Gossip lines logged before this start belong to earlier runs.
        (d / "logs" / "start.offset").write_text(str(system_log.stat().st_size if system_log.exists() else 0))
        self.log(f"starting {name} ({self.address(i)}) ...")
        t0 = time.monotonic()
        env = dict(os.environ, MALLOC_ARENA_MAX="4")
        with open(d / "logs" / "output.log", "ab") as out:
            # Own session: the node outlives this CLI and ignores its Ctrl-C.
            p = subprocess.Popen(
                cmd,
                cwd=d,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                env=env,
            )
        procs.remember_child(p)
        (d / "node.pid").write_text(f"{p.pid}\n")
        addr = self.address(i)
        deadline = t0 + timeout
        while True:
            if p.poll() is not None:
                raise self._start_failure(i, f"{name} exited with code {p.returncode} while starting")
            if procs.port_open(addr, config.NATIVE_PORT):
                break
            if time.monotonic() > deadline:
                procs.signal_pid(p.pid, procs.SIGKILL)
                p.wait()
                raise self._start_failure(
                    i, f"{name} did not open its CQL port {addr}:{config.NATIVE_PORT} within {timeout} s and was killed"
                )
            time.sleep(0.25)
        self.log(f"{name} up in {time.monotonic() - t0:.1f} s (pid {p.pid})")
        if wait_peers:
            gossip.wait_seen(self, i, "UP")
            gossip.wait_ring(self)

    def _start_failure(self, i, what):
        d = self.node_dir(i)
        text = ""
        for name in ("system.log", "output.log"):
            f = d / "logs" / name
            if f.is_file() and f.stat().st_size:
                lines = f.read_text(errors="replace").splitlines()[-30:]
                text += f"--- last lines of {f}\n" + "\n".join(lines) + "\n"
        hint = "read the log above (full log in %s)" % (d / "logs")
        if re.search(r"Address already in use|BindException", text):
            hint = "a port is taken by another process: check 'ss -ltnp' and stop it"
        elif "OutOfMemory" in text:
            hint = "the heap is too small: start with a larger --heap"
        elif re.search(r"Unable to contact any seeds|Unable to gossip with any peers", text):
            hint = (
                "no seed answered: start one of the seeds first "
                f"({', '.join(config.node_name(j) for j in range(1, min(self.size, config.SEEDS) + 1))})"
            )
        elif re.search(r"ClassNotFoundException|NoClassDefFoundError", text):
            hint = "a class is missing from the classpath: check --with-needle and --query-handler"
        elif re.search(r"Invalid yaml|Cannot create property|ConfigurationException", text):
            hint = f"cassandra.yaml is rejected: check --yaml settings ({d / 'conf' / 'cassandra.yaml'})"
        return ClusterError(f"{what}; {hint}", details=text)

    # ---------------------------------------------------------- stop / kill

    def stop(self, node, timeout=STOP_TIMEOUT):
        """Stop a node gracefully: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        i = self.node(node)
        with self._lock():
            self._stop_nodes([i], sig=procs.SIGTERM, timeout=timeout)

    def kill(self, node, wait_down=True):
        """SIGKILL a node, as in a crash; by default wait until its peers see it down."""
        i = self.node(node)
        if self._stop_nodes([i], sig=procs.SIGKILL) and wait_down:
            gossip.wait_seen(self, i, "DOWN")

    def restart(self, node, timeout=START_TIMEOUT):
        """Stop (gracefully) and start a node again."""
        i = self.node(node)
        with self._lock():
            self._stop_nodes([i], sig=procs.SIGTERM)
            self._start_locked(i, timeout=timeout)

    def _stop_nodes(self, nodes, sig, timeout=STOP_TIMEOUT):
        """Signal the running ones of ``nodes`` and wait until they are gone; returns those."""
        verb = "killing" if sig == procs.SIGKILL else "stopping"
        targets = []
        for i in nodes:
            pid = self.pid(i)
            if pid is None:
                self.log(f"{config.node_name(i)} is not running")
                continue
            self.log(f"{verb} {config.node_name(i)} (pid {pid}) ...")
            procs.signal_pid(pid, sig)
            targets.append((i, pid, time.monotonic()))
        for i, pid, t0 in targets:
            d = self.node_dir(i)
            if not procs.wait_gone(pid, timeout if sig != procs.SIGKILL else 30):
                self.log(f"{config.node_name(i)} did not stop within {timeout} s: sending SIGKILL")
                procs.signal_pid(pid, procs.SIGKILL)
                if not procs.wait_gone(pid, 30):
                    raise ClusterError(
                        f"{config.node_name(i)} (pid {pid}) survives SIGKILL; "
                        "check the process with 'ps' and the kernel log"
                    )
            (d / "node.pid").unlink(missing_ok=True)
            self._wait_ports_closed([i])
            self.log(
                f"{config.node_name(i)} {'killed' if sig == procs.SIGKILL else 'stopped'} "
                f"in {time.monotonic() - t0:.1f} s"
            )
        return [i for i, _, _ in targets]

    def down(self, keep=False, kill=False):
        """Stop every node (SIGKILL when ``kill``) and remove the folder unless ``keep``."""
        if self.meta is None:
            if self.dir.exists() and any(self.dir.iterdir()):
                raise ClusterError(f"no cluster in {self.dir}; nothing was stopped or removed", code=2)
            self.log(f"no cluster in {self.dir}")
            if self.dir.exists() and not keep:
                self.dir.rmdir()  # empty, as checked above
            return
        with self._lock():
            self._stop_nodes(list(range(1, self.size + 1)), sig=procs.SIGKILL if kill else procs.SIGTERM)
            left = [i for i in range(1, self.size + 1) if self.pid(i)]
            if left:
                raise ClusterError(
                    f"{', '.join(map(config.node_name, left))} still running; run 'needle-cluster down' again"
                )
            self._wait_ports_closed()
            if not keep:
                shutil.rmtree(self.dir)
                self.log(f"removed {self.dir}")
                self.meta = None

    def _wait_ports_closed(self, nodes=None, timeout=10):
        deadline = time.monotonic() + timeout
        for i in nodes or range(1, self.size + 1):
            for host, port in (
                (self.address(i), config.NATIVE_PORT),
                (self.address(i), config.STORAGE_PORT),
                ("127.0.0.1", self.jmx_port(i)),
            ):
                while not procs.port_free(host, port) and time.monotonic() < deadline:
                    time.sleep(0.1)

    # ---------------------------------------------------------------- look

    def status(self, ring=False):
        """A dict describing the cluster and each node's state.

        A node's ``state`` is "up" (process running, CQL port open),
        "starting" (process running, CQL port not open yet) or "down".
        With ``ring``, each node also gets ``ring``: its status/state as
        seen by ``nodetool status`` on the first node that is up (UN, DN, ...).
        """
        m = self._require()
        nodes = []
        for i in range(1, m["nodes"] + 1):
            pid = self.pid(i)
            addr = self.address(i)
            cql = pid is not None and procs.port_open(addr, config.NATIVE_PORT)
            nodes.append(
                {
                    "name": config.node_name(i),
                    "number": i,
                    "address": addr,
                    "state": "up" if cql else ("starting" if pid else "down"),
                    "pid": pid,
                    "native_port": config.NATIVE_PORT,
                    "storage_port": config.STORAGE_PORT,
                    "jmx_port": self.jmx_port(i),
                    "dir": str(self.node_dir(i)),
                    "log": str(self.node_dir(i) / "logs" / "system.log"),
                }
            )
        if ring:
            view = {}
            up = [n["number"] for n in nodes if n["state"] == "up"]
            if up:
                view = gossip.ring_view(self, up[0])
            for n in nodes:
                n["ring"] = view.get(n["address"])
        return {
            "name": m["name"],
            "dir": str(self.dir),
            "version": m["version"],
            "nodes": nodes,
            "needle": m.get("needle"),
            "jvm_opts": m.get("jvm_opts", []),
            "heap": m.get("heap"),
        }

    # ------------------------------------------------------ context manager

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.meta is not None:
            self.down(keep=False)
        return False
