"""Tests of the summary and target checks (no matplotlib needed)."""

import json

import harness_results
import pytest
import scheme1
import scheme2
import staleness


def variant(p50_us, p99_us, **extra):
    return {
        "count": 100,
        "mean_us": p50_us,
        "min_us": 1.0,
        "p50_us": p50_us,
        "p95_us": p99_us,
        "p99_us": p99_us,
        "max_us": p99_us,
        "throughput_ops_s": 10.0,
        "wrong_results": 0,
        **extra,
    }


def run(point, mix, stock, cuckoo, mode="row", cache="warm", partitions=100, load=None):
    r = {
        "point": point,
        "x": 0,
        "cache": cache,
        "delete_mode": mode,
        "partitions": partitions,
        "table_bytes": {"stock": {"data": 2**30, "needle": 0, "sstables": 2}},
        "variants": {
            "stock": variant(stock, stock * 2),
            "needle-cuckoo": variant(cuckoo, cuckoo * 2, needle_skipped=5, needle_passed=95),
        },
        "ratio_p50_stock_over_cuckoo": round(stock / cuckoo, 3),
        "ratio_p99_stock_over_cuckoo": round(stock / cuckoo, 3),
    }
    if mix is not None:
        r["mix"] = mix
    if load is not None:
        r["load"] = load
    return r


def doc(name, runs, rows=100, op="lookup"):
    return {
        "name": name,
        "title": name.upper(),
        "reproduces": "paper, " + name,
        "started": "now",
        "duration_s": 1,
        "machine": {"cores": 2},
        "cassandra_version": "5.0.9",
        "experiment": {"run": {"op": op}, "dataset": {"rows_per_partition": rows, "row_bytes": 400}},
        "runs": runs,
    }


def test_targets_are_checked_on_the_rows_they_apply_to():
    docs = {
        "scheme1-table1": doc(
            "scheme1-table1",
            [run("deleted", {"deleted": 1.0}, 2000, 200), run("deleted", {"deleted": 1.0}, 400, 200, mode="partition")],
            rows=1000,
        ),
        "scheme1-table2": doc(
            "scheme1-table2", [run("0%", {"live": 1.0}, 500, 520), run("100%", {"deleted": 1.0}, 500, 200)]
        ),
        "scheme1-table4": doc("scheme1-table4", [run("0%", {"absent": 1.0}, 250, 180, mode=None)]),
        "scheme1-table5": doc("scheme1-table5", [run("0%", None, 1000, 1010, mode=None, load=0.0)], op="insert"),
    }
    checks = scheme1.check_targets(docs)
    by = {(c["table"], c["row"], c["delete_mode"]): c for c in checks}
    assert by[("table1", "deleted", "row")]["met"] is True  # 10x
    assert ("table1", "deleted", "partition") not in by  # the 5x target is for row tombstones
    assert by[("table2", "100%", "row")]["met"] is False  # 2.5x < 5x
    assert by[("table2", "0%", "row")]["met"] is False  # 500/520 = 0.96 < 0.97
    assert by[("table4", "0%", None)]["met"] is True
    assert by[("table5", "0%", None)]["met"] is True  # 0.99 >= 0.97
    assert len(checks) == 5


def test_summary_and_markdown(tmp_path):
    d = doc("scheme1-table3", [run("deleted", {"deleted": 1.0}, 600, 200, partitions=p) for p in (100, 200)])
    (tmp_path / "scheme1-table3").mkdir()
    (tmp_path / "scheme1-table3" / "results.json").write_text(json.dumps(d))
    rows = harness_results.summary_rows(d)
    assert rows[0]["label"] == "deleted, 100 partitions"  # growing data: the size is in the label
    assert rows[1]["variants"]["stock"]["p50_ms"] == 0.6
    assert rows[1]["variants"]["needle-cuckoo"]["needle_skipped"] == 5
    assert rows[0]["stock_data_gib"] == 1.0
    summary = scheme1.summarize_scheme1(tmp_path)
    saved = json.loads((tmp_path / "scheme1" / "summary.json").read_text())
    assert saved["tables"]["table3"]["rows"][1]["ratio_p50_stock_over_cuckoo"] == 3.0
    assert saved["targets_checked"] == 2 and saved["targets_met"] == 0
    assert summary["targets_checked"] == 2
    md = (tmp_path / "scheme1" / "tables.md").read_text()
    assert "| warm | row by row | deleted, 200 partitions | 0.600 / 1.200 | 0.200 / 0.400 | 3.00x |" in md


