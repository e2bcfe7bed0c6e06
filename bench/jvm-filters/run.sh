#!/usr/bin/env bash
# Needle's JVM filters against CuckooFilter4J 1.0.2, fastfilter_java 1.0.2 and Guava's BloomFilter.
#
#   make bench-filters                 # builds (make build), then runs this script: the full run
#   QUICK=1 bench/jvm-filters/run.sh   # smoke test: 1M keys only, short iterations, results in .../quick/
#
# This script builds nothing: it runs the shaded JMH jar that `make build` leaves in
# java/needle-filter-bench/target/needle-filter-benchmarks.jar. It writes, in $OUT:
#   insert-N.json lookup-N.json delete-N.json JMH results (-rf json), N = key count
#   space.json                                bits/key, measured FPR, load, false negatives (SpaceFprMain)
#   run-meta.json                             the exact commands, phase timings, jar and source digests
#   machine.json                              the machine's facts when the run started
#   summary.json                              everything above joined per library and configuration, plus targets
# and the readable table docs/jvm-filters.md (QUICK: $OUT/jvm-filters.md, so a smoke test never
# overwrites the published table).
#
# Environment:
#   QUICK=1        1M keys, 1 warmup + 2 measured iterations of 0.5 s (lookups), 1 + 2 single shots
#   HEAP=8g        -Xmx/-Xms of every benchmark JVM
#   NS=...         comma-separated key counts (default 1000000,50000000; QUICK: 1000000)
#   FPPS=...       comma-separated target false-positive rates (default 0.01,0.001,0.0001)
#   LIBS=...       comma-separated library names to restrict every phase to (default: all)
#   OUT=dir        result directory (default bench/results/jvm-filters, QUICK: .../quick)
#   DOC=file       markdown output (default docs/jvm-filters.md, QUICK: $OUT/jvm-filters.md)
#   PHASES=...     any of lookup,insert,delete,space (default all); summarize always runs
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JAR="${JAR:-$ROOT/java/needle-filter-bench/target/needle-filter-benchmarks.jar}"
JAVA="${JAVA:-java}"
PYTHON="${PYTHON:-python3}"
QUICK="${QUICK:-0}"
HEAP="${HEAP:-8g}"
FPPS="${FPPS:-0.01,0.001,0.0001}"
PHASES="${PHASES:-lookup,insert,delete,space}"
LIBS="${LIBS:-}"

if [[ "$QUICK" == "1" ]]; then
  NS="${NS:-1000000}"
  OUT="${OUT:-$ROOT/bench/results/jvm-filters/quick}"
  DOC="${DOC:-$OUT/jvm-filters.md}"
  LOOKUP_ITERS=(-wi 1 -w 500ms -i 2 -r 500ms)
  SHOT_SMALL=(-wi 1 -i 2)
  SHOT_LARGE=(-wi 1 -i 2)
else
  NS="${NS:-1000000,50000000}"
  OUT="${OUT:-$ROOT/bench/results/jvm-filters}"
  DOC="${DOC:-$ROOT/docs/jvm-filters.md}"
  LOOKUP_ITERS=(-wi 2 -w 1s -i 3 -r 1s)
  # A single shot at 1M keys takes well under a second, so it gets several iterations. At 50M keys
  # one shot is a whole build (10-70 s per filter on this machine) and the JIT has compiled the loop
  # within its first fraction of a second, so one measured shot per configuration keeps the full run
  # near 45 minutes (override with SHOT_LARGE_ITERS="-wi 1 -i 2").
  SHOT_SMALL=(-wi 3 -i 5)
  read -ra SHOT_LARGE <<< "${SHOT_LARGE_ITERS:--wi 0 -i 1}"
fi
# SpaceFprMain deletes every key of filters up to this size to check deletes (a full pass each).
DELETE_CHECK_MAX_N="${DELETE_CHECK_MAX_N:-1000000}"
# Key counts up to this many use SHOT_SMALL for the single-shot (insert, delete) benchmarks.
SMALL_LIMIT=10000000

