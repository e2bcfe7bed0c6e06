package dev.needle.bench;

import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import java.io.IOException;

/**
 * What Needle's JMX counters of one table say about a measured point: differences of the counters
 * read before and after it, summed over the nodes that count.
 */
final class NeedleCounters {
    private NeedleCounters() {}

    /**
     * Lookups the coordinators answered without a read, and those they passed on. The node-filter
     * counters are null without node filters.
     *
     * @param needleSkipped          lookups answered by the storage filter or the node filters
     * @param needlePassed           lookups the storage filter passed on to the read
     * @param needleNodeSkipped      lookups the node filters answered, at ONE or at a quorum
     * @param needleNodePassedLive   lookups passed on because a copy says a replica holds the key
     * @param needleNodePassedStale  lookups passed on because a copy was not trusted
     */
    record Lookups(
            long needleSkipped,
            long needlePassed,
            Long needleNodeSkipped,
            Long needleNodePassedLive,
            Long needleNodePassedStale) {

        /**
         * The counters of {@code table} summed over nodes 1 to {@code coordinators} (node 1's
         * alone when it coordinates every request).
         */
        static Lookups read(LocalCluster cluster, int coordinators, String keyspace, String table, boolean nodeFilters)
                throws IOException {
            long skipped = 0, passed = 0, nodeSkipped = 0, live = 0, stale = 0;
            for (int node = 1; node <= coordinators; node++) {
                NodeJmx jmx = cluster.jmx(node);
                skipped += jmx.metric(keyspace, table, "LookupsSkipped");
                passed += jmx.metric(keyspace, table, "LookupsPassed");
                if (nodeFilters) {
                    // A skip is a skip, at ONE or at a quorum.
                    nodeSkipped += jmx.metric(keyspace, table, "NodeSkipsOne")
                            + jmx.metric(keyspace, table, "NodeSkipsQuorum");
                    live += jmx.metric(keyspace, table, "NodePassedLive");
                    stale += jmx.metric(keyspace, table, "NodePassedStale");
                }
            }
            return nodeFilters
                    ? new Lookups(skipped, passed, nodeSkipped, live, stale)
                    : new Lookups(skipped, passed, null, null, null);
        }

        /** What was counted since {@code before}. */
        Lookups since(Lookups before) {
            return new Lookups(
                    needleSkipped - before.needleSkipped,
                    needlePassed - before.needlePassed,
                    minus(needleNodeSkipped, before.needleNodeSkipped),
                    minus(needleNodePassedLive, before.needleNodePassedLive),
                    minus(needleNodePassedStale, before.needleNodePassedStale));
        }
    }

    /**
     * What the owners of a table's node filters published, summed over every node.
     *
     * @param changesSent    changed keys sent in batches, once per node each went to
     * @param batchBytesSent bytes of those batches
     * @param bytesSent      bytes of batches, snapshots and heartbeats
     * @param snapshotsSent  whole filters sent
     * @param epochsStarted  epochs published: each one read every key of the table on its node
     */
    record Sync(long changesSent, long batchBytesSent, long bytesSent, long snapshotsSent, long epochsStarted) {
        static Sync read(LocalCluster cluster, int nodes, String keyspace, String table) throws IOException {
            long changes = 0, batchBytes = 0, bytes = 0, snapshots = 0, epochs = 0;
            for (int node = 1; node <= nodes; node++) {
                NodeJmx jmx = cluster.jmx(node);
                changes += jmx.metric(keyspace, table, "NodeFilterChangesSent");
                batchBytes += jmx.metric(keyspace, table, "NodeFilterBatchBytesSent");
                bytes += jmx.metric(keyspace, table, "NodeFilterBytesSent");
                snapshots += jmx.metric(keyspace, table, "NodeFilterSnapshotsSent");
                epochs += jmx.metric(keyspace, table, "NodeFilterEpochs");
            }
            return new Sync(changes, batchBytes, bytes, snapshots, epochs);
        }

        /** What was sent since {@code before}. */
        Sync since(Sync before) {
            return new Sync(
                    changesSent - before.changesSent,
                    batchBytesSent - before.batchBytesSent,
                    bytesSent - before.bytesSent,
                    snapshotsSent - before.snapshotsSent,
                    epochsStarted - before.epochsStarted);
        }
    }

    private static Long minus(Long a, Long b) {
        return a == null || b == null ? null : a - b;
    }
}
