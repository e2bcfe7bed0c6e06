"""The staleness probe's results (staleness.json): its summary and its targets."""

from harness_results import target_check

# The staleness targets, per phase (ms): p99.9 of the sync's own part of a copy's lag (how long a new
# key waited on its owner for its batch; Cassandra's delivery of the batch apart), or, in files from
# before that was measured, of the time until every coordinator holds a new key; and the wire bytes of
# the sync per changed key and receiving node.
STALENESS_MS = {"idle": 50, "load": 250}


SYNC_BYTES_PER_CHANGE = 32


def staleness_check(target, row, ok, value, latency):
    """One checked target of the staleness probe, in the form of the tables' checks."""
    return target_check(
        target, "staleness", {"label": row, "cache": "warm", "delete_mode": None}, ok, value, latency=latency
    )


def check_staleness_targets(doc):
    """The window of bounded staleness and the sync's bytes, from the staleness probe's file."""
    latency = doc["latency"]
    checks = []
    for phase, bound in STALENESS_MS.items():
        sync_wait = doc["probe"][phase].get("needle_sync_wait_ms")
        if sync_wait:
            p999 = max(node["p99.9"] for node in sync_wait.values())
            target = f"99.9% of new keys sent by their owner within {bound} ms ({phase}; the sync's own part)"
        else:
            p999 = doc["probe"][phase]["needle-cuckoo"]["visible_at_every_coordinator_ms"]["p99.9"]
            target = f"99.9% of new keys held by every coordinator's copy within {bound} ms ({phase})"
        checks.append(staleness_check(target, phase, p999 <= bound, p999, latency))
    checks.append(
        staleness_check(
            f"no read that began more than S ({doc['staleness_bound']}) after the write missed it",
            "idle and load",
            not doc["violations"],
            len(doc["violations"]),
            latency,
        )
    )
    for phase, tables in doc["sync_cost"].items():
        if phase.startswith("idle"):
            continue
        per_change = tables["needle-cuckoo"]["wire_bytes_per_change_per_receiving_node"]
        checks.append(
            staleness_check(
                f"sync: at most {SYNC_BYTES_PER_CHANGE} bytes on the wire per changed key per receiving node",
                f"{phase.replace('_', ' ')} ({tables['needle-cuckoo']['inserts_per_s']:,} inserts/s)",
                per_change is not None and per_change <= SYNC_BYTES_PER_CHANGE,
                per_change,
                latency,
            )
        )
    return checks


def staleness_summary(doc):
    """The probe's figures with each table's curve as (bin start, miss fraction) points; a phase's
    other entries (the load, Cassandra's mutation delivery) as they are."""
    return {
        "nodes": doc["nodes"],
        "latency": doc["latency"],
        "staleness_bound": doc["staleness_bound"],
        "method": doc["method"],
        "probe": {
            phase: {
                name: ({k: v for k, v in r.items() if k != "curve"} | {"curve": curve_points(r)}) if "curve" in r else r
                for name, r in tables.items()
            }
            for phase, tables in doc["probe"].items()
        },
        "violations": len(doc["violations"]),
        "sync_cost": doc["sync_cost"],
    }


def curve_points(probe):
    """(bin start in ms, fraction of reads that missed) of one probe's curve."""
    return [[c["from_ms"], round(c["miss_fraction"], 5)] for c in probe["curve"]]