if [[ ! -f "$JAR" ]]; then
  echo "error: $JAR not found; run 'make build' first (or 'make bench-filters', which does)" >&2
  exit 1
fi
mkdir -p "$OUT"
# The machine as it is when the run starts (the summary states these facts, not those of whatever
# machine summarizes later).
"$PYTHON" "$ROOT/bench/jvm-filters/machine_facts.py" > "$OUT/machine.json"
# Filters built by the insert benchmark are saved here and loaded, instead of rebuilt, by the
# unmeasured setup of the lookup and delete benchmarks and by SpaceFprMain (FilterCache.java).
CACHE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/needle-filter-cache.XXXXXX")"
trap 'rm -rf "$CACHE_DIR"' EXIT
# Run from a private copy of the jar: a concurrent `make build` (or `make clean`) must not swap the
# benchmark code under a run that takes most of an hour.
BUILT_JAR="$JAR"
JAR="$CACHE_DIR/needle-filter-benchmarks.jar"
cp "$BUILT_JAR" "$JAR"
JVM_ARGS="-Xms$HEAP -Xmx$HEAP -Dneedle.bench.cache=$CACHE_DIR"
COMMON=(-f 1 -foe false -jvmArgs "$JVM_ARGS")

# Which libraries each phase runs: the benchmark's own lists (Library.forPhase).
phase_libs() { "$JAVA" -cp "$JAR" dev.needle.filter.bench.Library "$1"; }
LOOKUP_LIBS=$(phase_libs lookup)
INSERT_LIBS=$(phase_libs insert)
DELETE_LIBS=$(phase_libs delete)
SPACE_LIBS=$(phase_libs space)

# The libraries of a phase, restricted to $LIBS when it is set (empty output: skip the phase).
libs_for() {
  local all="$1"
  if [[ -z "$LIBS" ]]; then echo "$all"; return; fi
  local out="" l
  IFS=',' read -ra want <<< "$LIBS"
  for l in "${want[@]}"; do
    if [[ ",$all," == *",$l,"* ]]; then out="${out:+$out,}$l"; fi
  done
  echo "$out"
}

has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

META="$OUT/run-meta.json"
START_EPOCH=$(date +%s)
PHASE_LOG="$OUT/.phases.tsv"
: > "$PHASE_LOG"

# run_phase NAME RESULT_FILE CMD...: runs one phase, logs its command and wall time.
run_phase() {
  local name="$1" result="$2"; shift 2
  local t0 t1 l0 l1
  t0=$(date +%s)
  l0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
  echo "=== $name: $*" >&2
  "$@"
  t1=$(date +%s)
  l1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
  local cmd
  cmd=$(printf '%q ' "$@")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$result" "$t0" "$t1" "$l0" "$l1" "${cmd% }" >> "$PHASE_LOG"
}

# Results of the phases that run now are replaced, never joined with an older run's.
has_phase lookup && rm -f "$OUT"/lookup*.json
has_phase insert && rm -f "$OUT"/insert-*.json
has_phase delete && rm -f "$OUT"/delete-*.json
has_phase space && rm -f "$OUT/space.json"

IFS=',' read -ra NLIST <<< "$NS"
# single_shot PHASE: the insert or delete benchmark, one JMH run per key count (different iteration counts).
single_shot() {
  local phase="$1" libs bench n iters
  if [[ "$phase" == insert ]]; then
    libs=$(libs_for "$INSERT_LIBS"); bench='dev\.needle\.filter\.bench\.InsertBenchmark\.'
  else
    libs=$(libs_for "$DELETE_LIBS"); bench='dev\.needle\.filter\.bench\.DeleteBenchmark\.'
  fi
  [[ -n "$libs" ]] || return 0
  for n in "${NLIST[@]}"; do
    if (( n <= SMALL_LIMIT )); then iters=("${SHOT_SMALL[@]}"); else iters=("${SHOT_LARGE[@]}"); fi
    run_phase "$phase-$n" "$OUT/$phase-$n.json" "$JAVA" -jar "$JAR" "$bench" \
      "${COMMON[@]}" "${iters[@]}" -gc true -p library="$libs" -p n="$n" -p fpp="$FPPS" \
      -rf json -rff "$OUT/$phase-$n.json"
  done
}