def test_a_missing_or_damaged_result_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="not found"):
        harness_results.load(tmp_path / "none" / "results.json")
    bad = tmp_path / "results.json"
    bad.write_text('{"runs": [')
    with pytest.raises(SystemExit, match="not valid JSON"):
        harness_results.load(bad)
    with pytest.raises(SystemExit, match="no scheme1 results"):
        scheme1.summarize_scheme1(tmp_path)


def remote_run(mix, remote, stock, cuckoo, floor=None, mode="partition"):
    r = run(f"{remote:.0%} remote", mix, stock, cuckoo, mode=mode)
    r["remote"] = remote
    if floor is not None:
        r["request_floor"] = {"query": "SELECT ...", **variant(floor, floor * 2)}
    return r


def test_node_filter_targets_compare_remote_with_local_and_with_the_floor(tmp_path):
    lan = doc(
        "scheme2-table7",
        [
            remote_run({"deleted": 1.0}, 0.0, 300, 200, floor=190),
            remote_run({"deleted": 1.0}, 1.0, 900, 220, floor=190),  # 4.1x; 1.1x local; 1.16x floor
            remote_run({"deleted": 1.0}, 1.0, 500, 250, floor=200, mode="row"),  # 2x; no local row
        ],
    )
    lan["experiment"]["cluster"] = {"nodes": 4, "latency": "lan", "replication_factor": 1}
    az = doc("scheme2-table9", [remote_run({"live": 1.0}, r, 1000, 1040) for r in (0.0, 1.0)])
    az["experiment"]["cluster"] = {"nodes": 4, "latency": "az", "replication_factor": 1}
    checks = scheme2.check_scheme2_targets({"scheme2-table7": lan, "scheme2-table9-az": az})
    got = {(c["table"], c["row"], c["delete_mode"], c["target"].split(":")[0]): (c["met"], c["value"]) for c in checks}
    gain = "remote lookups of keys with no live data, 100% remote, lan"
    assert got[("table7", "100% remote", "partition", gain)] == (True, 4.091)
    assert got[("table7", "100% remote", "row", gain)] == (False, 2.0)
    assert got[("table7", "100% remote", "partition", "a remote miss costs what a local miss costs")] == (True, 1.1)
    assert got[("table7", "100% remote", "partition", "skipped lookups")] == (True, 1.158)
    assert got[("table7", "100% remote", "row", "skipped lookups")] == (False, 1.25)
    assert got[("table9", "0% remote", "partition", "live-key lookups")] == (False, 0.962)
    assert len(checks) == 7
    for name, d in (("scheme2-table7", lan), ("scheme2-table9-az", az)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(d))
    summary = scheme2.summarize_scheme2(tmp_path)
    assert summary["targets_met"] == 3 and summary["targets_checked"] == 7
    saved = json.loads((tmp_path / "scheme2" / "summary.json").read_text())
    assert saved["runs"]["scheme2-table7"]["rows"][1]["request_floor_p50_ms"] == 0.19
    # A floor measured without its query (a read of system.local) is not used.
    del lan["runs"][1]["request_floor"]["query"]
    checks = scheme2.check_scheme2_targets({"scheme2-table7": lan})
    assert not any(c["target"].startswith("skipped lookups") and c["delete_mode"] == "partition" for c in checks)


def test_quorum_targets_apply_to_token_aware_quorum_runs():
    def quorum_doc(latency, nodes):
        d = doc(
            "scheme2-quorum",
            [
                run("never written", {"absent": 1.0}, 1200, 300),  # 4x
                run("deleted", {"deleted": 1.0}, 1000, 400, mode="partition"),  # 2.5x
                run("live", {"live": 1.0}, 1000, 1020),  # 0.98
            ],
        )
        d["experiment"]["run"].update(coordinator="token-aware", consistency="QUORUM")
        d["experiment"]["cluster"] = {"nodes": nodes, "latency": latency, "replication_factor": 3}
        return d

    checks = scheme2.check_scheme2_targets(
        {"scheme2-quorum": quorum_doc("lan", 3), "scheme2-quorum-6-az": quorum_doc("az", 6)}
    )
    got = {(c["latency"], c["row"]): (c["met"], c["value"], c["target"]) for c in checks}
    assert len(checks) == 6
    assert got[("lan", "never written")][:2] == (True, 4.0)
    assert got[("lan", "deleted")][:2] == (False, 2.5)
    assert got[("az", "never written")][:2] == (False, 4.0), "5x at az"
    assert got[("lan", "live")][:2] == (True, 0.98)
    assert got[("az", "never written")][2].startswith("QUORUM lookups of keys with no live data, token-aware, az")
    fixed = quorum_doc("lan", 3)
    fixed["experiment"]["run"]["coordinator"] = "fixed"
    assert scheme2.check_scheme2_targets({"scheme2-quorum": fixed}) == [], "not the routed setting"


