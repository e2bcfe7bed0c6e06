"""Fast checks of the generated files and command lines (no Cassandra started)."""

import json

import pytest

from conftest import run
from needle_cluster import ClusterError, config
from needle_cluster.cluster import Cluster

JARS = ["/cache/lib/cassandra-all-5.0.9.jar", "/cache/lib/jamm-0.4.0.jar"]


def test_needle_jar_and_options_land_on_the_command_line(tmp_path):
    cmd = config.node_command(
        "/usr/bin/java",
        JARS,
        tmp_path / "node2",
        2,
        heap="512M",
        needle_jar="/x/needle.jar",
        query_handler="dev.needle.cassandra.NeedleQueryHandler",
        jvm_opts=["-Dneedle.extra=1"],
    )
    cp = cmd[cmd.index("-cp") + 1].split(":")
    assert cp[-1] == "/x/needle.jar", "the plugin goes after Cassandra's jars"
    assert set(JARS) <= set(cp)
    assert "-Dcassandra.custom_query_handler_class=dev.needle.cassandra.NeedleQueryHandler" in cmd
    assert "-Dneedle.extra=1" in cmd
    assert cmd[-1] == config.MAIN_CLASS
    assert "-Xmx512M" in cmd and "-Dcassandra.jmx.local.port=7209" in cmd
    assert f"{config.MARKER}{tmp_path / 'node2'}" in cmd
    assert "-javaagent:/cache/lib/jamm-0.4.0.jar" in cmd


def test_no_query_handler_property_without_a_class(tmp_path):
    cmd = config.node_command("java", JARS, tmp_path / "node1", 1, needle_jar="/x/needle.jar", query_handler=None)
    assert not any("custom_query_handler_class" in a for a in cmd)
    assert cmd[cmd.index("-cp") + 1].endswith(":/x/needle.jar")


def test_yaml_per_node(tmp_path):
    y = config.node_yaml(tmp_path / "node3", 3, 3, "needle", overrides={"phi_convict_threshold": "5"})
    assert "listen_address: 127.0.0.3" in y and "rpc_address: 127.0.0.3" in y
    assert f"commitlog_directory: '{tmp_path / 'node3' / 'commitlog'}'" in y
    assert 'seeds: "127.0.0.1:7000,127.0.0.2:7000,127.0.0.3:7000"' in y
    assert "phi_convict_threshold: 5" in y
    assert "cluster_name: 'needle'" in y


def test_a_cluster_on_another_loopback_block(tmp_path):
    net = config.parse_net(" 127.0.07 ")
    assert net == "127.0.7"
    y = config.node_yaml(tmp_path / "node2", 2, 3, "needle", net=net)
    assert "listen_address: 127.0.7.2" in y and "broadcast_rpc_address: 127.0.7.2" in y
    assert 'seeds: "127.0.7.1:7000,127.0.7.2:7000,127.0.7.3:7000"' in y
    cmd = config.node_command("java", JARS, tmp_path / "node2", 2, net=net)
    assert "-Dcassandra.jmx.local.port=7909" in cmd, "JMX ports of block K start 100 K above 7199"
    assert config.nodetool_command("java", JARS, "/t.xml", 2, ["status"], net)[-3:] == ["-p", "7909", "status"]
    ports = {config.jmx_port(i, f"127.0.{k}") for k in range(100) for i in range(1, 10)}
    assert len(ports) == 900, "no two nodes of any blocks share a JMX port"
    for bad in ("127.0.100", "127.1.0", "10.0.0", "127.0.0.1", "127.0.x", ""):
        with pytest.raises(ValueError, match="loopback block"):
            config.parse_net(bad)


def test_several_data_directories(tmp_path):
    y = config.node_yaml(tmp_path / "node1", 1, 1, "needle", data_dir_count=3)
    listed = [line.strip()[2:].strip("'") for line in y.splitlines() if line.startswith("  - '")]
    assert listed == [str(tmp_path / "node1" / d) for d in ("data", "data2", "data3")]
    one = config.node_yaml(tmp_path / "node1", 1, 1, "needle")
    assert f"data_file_directories:\n  - '{tmp_path / 'node1' / 'data'}'\n" in one


def test_an_added_node_bootstraps(tmp_path):
    y = config.node_yaml(tmp_path / "node4", 4, 4, "needle", token_nodes=3)
    assert "initial_token" not in y
    assert "auto_bootstrap: true" in y
    assert 'seeds: "127.0.0.1:7000,127.0.0.2:7000,127.0.0.3:7000"' in y
    first = config.node_yaml(tmp_path / "node1", 1, 4, "needle", token_nodes=3)
    assert f"initial_token: {','.join(str(t) for t in config.initial_tokens(1, 3))}" in first
    assert "auto_bootstrap: false" in first


def test_tokens_are_distinct_and_balanced():
    n = 3
    tokens = sorted(t for i in range(1, n + 1) for t in config.initial_tokens(i, n))
    assert len(set(tokens)) == n * config.NUM_TOKENS
    assert all(-(2**63) <= t < 2**63 for t in tokens)
    gaps = {b - a for a, b in zip(tokens, tokens[1:], strict=False)}
    assert len(gaps) == 1, "equal spacing"


def test_node_names(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "cluster.json").write_text(
        json.dumps({"tool": "needle-cluster", "format": 1, "name": "needle", "version": "5.0.9", "nodes": 3})
    )
    c = Cluster(d, log=None)
    assert [c.node("2"), c.node("node3"), c.node(1), c.node("NODE1")] == [2, 3, 1, 1]
    for bad in ("0", "4", "node", "nodeX", "-1"):
        with pytest.raises(ClusterError) as e:
            c.node(bad)
        assert e.value.code == 2 and "node1..node3" in str(e.value)


def test_usage_errors_exit_2(tmp_path):
    res = run(tmp_path / "none", "status")
    assert res.returncode == 2 and "no cluster in" in res.stderr
    res = run(tmp_path / "none", "up", "-n", "0")
    assert res.returncode == 2 and "choose 1 to 9" in res.stderr
    res = run(tmp_path / "none", "up", "--data-dirs", "0")
    assert res.returncode == 2 and "choose 1 to 8" in res.stderr
    res = run(tmp_path / "none", "up", "--yaml", "novalue")
    assert res.returncode == 2 and "KEY=VALUE" in res.stderr
    res = run(tmp_path / "none", "up", "--latency", "satellite")
    assert res.returncode == 2 and "raw, lan, az, wan" in res.stderr
    res = run(tmp_path / "none", "up", "--latency", "lan", "--latency-jar", str(tmp_path / "missing.jar"))
    assert res.returncode == 2 and "make build" in res.stderr
    res = run(tmp_path / "none", "up", "--with-needle", str(tmp_path / "missing.jar"))
    assert res.returncode == 2 and "does not exist" in res.stderr
    assert not (tmp_path / "none").exists(), "a failed up leaves no folder behind"


def test_latency_profiles_become_an_agent_option(tmp_path):
    jar = tmp_path / "hooks.jar"
    jar.write_bytes(b"")
    assert config.latency_jvm_opt("LAN", jar) == f"-javaagent:{jar.resolve()}=lan"
    assert config.latency_jvm_opt("fixed:0.3", jar).endswith("=fixed:0.3")
    for bad in ("fixed:-1", "fixed:x", "", "moon"):
        with pytest.raises(ValueError):
            config.latency_jvm_opt(bad, jar)
