package dev.needle.cassandra.range;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongPredicate;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.service.StorageService;

/**
 * What each node records about one ordered index in the index's nodes table, and what this node
 * learns from every node's record: the oldest directory version the node still acts on (so a
 * leaf split knows when every node writes and reads by the new leaves) and whether it has indexed
 * the rows it held when the index was created (so a read uses the index only once every node has).
 */
public final class NodeRecords {
    /** How often this node records its state again when nothing changed. */
    private static final long RECORD_AGAIN_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final RangeTables tables;
    private final UUID indexId;
    private volatile boolean built;
    private volatile Boolean ready;
    // What this node last recorded, and when (the refresh thread's alone).
    private long recordedVersion = Long.MIN_VALUE;
    private boolean recordedBuilt;
    private long recordedAt;

    NodeRecords(RangeTables tables, UUID indexId) {
        this.tables = tables;
        this.indexId = indexId;
    }

    /**
     * Records that this node acts on directory versions from {@code oldestInUse} on (and, once
     * built, that it indexed its old rows) when either changed and once a minute, then learns
     * whether every node is ready. Called by the index's refresh, once a second.
     */
    void recordAndLearn(long oldestInUse) {
        boolean nowBuilt = built;
        long now = System.nanoTime();
        // Recorded when it changed, and once in a while in case the row was lost: not every second,
        // as every write of the index's own tables is one a DROP of the keyspace may race with.
        if (oldestInUse != recordedVersion || nowBuilt != recordedBuilt || now - recordedAt > RECORD_AGAIN_NANOS) {
            // 'built' is only ever set: a node restarting has not re-read it yet, and must not unset it.
            QueryProcessor.execute(
                    "INSERT INTO " + tables.q(tables.nodes()) + " (node, index_id, version"
                            + (nowBuilt ? ", built)" : ")") + " VALUES (?, ?, ?" + (nowBuilt ? ", true)" : ")"),
                    ConsistencyLevel.QUORUM,
                    StorageService.instance.getLocalHostUUID(),
                    indexId,
                    oldestInUse);
            recordedVersion = oldestInUse;
            recordedBuilt = nowBuilt;
            recordedAt = now;
        }
        ready = everyNode(version -> true, true);
    }

    /** Whether every node has indexed its old rows as this node last learned it; null if not learned yet. */
    public Boolean readyAsKnown() {
        return ready;
    }

    /**
     * Whether every node of the ring has indexed its old rows: only then may a read use the index.
     * Learned by each refresh; the first call on a node that has not refreshed yet asks at once.
     */
    public boolean ready() {
        Boolean r = ready;
        if (r == null) {
            r = everyNode(version -> true, true);
            ready = r;
        }
        return r;
    }

    /** Marks this node's old rows indexed (recorded at the next refresh). */
    void markBuilt() {
        built = true;
    }

    /** Whether this node recorded earlier (before a restart) that it indexed its old rows. */
    boolean builtBefore() {
        UntypedResultSet rows = QueryProcessor.execute(
                "SELECT built FROM " + tables.q(tables.nodes()) + " WHERE index_id = ? AND node = ?",
                ConsistencyLevel.QUORUM,
                indexId,
                StorageService.instance.getLocalHostUUID());
        return !rows.isEmpty() && rows.one().has("built") && rows.one().getBoolean("built");
    }

    /**
     * Whether every node of the ring has recorded a directory version that {@code accepts} (and,
     * if {@code mustBeBuilt}, that it indexed its old rows).
     */
    boolean everyNode(LongPredicate accepts, boolean mustBeBuilt) {
        UntypedResultSet rows = QueryProcessor.execute(
                "SELECT node, version, built FROM " + tables.q(tables.nodes()) + " WHERE index_id = ?",
                ConsistencyLevel.QUORUM,
                indexId);
        Map<UUID, UntypedResultSet.Row> byNode = new HashMap<>();
        for (UntypedResultSet.Row r : rows) {
            byNode.put(r.getUUID("node"), r);
        }
        for (InetAddressAndPort ep : StorageService.instance.getTokenMetadata().getAllEndpoints()) {
            UntypedResultSet.Row r = byNode.get(StorageService.instance.getHostIdForEndpoint(ep));
            if (r == null
                    || !r.has("version")
                    || !accepts.test(r.getLong("version"))
                    || (mustBeBuilt && !(r.has("built") && r.getBoolean("built")))) {
                return false;
            }
        }
        return true;
    }
}