# Insert first: its builds fill the filter cache that the later phases load from.
if has_phase insert; then single_shot insert; fi

if has_phase lookup; then
  for n in "${NLIST[@]}"; do
    # needle-cuckoo-xxh64 needs its own filter (its keys are hashed first); at 1M it shows the cost
    # of hashing well enough, at 50M it would cost another full build per target rate.
    if (( n <= SMALL_LIMIT )); then libs=$(libs_for "$LOOKUP_LIBS"); else libs=$(libs_for "${LOOKUP_LIBS/needle-cuckoo-xxh64,/}"); fi
    [[ -n "$libs" ]] || continue
    run_phase "lookup-$n" "$OUT/lookup-$n.json" "$JAVA" -jar "$JAR" 'dev\.needle\.filter\.bench\.LookupBenchmark\.' \
      "${COMMON[@]}" "${LOOKUP_ITERS[@]}" -p library="$libs" -p n="$n" -p fpp="$FPPS" \
      -rf json -rff "$OUT/lookup-$n.json"
  done
fi

if has_phase delete; then single_shot delete; fi

if has_phase space; then
  libs=$(libs_for "$SPACE_LIBS")
  if [[ -n "$libs" ]]; then
    run_phase space "$OUT/space.json" "$JAVA" $JVM_ARGS -cp "$JAR" dev.needle.filter.bench.SpaceFprMain \
      --n "$NS" --fpp "$FPPS" --libs "$libs" --absent 1000000 --delete-check-max-n "$DELETE_CHECK_MAX_N" \
      --out "$OUT/space.json"
  fi
fi

END_EPOCH=$(date +%s)

# The exact run, for summary.json: commands, phase wall times, what was run.
"$PYTHON" - "$META" "$PHASE_LOG" "$START_EPOCH" "$END_EPOCH" "$QUICK" "$NS" "$FPPS" "$HEAP" "$JAR" "$ROOT" "$BUILT_JAR" <<'PY'
import hashlib, json, os, subprocess, sys
meta, log, start, end, quick, ns, fpps, heap, jar, root, built_jar = sys.argv[1:]
phases = []
with open(log) as f:
    for line in f:
        name, result, t0, t1, l0, l1, cmd = line.rstrip("\n").split("\t", 6)
        phases.append({"phase": name, "result": os.path.basename(result), "start_epoch": int(t0),
                       "end_epoch": int(t1), "wall_seconds": int(t1) - int(t0),
                       "load_average_at_start": l0, "load_average_at_end": l1, "command": cmd})
def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
src = os.path.join(root, "java/needle-filter/src/main/java")
h = hashlib.sha256()
for d, _, files in sorted(os.walk(src)):
    for name in sorted(files):
        p = os.path.join(d, name)
        h.update(os.path.relpath(p, src).encode()); h.update(open(p, "rb").read())
try:
    head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
except OSError:
    head = None
json.dump({"quick": quick == "1", "n": [int(x) for x in ns.split(",")], "fpp": [float(x) for x in fpps.split(",")],
           "heap": heap, "start_epoch": int(start), "end_epoch": int(end), "wall_seconds": int(end) - int(start),
           "phases": phases, "jar": os.path.relpath(os.path.abspath(built_jar), root), "jar_sha256": sha256(jar),
           "jar_mtime_epoch": int(os.path.getmtime(built_jar)) if os.path.exists(built_jar) else None, "needle_filter_sources_sha256_at_run_end": h.hexdigest(),
           "git_head": head}, open(meta, "w"), indent=2)
PY
rm -f "$PHASE_LOG"

"$PYTHON" "$ROOT/bench/jvm-filters/summarize.py" --results "$OUT" --doc "$DOC"
echo "wrote $OUT/summary.json and $DOC" >&2
