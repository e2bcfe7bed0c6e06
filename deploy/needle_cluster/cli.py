"""The needle-cluster command line.

Exit codes: 0 success, 1 an operation failed (a node did not start, a port
is busy, Maven Central unreachable ...), 2 bad input (unknown node, wrong
folder, bad option). Progress goes to stderr; results (status, nodetool and
cqlsh output) go to stdout.
"""

import argparse
import json
import os
import sys

from . import config, runtime
from .cluster import Cluster, default_dir
from .errors import ClusterError


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def _parser():
    # Global options are accepted before and after the verb.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir", default=argparse.SUPPRESS, help="cluster folder (default: $NEEDLE_CLUSTER_DIR or ./.cluster)"
    )
    common.add_argument(
        "--version",
        default=argparse.SUPPRESS,
        dest="cassandra_version",
        help=f"Cassandra version for 'up' (default: {runtime.DEFAULT_VERSION})",
    )
    p = argparse.ArgumentParser(
        prog="needle-cluster",
        parents=[common],
        description="Local Apache Cassandra clusters on 127.0.0.1..N: start, stop, kill, restart nodes.",
    )
    sub = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name, help, node=False):
        v = sub.add_parser(name, help=help, description=help, parents=[common])
        if node:
            v.add_argument("node", metavar="NODE", help="node number (2) or name (node2)")
        return v

    up = verb("up", "create an N-node cluster (or resume a stopped one) and start every node")
    up.add_argument("-n", "--nodes", type=int, default=1, help="number of nodes, 1-9 (default 1)")
    up.add_argument("--name", default="needle", help="cluster name (default needle)")
    up.add_argument("--with-needle", metavar="JAR", help="put this Needle plugin jar on every node's classpath")
    up.add_argument(
        "--query-handler",
        metavar="CLASS",
        default=config.DEFAULT_QUERY_HANDLER,
        help="custom query handler class with --with-needle (default %(default)s; '' for none)",
    )
    up.add_argument(
        "--jvm-opt",
        metavar="OPT",
        action="append",
        default=[],
        help="extra JVM option for every node (repeatable), e.g. --jvm-opt=-Dfoo=1",
    )
    up.add_argument(
        "--latency",
        metavar="PROFILE",
        help="delay internode messages as a network would: raw (none), lan (0.2 ms), az (three zones, 0.1-0.75 ms),"
        " wan (20 ms) or fixed:MS; a test-only agent (java/needle-testhooks)",
    )
    up.add_argument(
        "--latency-jar", metavar="JAR", help="the test-hooks agent jar (default: the one 'make build' builds)"
    )
    up.add_argument("--heap", metavar="SIZE", help=f"heap per node (default {config.DEFAULT_HEAP})")
    up.add_argument(
        "--yaml",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="extra top-level cassandra.yaml setting (repeatable)",
    )
    up.add_argument("--data-dirs", type=int, metavar="N", help="data directories per node (data, data2 ...; default 1)")
    up.add_argument("--timeout", type=int, default=180, help="seconds each node may take to start")
    up.add_argument(
        "--net",
        metavar="127.0.K",
        help=f"loopback block of a new cluster's nodes (K from 0 to 99; default ${config.NET_ENV}, else"
        f" {config.DEFAULT_NET}): clusters on different blocks run side by side",
    )

    st = verb("status", "show every node's state")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.add_argument("--ring", action="store_true", help="add the ring view of 'nodetool status' (slower)")

    verb("stop", "stop a node gracefully (SIGTERM, SIGKILL after 60 s)", node=True)
    k = verb("kill", "kill a node with SIGKILL, as in a crash", node=True)
    k.add_argument("--no-wait", action="store_true", help="return at once, without waiting for peers to see it down")
    s = verb("start", "start a stopped node", node=True)
    s.add_argument("--timeout", type=int, default=180, help="seconds the node may take to start")
    r = verb("restart", "stop and start a node", node=True)
    r.add_argument("--timeout", type=int, default=180, help="seconds the node may take to start")

    nt = verb("nodetool", "run nodetool against a node", node=True)
    nt.add_argument("args", nargs=argparse.REMAINDER, help="nodetool arguments")
    cq = verb("cql", "open cqlsh on a node (-e for one statement)", node=True)
    cq.add_argument("-e", "--execute", metavar="STATEMENT", help="run STATEMENT(s) and exit")
    lg = verb("logs", "show the end of a node's system.log", node=True)
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    lg.add_argument("-n", "--lines", type=int, default=50, help="number of lines (default 50)")
    lg.add_argument("--debug", action="store_true", help="show debug.log instead")
    lg.add_argument("--path", action="store_true", help="print the log's path only")

    ad = verb("add", "add a node to the running cluster: it bootstraps, streaming its ranges from the others")
    ad.add_argument("--timeout", type=int, default=540, help="seconds the new node may take to join")

    dn = verb("down", "stop every node and remove the cluster folder")
    dn.add_argument("--keep", action="store_true", help="keep the folder (data, logs) for a later 'up'")
    dn.add_argument("--kill", action="store_true", help="SIGKILL the nodes instead of stopping them gracefully")
    return p


