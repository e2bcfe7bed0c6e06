#!/usr/bin/env bash
# Reproduces the node-filter lookup tables of the 2022 Journal of Big Data paper (Tables 6, 7 and 9)
# on 4 local nodes: each experiment at its own latency profile (lan), then again at every profile
# given in PROFILES (default az; e.g. PROFILES="az wan"), each run starting and stopping its own
# cluster; then bench/results/scheme2/summary.json and tables.md. 6 to 9 minutes per run on 2
# cores. Extra arguments go to every needle-bench run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for t in 6 7 9; do
  bench/needle-bench run "bench/experiments/scheme2-table$t.json" "$@"
  for p in ${PROFILES-az}; do
    bench/needle-bench run "bench/experiments/scheme2-table$t.json" --latency "$p" "$@"
  done
done
bench/plot/run summarize-scheme2
