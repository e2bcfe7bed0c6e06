#!/usr/bin/env bash
# Reproduces the storage-filter tables of the 2022 Journal of Big Data paper (Tables 1-5): runs the
# five experiments one after the other (each starts and stops its own Cassandra node), then writes
# bench/results/scheme1/summary.json and the charts. About 25 minutes on 2 cores; cold-cache runs
# need root (pass --warm-only otherwise). Extra arguments go to every needle-bench run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for t in 1 2 3 4 5; do
  bench/needle-bench run "bench/experiments/scheme1-table$t.json" "$@"
done
bench/plot/run summarize-scheme1