def _status_table(st):
    needle = st.get("needle")
    lines = [
        f"cluster '{st['name']}'  Cassandra {st['version']}  {len(st['nodes'])} node(s)  {st['dir']}",
        f"needle: {needle['jar'] + ' (' + str(needle.get('query_handler')) + ')' if needle else 'off'}",
    ]
    ring = any("ring" in n for n in st["nodes"])
    head = ["NODE", "ADDRESS", "STATE", "PID", "CQL", "JMX"] + (["RING"] if ring else [])
    rows = [
        [n["name"], n["address"], n["state"], str(n["pid"] or "-"), str(n["native_port"]), str(n["jmx_port"])]
        + ([n.get("ring") or "?"] if ring else [])
        for n in st["nodes"]
    ]
    widths = [max(len(r[c]) for r in [head] + rows) for c in range(len(head))]
    for r in [head] + rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def run(argv):
    """Run one CLI command; returns the exit code."""
    args = _parser().parse_args(argv)
    d = getattr(args, "dir", None) or default_dir()
    verb = args.verb
    if verb == "up":
        yaml = {}
        for kv in args.yaml:
            key, sep, value = kv.partition("=")
            if not sep or not key.strip():
                raise ClusterError(
                    f"--yaml {kv!r} is not KEY=VALUE, e.g. --yaml storage_compatibility_mode=NONE", code=2
                )
            yaml[key.strip()] = value.strip()
        jvm_opts = list(args.jvm_opt)
        if args.latency:
            try:
                jvm_opts.append(config.latency_jvm_opt(args.latency, args.latency_jar))
            except (ValueError, FileNotFoundError) as e:
                raise ClusterError(str(e), code=2) from e
        Cluster.up(
            args.nodes,
            dir=d,
            version=getattr(args, "cassandra_version", None),
            name=args.name,
            with_needle=args.with_needle,
            query_handler=args.query_handler,
            jvm_opts=jvm_opts,
            heap=args.heap,
            yaml=yaml,
            timeout=args.timeout,
            log=_log,
            data_dirs=args.data_dirs,
            net=args.net,
        )
        return 0
    c = Cluster(d, log=_log)
    if verb == "down":
        c.down(keep=args.keep, kill=args.kill)
        return 0
    if verb == "add":
        print(config.node_name(c.add(timeout=args.timeout)), flush=True)
        return 0
    if verb == "status":
        st = c.status(ring=args.ring)
        print(json.dumps(st, indent=2) if args.json else _status_table(st), flush=True)
        return 0
    node = c.node(args.node)
    if verb == "stop":
        c.stop(node)
    elif verb == "kill":
        c.kill(node, wait_down=not args.no_wait)
    elif verb == "start":
        c.start(node, timeout=args.timeout)
    elif verb == "restart":
        c.restart(node, timeout=args.timeout)
    elif verb == "nodetool":
        if not c.pid(node):
            raise ClusterError(f"node{node} is down; start it with 'needle-cluster start {node}'")
        cmd = c.nodetool_command(node, *args.args)
        os.execv(cmd[0], cmd)
    elif verb == "cql":
        if not c.is_up(node):
            raise ClusterError(f"node{node} is not up; start it with 'needle-cluster start {node}'")
        cmd = c.cqlsh_command(node, *(["-e", args.execute] if args.execute is not None else []))
        os.execv(cmd[0], cmd)
    elif verb == "logs":
        path = c.node_dir(node) / "logs" / ("debug.log" if args.debug else "system.log")
        if args.path:
            print(path)
            return 0
        if not path.exists():
            raise ClusterError(f"{path} does not exist yet: node{node} has not been started")
        if args.follow:
            os.execvp("tail", ["tail", "-n", str(args.lines), "-F", str(path)])
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()[-args.lines :]
        print("\n".join(lines))
    return 0


def main(argv=None):
    """Entry point: run the command and exit with its code."""
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except ClusterError as e:
        if e.details:
            print(e.details.rstrip(), file=sys.stderr)
        print(f"needle-cluster: error: {e}", file=sys.stderr, flush=True)
        code = e.code
    except KeyboardInterrupt:
        print("needle-cluster: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)
