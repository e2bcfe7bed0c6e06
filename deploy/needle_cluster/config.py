"""Each node's files: cassandra.yaml, logback.xml and the java command line.

Cassandra's published jar holds no configuration, so the tool writes a small
cassandra.yaml of its own with only the settings a local cluster needs;
everything else keeps Cassandra's built-in defaults.
"""

import re
from pathlib import Path
from urllib.parse import quote
from xml.sax.saxutils import escape

# The first three nodes are seeds: a node restarts only while some seed other
# than itself answers, so with one seed a crashed node1 would pin the others.
SEEDS = 3
NATIVE_PORT = 9042
STORAGE_PORT = 7000
# JMX listens on 127.0.0.1 for every node, so each node needs its own port.
JMX_BASE = 7199
JMX_STEP = 10
# A cluster's nodes listen on NET.1, NET.2 ... where NET is 127.0.K (K from 0 to 99, each with
# its own JMX ports): clusters on different blocks run side by side on one machine.
DEFAULT_NET = "127.0.0"
NET_ENV = "NEEDLE_CLUSTER_NET"
NUM_TOKENS = 16
DEFAULT_HEAP = "1G"
DEFAULT_QUERY_HANDLER = "dev.needle.cassandra.NeedleQueryHandler"
MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"
NODETOOL_CLASS = "org.apache.cassandra.tools.NodeTool"
# The command-line property that ties a process to its node folder: a pid is
# acted on only when its command line carries this for the node in question.
MARKER = "-Dneedle.node.dir="

# Module access Cassandra needs on Java 11/17 (as in its jvm17-server.options).
JPMS_OPTIONS = [
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports",
    "java.sql/java.sql=ALL-UNNAMED",
    "--add-exports",
    "java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports",
    "jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports",
    "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports",
    "jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens",
    "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens",
    "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.net=ALL-UNNAMED",
]


# Emulated internode latency (the test-hooks agent, java/needle-testhooks): profile names.
LATENCY_PROFILES = ("raw", "lan", "az", "wan")
DEFAULT_LATENCY_JAR = (
    Path(__file__).resolve().parents[2] / "java" / "needle-testhooks" / "target" / "needle-testhooks-0.1.0-SNAPSHOT.jar"
)


def latency_jvm_opt(profile, jar=None):
    """The JVM option that delays each node's internode messages by ``profile``; raises ValueError if unknown."""
    name = (profile or "").strip().lower()
    ok = name in LATENCY_PROFILES
    if name.startswith("fixed:"):
        try:
            ok = 0 <= float(name[6:]) <= 10_000
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(
            f"unknown latency profile {profile!r}: use raw, lan, az, wan or fixed:MILLISECONDS (0 to 10000)"
        )
    path = Path(jar).expanduser().resolve() if jar else DEFAULT_LATENCY_JAR
    if not path.is_file():
        raise FileNotFoundError(
            f"the test-hooks jar {path} does not exist; build it first (make build) or give --latency-jar"
        )
    return f"-javaagent:{path}={name}"


def node_name(i):
    return f"node{i}"


