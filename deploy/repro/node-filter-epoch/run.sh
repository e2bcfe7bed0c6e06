#!/usr/bin/env bash
# A node filter's epoch over more keys than a receiver's queue holds (2^20): a table of about
# 1.2 million keys on 2 nodes (RF 2, so node 2 receives every key of node 1), flushed, then node 1
# restarted; prints node 1's epochs (keys, time) and its node-filter view. JAR=... picks the
# plugin's jar. COPY may give up on a few batches on a 2-core machine: the keys loaded are those
# the epoch lines report.
set -uo pipefail
N=${N:-1200000}
JAR=${JAR:-$(cd "$(dirname "$0")/../../.." && pwd)/java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar}
WORK=${WORK:-/tmp/needle-epoch}
mkdir -p "$WORK"
export NEEDLE_CLUSTER_DIR=$WORK/cluster
C="$(cd "$(dirname "$0")/../.." && pwd)/needle-cluster"
$C down >/dev/null 2>&1 || true
$C up -n 2 --with-needle "$JAR"
$C cql 1 -e "CREATE KEYSPACE e WITH replication = {'class':'SimpleStrategy','replication_factor':2};
CREATE TABLE e.t (k bigint PRIMARY KEY, v int);
CREATE CUSTOM INDEX t_needle ON e.t () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {'node_filter':'one'};
CREATE TABLE e.s (k bigint PRIMARY KEY, v int);
CREATE CUSTOM INDEX s_needle ON e.s () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {'node_filter':'one'};"
python3 -c "
with open('$WORK/keys.csv','w') as f:
    for i in range($N): f.write(f'{i * 2654435761 % (1<<62)},{i}\n')
"
t0=$(date +%s)
$C cql 1 -e "COPY e.t (k, v) FROM '$WORK/keys.csv' WITH NUMPROCESSES=2 AND MAXBATCHSIZE=50 AND CHUNKSIZE=2000" | tail -3
echo "loaded $N in $(( $(date +%s) - t0 )) s"
$C nodetool 1 flush e
$C nodetool 2 flush e
$C nodetool 1 tablestats e.t | grep -E "Number of partitions|SSTable count"
sleep 5
$C restart 1
sleep 60  # the epoch at startup, and another when the ring view settles
grep -h "epoch .* published" "$NEEDLE_CLUSTER_DIR"/node1/logs/debug.log | tail -8
$C cql 1 -e "SELECT table_name, role, epoch, keys, state, trusted FROM needle_views.node_filters"
$C down