def staleness_doc(idle_p999, load_p999, violations, full_bytes, paced_bytes):
    def probe(p999):
        return {
            "keys": 1000,
            "reads": 5000,
            "misses": 40,
            "visible_at_every_coordinator_ms": {"p50": 2.0, "p99": 5.0, "p99.9": p999, "max": p999 + 1},
            "curve": [
                {"from_ms": 0.0, "to_ms": 0.5, "reads": 100, "misses": 30, "miss_fraction": 0.3},
                {"from_ms": 0.5, "to_ms": 1.0, "reads": 100, "misses": 10, "miss_fraction": 0.1},
            ],
        }

    def cost(per_change):
        return {
            "stock": {"inserts_per_s": 3000, "wire_bytes_per_change_per_receiving_node": None},
            "needle-cuckoo": {"inserts_per_s": 2900, "wire_bytes_per_change_per_receiving_node": per_change},
        }

    return {
        "nodes": 4,
        "latency": "lan",
        "staleness_bound": "1s",
        "method": "...",
        "probe": {
            "idle": {"needle-cuckoo": probe(idle_p999), "stock": probe(1.0), "cassandra_mutation_delivery_ms": {}},
            "load": {"needle-cuckoo": probe(load_p999), "stock": probe(1.0), "load": {"inserts_per_s": 1600}},
        },
        "violations": [{"key": 1}] * violations,
        "sync_cost": {
            "idle_internode_bytes_per_s": 1000,
            "full_rate": cost(full_bytes),
            "paced_200_per_s": cost(paced_bytes),
        },
    }


def test_staleness_targets_are_the_window_per_phase_the_bound_and_the_sync_bytes(tmp_path):
    checks = staleness.check_staleness_targets(staleness_doc(12.5, 251.0, 0, 30.2, 140.0))
    got = {(c["row"], c["target"].split(" (")[0].split(":")[0]): (c["met"], c["value"]) for c in checks}
    assert got[("idle", "99.9% of new keys held by every coordinator's copy within 50 ms")] == (True, 12.5)
    assert got[("load", "99.9% of new keys held by every coordinator's copy within 250 ms")] == (False, 251.0)
    assert got[("idle and load", "no read that began more than S")] == (True, 0)
    assert got[("full rate (2,900 inserts/s)", "sync")] == (True, 30.2)
    assert got[("paced 200 per s (2,900 inserts/s)", "sync")] == (False, 140.0)
    assert all(c["table"] == "staleness" and c["latency"] == "lan" for c in checks)
    assert len(checks) == 5
    bad = staleness.check_staleness_targets(staleness_doc(60.0, 10.0, 2, None, 10.0))
    assert [c["met"] for c in bad] == [False, True, False, False, True]
    # Where the probe measured the sync's own part (each owner's wait), that is what is checked.
    split = staleness_doc(400.0, 900.0, 0, 30.2, 20.0)
    split["probe"]["idle"]["needle_sync_wait_ms"] = {"node1": {"p99.9": 6.0}, "node2": {"p99.9": 48.0}}
    split["probe"]["load"]["needle_sync_wait_ms"] = {"node1": {"p99.9": 120.0}, "node2": {"p99.9": 260.0}}
    own = {c["row"]: (c["met"], c["value"], c["target"]) for c in staleness.check_staleness_targets(split)}
    assert own["idle"][:2] == (True, 48.0), "the slowest owner's"
    assert own["load"][:2] == (False, 260.0)
    assert "the sync's own part" in own["idle"][2]
    # The summary of the node-filter tables takes the probe's file when it is there.
    lan = doc("scheme2-table9", [remote_run({"live": 1.0}, r, 1000, 1000) for r in (0.0, 1.0)])
    lan["experiment"]["cluster"] = {"nodes": 4, "latency": "lan", "replication_factor": 1}
    (tmp_path / "scheme2-table9").mkdir()
    (tmp_path / "scheme2-table9" / "results.json").write_text(json.dumps(lan))
    (tmp_path / "scheme2").mkdir()
    (tmp_path / "scheme2" / "staleness.json").write_text(json.dumps(staleness_doc(12.5, 20.0, 0, 30.2, 20.0)))
    summary = scheme2.summarize_scheme2(tmp_path)
    assert summary["targets_checked"] == 2 + 5 and summary["targets_met"] == 7
    assert summary["staleness"]["probe"]["idle"]["needle-cuckoo"]["curve"] == [[0.0, 0.3], [0.5, 0.1]]
    assert summary["staleness"]["probe"]["load"]["load"] == {"inserts_per_s": 1600}


