#!/usr/bin/env bash
# Reproduces the node-filter tables of the 2022 Journal of Big Data paper: the lookups (Tables 6-9)
# on 4 local nodes, each experiment at its own latency profile (lan), then again at every profile
# given in PROFILES (default az; e.g. PROFILES="az wan"); the load and what it costs (Tables 10-13)
# on 6 nodes at az (about 35 minutes); each run starting and stopping its own cluster; then the
# staleness probe (bench/needle-bench staleness: how soon copies hold a new key, the sync's bytes;
# about 30 minutes) and bench/results/scheme2/summary.json and tables.md. Tables 6, 7 and 9 take 6
# to 9 minutes per run on 2 cores. Extra arguments go to every needle-bench run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for t in 6 7 8 9; do
  bench/needle-bench run "bench/experiments/scheme2-table$t.json" "$@"
  for p in ${PROFILES-az}; do
    bench/needle-bench run "bench/experiments/scheme2-table$t.json" --latency "$p" "$@"
  done
done
bench/needle-bench run bench/experiments/scheme2-table10.json "$@"
bench/plot/run chart bench/results/scheme2-table10/results.json
bench/needle-bench staleness
bench/plot/run summarize-scheme2