def parse_net(text):
    """The loopback block ``127.0.K`` (K from 0 to 99) named by ``text``; ValueError otherwise."""
    m = re.fullmatch(r"127\.0\.(\d{1,2})", str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a loopback block 127.0.K with K from 0 to 99 (e.g. 127.0.1)")
    return f"127.0.{int(m.group(1))}"


def node_address(i, net=DEFAULT_NET):
    """Node i listens on NET.i (the whole 127/8 range is loopback on Linux)."""
    return f"{net}.{i}"


def seeds(n, net=DEFAULT_NET):
    """The seed list of an n-node cluster, as cassandra.yaml wants it."""
    return ",".join(f"{node_address(i, net)}:{STORAGE_PORT}" for i in range(1, min(n, SEEDS) + 1))


def jmx_port(i, net=DEFAULT_NET):
    """Node i's JMX port on 127.0.0.1: 7199, 7209 ... on 127.0.0, 100 more per block after it."""
    return JMX_BASE + 100 * int(net.rsplit(".", 1)[1]) + (i - 1) * JMX_STEP


def initial_tokens(i, n, num_tokens=NUM_TOKENS):
    """Evenly interleaved vnode tokens for node i of n (Murmur3 range).

    A fresh cluster gets fixed, balanced tokens so that nodes need not
    bootstrap one after another and key placement is the same on every run.
    """
    total = n * num_tokens
    step = (2**64) // total
    return [-(2**63) + (j * n + (i - 1)) * step for j in range(num_tokens)]


def _q(value):
    """A single-quoted YAML scalar (paths may hold spaces, ':' or '#')."""
    return "'" + str(value).replace("'", "''") + "'"


def data_dirs(node_dir, count=1):
    """A node's data directories: data, data2, data3 ... (``count`` of them)."""
    d = Path(node_dir)
    return [d / "data"] + [d / f"data{k}" for k in range(2, count + 1)]


def node_yaml(node_dir, i, n, cluster_name, overrides=None, data_dir_count=1, token_nodes=None, net=DEFAULT_NET):
    """Text of node i's cassandra.yaml; ``overrides`` maps top-level keys to YAML values.

    The first ``token_nodes`` nodes (default: all ``n``) get fixed, interleaved tokens and start
    without bootstrapping; a node added later (i > token_nodes) bootstraps, with tokens Cassandra
    allocates, streaming its ranges from the others.
    """
    d = Path(node_dir)
    addr = node_address(i, net)
    token_nodes = token_nodes or n
    added = i > token_nodes
    settings = [
        ("cluster_name", _q(cluster_name)),
        ("num_tokens", str(NUM_TOKENS)),
        ("initial_token", None if added else ",".join(str(t) for t in initial_tokens(i, token_nodes))),
        ("allocate_tokens_for_local_replication_factor", "3"),
        ("partitioner", "org.apache.cassandra.dht.Murmur3Partitioner"),
        # All nodes of a new cluster start empty with fixed tokens: nothing to stream.
        ("auto_bootstrap", "true" if added else "false"),
        ("data_file_directories", "".join(f"\n  - {_q(p)}" for p in data_dirs(d, data_dir_count))),
        ("commitlog_directory", _q(d / "commitlog")),
        ("saved_caches_directory", _q(d / "saved_caches")),
        ("hints_directory", _q(d / "hints")),
        ("cdc_raw_directory", _q(d / "cdc_raw")),
        ("commitlog_sync", "periodic"),
        ("commitlog_sync_period", "10000ms"),
        ("commitlog_segment_size", "32MiB"),
        ("commitlog_total_space", "512MiB"),
        (
            "seed_provider",
            "\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider"
            f'\n    parameters:\n      - seeds: "{seeds(token_nodes, net)}"',
        ),
        ("listen_address", addr),
        ("broadcast_address", addr),
        ("rpc_address", addr),
        ("broadcast_rpc_address", addr),
        ("storage_port", str(STORAGE_PORT)),
        ("native_transport_port", str(NATIVE_PORT)),
        ("start_native_transport", "true"),
        ("endpoint_snitch", "SimpleSnitch"),
        # Sized for a 2-core machine running several nodes at once.
        ("concurrent_reads", "8"),
        ("concurrent_writes", "16"),
        ("concurrent_counter_writes", "8"),
        ("concurrent_materialized_view_writes", "8"),
        ("concurrent_compactors", "1"),
        ("compaction_throughput", "64MiB/s"),
        ("memtable_heap_space", "128MiB"),
        ("memtable_offheap_space", "128MiB"),
        ("key_cache_size", "16MiB"),
        ("counter_cache_size", "8MiB"),
        ("file_cache_size", "64MiB"),
        # DROP/TRUNCATE would otherwise leave snapshots filling the disk.
        ("auto_snapshot", "false"),
    ]
    merged = {k: v for k, v in settings if v is not None}
    for key, value in (overrides or {}).items():
        merged[key] = value
    lines = [f"# Written by needle-cluster for node{i}; regenerated on every start."]
    for key, value in merged.items():
        sep = ":" if value.startswith("\n") else ": "
        lines.append(f"{key}{sep}{value}")
    return "\n".join(lines) + "\n"


def logback_xml(node_dir):
    """Text of node logback.xml: system.log (INFO) and debug.log (DEBUG), rolled by size."""
    logs = Path(escape(str(Path(node_dir) / "logs")))

    def rolling(name, path, level, pattern):
        return f"""  <appender name="{name}" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>{level}</level></filter>
    <file>{path}</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>{path}.%i.zip</fileNamePattern>
      <minIndex>1</minIndex>
      <maxIndex>5</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>50MB</maxFileSize>
    </triggeringPolicy>
    <encoder><pattern>{pattern}</pattern></encoder>
  </appender>
"""

    pattern = "%-5level [%thread] %date{ISO8601} %F:%L - %msg%n"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- Written by needle-cluster. -->\n"
        '<configuration scan="false" debug="false">\n'
        + rolling("SYSTEMLOG", logs / "system.log", "INFO", pattern)
        + rolling("DEBUGFILE", logs / "debug.log", "DEBUG", pattern)
        + """  <appender name="DEBUGLOG" class="ch.qos.logback.classic.AsyncAppender">
    <queueSize>1024</queueSize>
    <discardingThreshold>0</discardingThreshold>
    <includeCallerData>true</includeCallerData>
    <appender-ref ref="DEBUGFILE" />
  </appender>
  <root level="INFO">
    <appender-ref ref="SYSTEMLOG" />
    <appender-ref ref="DEBUGLOG" />
  </root>
  <logger name="org.apache.cassandra" level="DEBUG" />
  <logger name="dev.needle" level="DEBUG" />
</configuration>
"""
    )


