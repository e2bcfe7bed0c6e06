"""Cassandra's own tools (nodetool, cqlsh) against the nodes of a cluster."""

import subprocess

from . import config, runtime
from .errors import ClusterError


class NodeTools:
    """nodetool and cqlsh for a node, given by number or name; mixed into Cluster, whose node
    lookup, metadata, addresses and process state they use."""

    def nodetool_command(self, node, *args):
        """The java command line of ``nodetool ARGS`` against ``node``."""
        i = self.node(node)
        m = self._require()
        java, _ = runtime.find_java()
        jars = runtime.resolve_cassandra(m["version"], log=self.log)
        tools = runtime.cassandra_dir(m["version"]) / "logback-tools.xml"
        if not tools.is_file() or tools.read_text() != config.tools_logback_xml():
            tools.write_text(config.tools_logback_xml())
        return config.nodetool_command(java, jars, tools, i, args, self.net)

    def nodetool(self, node, *args, check=True):
        """Run nodetool against a node; return its output (raise on failure when ``check``)."""
        i = self.node(node)
        if check and not self.pid(i):
            raise ClusterError(f"{config.node_name(i)} is down; start it with 'needle-cluster start {i}'")
        res = subprocess.run(self.nodetool_command(i, *args), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if check and res.returncode != 0:
            raise ClusterError(
                f"nodetool {' '.join(args)} on {config.node_name(i)} failed "
                f"(exit {res.returncode}): {res.stderr.strip()[-300:]}"
            )
        return res.stdout

    def cqlsh_command(self, node, *args):
        """The cqlsh command line connected to ``node`` (cqlsh installed on first use)."""
        i = self.node(node)
        exe = runtime.ensure_cqlsh(log=self.log)
        return [
            str(exe),
            self.address(i),
            str(config.NATIVE_PORT),
            "--connect-timeout",
            "20",
            "--request-timeout",
            "30",
            *args,
        ]

    def cql(self, node, statement, check=True):
        """Run CQL (one or more ';'-separated statements, cqlsh commands allowed) on a node.

        Returns cqlsh's output; raises a ClusterError when cqlsh reports an
        error and ``check`` is true.
        """
        i = self.node(node)
        if not self.is_up(i):
            raise ClusterError(f"{config.node_name(i)} is not up; start it with 'needle-cluster start {i}'")
        res = subprocess.run(
            self.cqlsh_command(i, "-e", statement), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        if check and res.returncode != 0:
            raise ClusterError(f"CQL on {config.node_name(i)} failed: {(res.stderr or res.stdout).strip()[-500:]}")
        return res.stdout