def resources(cpu_ms_per_op, sync_per_op):
    return {
        "seconds": 60.0,
        "ops": 6000,
        "cpu_s": cpu_ms_per_op * 6,
        "cpu_pct_of_one_core": 150.0,
        "cpu_ms_per_op": cpu_ms_per_op,
        "internode_sent_bytes_per_op": 900.0,
        "sync_bytes_per_op": sync_per_op,
        "internode_sent_bytes_s": 90000,
        "machine_busy_pct": 97.0,
    }


def test_load_targets_are_insert_latency_and_cpu_per_insert(tmp_path):
    r = run("load", None, 1000, 1010, mode=None, load=0.0)
    r["rate"] = 250.0
    r["variants"]["stock"]["resources"] = resources(2.0, 0.0)
    r["variants"]["needle-cuckoo"]["resources"] = resources(2.2, 45.0)
    # As fast as the threads go: CPU per insert is not compared (the variants did unequal work).
    fast = run("fast", None, 1000, 1000, mode=None, load=0.0)
    fast["variants"]["stock"]["resources"] = resources(2.0, 0.0)
    fast["variants"]["needle-cuckoo"]["resources"] = resources(3.0, 45.0)
    d = doc("scheme2-table10", [r, fast], op="insert")
    d["experiment"]["cluster"] = {"nodes": 6, "latency": "az", "replication_factor": 3}
    idle = {"seconds": 180.0, "cpu_pct_of_one_core": 20.0, "internode_sent_bytes_s": 30000, "sync_bytes_s": 2000}
    d["resources"] = {"interval_s": 5, "timeline": [], "idle_before": idle, "idle_after_with_needle": idle}
    checks = scheme2.check_scheme2_targets({"scheme2-table10": d})
    got = {(c["row"], c["target"].split(":")[0]): (c["met"], c["value"]) for c in checks}
    assert got[("load", "inserts")] == (True, 0.990)
    assert got[("load", "CPU during the load")] == (False, 1.1)
    assert got[("fast", "inserts")] == (True, 1.0)
    assert got[("fast", "insert capacity as fast as the load threads go")] == (True, 1.0)
    assert len(checks) == 4
    assert all(c["table"] == "table10" and c["latency"] == "az" for c in checks)
    md = harness_results.markdown({"scheme2-table10": d})
    assert "| load | needle-cuckoo | 10 | 150.0 | 2.2 | 900.0 | 45.0 |" in md
    assert "| idle after with needle | 180.0 | 20.0 | 30,000 | 2,000 |" in md
    (tmp_path / "scheme2-table10").mkdir()
    (tmp_path / "scheme2-table10" / "results.json").write_text(json.dumps(d))
    summary = scheme2.summarize_scheme2(tmp_path)
    row = summary["runs"]["scheme2-table10"]["rows"][0]
    assert row["variants"]["needle-cuckoo"]["resources"]["sync_bytes_per_op"] == 45.0
    assert summary["runs"]["scheme2-table10"]["idle"]["idle_before"] == idle
    # Without resource figures only the latency targets are checked.
    del r["variants"]["stock"]["resources"]
    assert len(scheme2.check_scheme2_targets({"scheme2-table10": d})) == 3
    # The copies' memory after the load, per key a node publishes: at most 2 x (RF - 1) = 4.
    d["resources"]["node_filter_copy_memory"] = {
        "needle-cuckoo": {"copy_bytes_per_own_key": 4.3, "nodes": []},
        "needle-bloom": {"copy_bytes_per_own_key": 3.0, "nodes": []},
    }
    memory = [c for c in scheme2.check_scheme2_targets({"scheme2-table10": d}) if c["target"].startswith("memory")]
    assert [(c["met"], c["value"]) for c in memory] == [(False, 4.3)]