def tools_logback_xml():
    """logback.xml for nodetool: warnings only, to stderr."""
    return """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %date{HH:mm:ss.SSS} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR" /></root>
</configuration>
"""


def classpath(node_dir, jars, needle_jar=None):
    """Node classpath: its conf folder, Cassandra's jars, then the Needle jar.

    The Needle jar goes last so nothing in it can shadow a Cassandra class.
    """
    parts = [str(Path(node_dir) / "conf")] + [str(j) for j in jars]
    if needle_jar:
        parts.append(str(needle_jar))
    return ":".join(parts)


def node_command(
    java, jars, node_dir, i, heap=DEFAULT_HEAP, needle_jar=None, query_handler=None, jvm_opts=(), net=DEFAULT_NET
):
    """The full java command line that runs node i from ``node_dir``."""
    d = Path(node_dir)
    jamm = [j for j in jars if Path(j).name.startswith("jamm-")]
    cmd = [
        str(java),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:+ParallelRefProcEnabled",
        "-XX:MaxGCPauseMillis=300",
        "-XX:+PerfDisableSharedMem",
        "-XX:+ExitOnOutOfMemoryError",
        f"-XX:ErrorFile={d / 'logs' / 'hs_err_%p.log'}",
        "-ea",
        "-da:net.openhft...",
        "-Djava.net.preferIPv4Stack=true",
        "-Djdk.attach.allowAttachSelf=true",
        *JPMS_OPTIONS,
        "-Dio.netty.tryReflectionSetAccessible=true",
        "-Dio.netty.allocator.useCacheForAllThreads=true",
        "-Dio.netty.allocator.maxOrder=11",
    ]
    if jamm:  # Cassandra measures object sizes with jamm as a Java agent.
        cmd.append(f"-javaagent:{jamm[0]}")
    cmd += [
        f"-Dcassandra.jmx.local.port={jmx_port(i, net)}",
        "-Dcassandra-foreground=yes",
        f"-Dcassandra.config=file://{quote(str(d / 'conf' / 'cassandra.yaml'))}",
        f"-Dcassandra.storagedir={d}",
        f"-Dcassandra.logdir={d / 'logs'}",
        f"-Dlogback.configurationFile={d / 'conf' / 'logback.xml'}",
        # A local cluster has nothing to wait for: gossip on loopback is instant.
        "-Dcassandra.ring_delay_ms=1000",
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        # A stopping node announces it and waits for the peers to hear (2 s by default).
        "-Dcassandra.shutdown_announce_in_ms=500",
        f"{MARKER}{d}",
    ]
    if query_handler:
        cmd.append(f"-Dcassandra.custom_query_handler_class={query_handler}")
    cmd += list(jvm_opts)
    cmd += ["-cp", classpath(d, jars, needle_jar), MAIN_CLASS]
    return cmd


def nodetool_command(java, jars, tools_logback, i, args, net=DEFAULT_NET):
    """java command line running nodetool against node i's JMX port."""
    return [
        str(java),
        "-Xms64m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true",
        *JPMS_OPTIONS,
        f"-Dlogback.configurationFile={tools_logback}",
        "-cp",
        ":".join(str(j) for j in jars),
        NODETOOL_CLASS,
        "-h",
        "127.0.0.1",
        "-p",
        str(jmx_port(i, net)),
        *args,
    ]
