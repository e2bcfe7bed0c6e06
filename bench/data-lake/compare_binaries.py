"""Two builds of ``needle`` side by side on a table that ``object_store.py --keep`` left on the
benchmark's server: each build publishes its own index of the same files (``TABLE-index-a`` and
``-b``, in the format it writes), then looks up the same present and absent keys through the same
20 ms proxy, the two builds in alternating order. Prints the medians of time, index bytes and
round trips per build and kind.

    bench/data-lake/compare_binaries.py OLD/needle NEW/needle --queries 15
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
from pathlib import Path

from latency_proxy import LatencyProxy
from object_store import needle_env, needle_lookup, start_server
from tables import key_of, timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="the first needle binary")
    ap.add_argument("b", type=Path, help="the second needle binary")
    ap.add_argument("--queries", type=int, default=15, help="keys per kind (present, absent)")
    ap.add_argument("--files", type=int, default=5000, help="the kept table's files")
    ap.add_argument("--rows", type=int, default=20000, help="its rows per file")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="latency added to every request")
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("NEEDLE_BENCH_DATA", "/tmp/needle-bench-data")))
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    table = f"s3://bench/t{args.files}"
    server, port = start_server(args.data / "s3-root")
    proxy = LatencyProxy(port, args.delay_ms)
    builds = {"a": args.a, "b": args.b}
    try:
        for name, binary in builds.items():
            out = subprocess.run(
                [str(binary), "index-parquet", table, "--column", "key", "--index", f"{table}-index-{name}"],
                env=needle_env(port), capture_output=True, text=True, check=True,
            )  # fmt: skip
            print(f"{name}: {out.stdout.strip().splitlines()[-1]}", flush=True)
        rng = random.Random(args.seed)
        total = args.files * args.rows
        results: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
        for q in range(args.queries):
            keys = (("present", key_of(rng.randrange(total))), ("absent", key_of(total + rng.randrange(10**9))))
            for kind, key in keys:
                for name in ("a", "b") if q % 2 == 0 else ("b", "a"):
                    index = f"{table}-index-{name}"
                    ms, (_, counts) = timed(
                        lambda name=name, key=key, index=index: needle_lookup(
                            builds[name], proxy.port, table, key, index
                        )
                    )
                    trips = counts["index_round_trips"] + counts["file_round_trips"]
                    results.setdefault((name, kind), []).append((ms, counts["index_bytes"], trips))
        for (name, kind), rs in sorted(results.items()):
            print(
                f"{name} {kind}: median {statistics.median(r[0] for r in rs):.1f} ms, "
                f"index bytes {statistics.median(r[1] for r in rs):.0f}, "
                f"round trips {statistics.median(r[2] for r in rs):.0f} ({len(rs)} lookups)"
            )
    finally:
        proxy.close()
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
