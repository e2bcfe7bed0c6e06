#!/usr/bin/env bash
# Reproduces bench/results/partition-index/: the experiments of the blog post
# 'Efficiently finding candidate partitions for point queries' on this machine.
#
#   bench/partition-index/run.sh            # full run (up to 50,000 partitions x 100,000 values)
#   MAX_PARTITIONS=2000 bench/partition-index/run.sh   # smaller
#
# Needs root for the cold runs (it writes /proc/sys/vm/drop_caches) and about 25 GB of
# free disk under $DATA. Results: bench/results/partition-index/{raw/*.jsonl,criterion.txt,summary.json}.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$ROOT/bench/results/partition-index"
DATA="${NEEDLE_BENCH_DATA:-/tmp/needle-bench-data}"
MAX_PARTITIONS="${MAX_PARTITIONS:-50000}"
BUCKET_PARTITIONS="${BUCKET_PARTITIONS:-10000}"
VALUES="${VALUES:-100000}"
BUCKETS="${BUCKETS:-38000}"
WARM_QUERIES="${WARM_QUERIES:-20000}"
COLD_QUERIES="${COLD_QUERIES:-300}"
SKIP_CRITERION="${SKIP_CRITERION:-}"

cd "$ROOT/rust"
cargo build --release -p needle-index-tools --bins
BENCH="$ROOT/rust/target/release/needle-index-bench"
mkdir -p "$OUT/raw" "$DATA"
rm -f "$OUT"/raw/*.jsonl
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

log "occupancy against buckets (one partition of $VALUES values)"
"$BENCH" occupancy --values "$VALUES" >> "$OUT/raw/occupancy.jsonl"

log "append throughput (durable: one WAL fsync per partition)"
"$BENCH" append "$DATA/append" --count 100 --values "$VALUES" --buckets "$BUCKETS" >> "$OUT/raw/append.jsonl"
rm -rf "$DATA/append"

log "latency against number of partitions (B=$BUCKETS)"
rm -rf "$DATA/main"
threads() {
  for T in 1 2; do
    "$BENCH" query "$DATA/main" --partitions "$1" --values "$VALUES" --queries "$WARM_QUERIES" --threads "$T" >> "$OUT/raw/threads.jsonl"
    "$BENCH" query "$DATA/main" --partitions "$1" --values "$VALUES" --queries "$WARM_QUERIES" --threads "$T" --no-verify >> "$OUT/raw/threads.jsonl"
    "$BENCH" query "$DATA/main" --partitions "$1" --values "$VALUES" --queries "$COLD_QUERIES" --threads "$T" --cold >> "$OUT/raw/threads.jsonl"
  done
}
for P in 1000 2000 5000 10000 20000 50000 100000; do
  [ "$P" -le "$MAX_PARTITIONS" ] || continue
  log "  build to $P partitions"
  "$BENCH" build "$DATA/main" --partitions "$P" --values "$VALUES" --buckets "$BUCKETS" >> "$OUT/raw/build.jsonl"
  log "  warm queries"
  "$BENCH" query "$DATA/main" --partitions "$P" --values "$VALUES" --queries "$WARM_QUERIES" >> "$OUT/raw/partitions.jsonl"
  "$BENCH" query "$DATA/main" --partitions "$P" --values "$VALUES" --queries "$WARM_QUERIES" --no-verify >> "$OUT/raw/partitions.jsonl"
  log "  cold queries"
  "$BENCH" query "$DATA/main" --partitions "$P" --values "$VALUES" --queries "$COLD_QUERIES" --cold >> "$OUT/raw/partitions.jsonl"
  if [ "$P" -eq 10000 ] || [ "$P" -eq "$MAX_PARTITIONS" ]; then
    log "  threads at $P partitions"
    threads "$P"
  fi
done
rm -rf "$DATA/main"

log "latency against number of buckets ($BUCKET_PARTITIONS partitions)"
for B in 11000 19000 28000 38000 48000 58000 68000; do
  rm -rf "$DATA/b$B"
  "$BENCH" build "$DATA/b$B" --partitions "$BUCKET_PARTITIONS" --values "$VALUES" --buckets "$B" >> "$OUT/raw/buckets-build.jsonl"
  "$BENCH" query "$DATA/b$B" --partitions "$BUCKET_PARTITIONS" --values "$VALUES" --queries "$WARM_QUERIES" >> "$OUT/raw/buckets.jsonl"
  rm -rf "$DATA/b$B"
done

if [ -z "$SKIP_CRITERION" ]; then
  log "criterion micro-benchmarks"
  cargo bench -p needle-index --bench query -- --warm-up-time 1 --measurement-time 3 2>&1 | grep -E "^[a-z_0-9]+/|time:|thrpt:" > "$OUT/criterion.txt" || true
fi

log "summary"
python3 "$ROOT/bench/partition-index/summarize.py" "$OUT" "MAX_PARTITIONS=$MAX_PARTITIONS BUCKET_PARTITIONS=$BUCKET_PARTITIONS VALUES=$VALUES BUCKETS=$BUCKETS WARM_QUERIES=$WARM_QUERIES COLD_QUERIES=$COLD_QUERIES"
log "done: $OUT/summary.json"
