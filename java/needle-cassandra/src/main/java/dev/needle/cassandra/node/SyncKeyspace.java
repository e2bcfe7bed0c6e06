package dev.needle.cassandra.node;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.utils.TimeUUID;

/**
 * The keyspace that carries node filters between nodes: Cassandra's own write path is the
 * broadcast. Every node is a replica (replication factor above any cluster size), so an owner's
 * write at consistency ONE reaches every node, as hints when a node is down, and every node can
 * catch up from its own replica. Node filters travel as snapshots (the whole filter, in chunks)
 * and ordered batches of changes; heartbeats say how far an owner has got.
 *
 * <p>The plugin creates it itself (idempotently, with fixed table ids so that several nodes
 * creating it at once agree); {@link #SCHEMA} is the CQL for operators who create it first.
 * Each table carries a {@link SyncIndex}, which hands arriving rows to {@link NodeFilters}.
 */
public final class SyncKeyspace {
    public static final String NAME = "needle_sync";
    /** Above any cluster size: SimpleStrategy then makes every node a replica (and only warns). */
    static final int REPLICATION_FACTOR = 64;
    /** Changes of one epoch are grouped in partitions of this many sequence numbers. */
    static final long BUCKET = 1 << 16;
    /** By name, so that printing the schema needs no Cassandra classes. */
    private static final String INDEX_CLASS = "dev.needle.cassandra.node.SyncIndex";

    private static String id(String table) {
        return UUID.nameUUIDFromBytes((NAME + "." + table).getBytes(StandardCharsets.UTF_8))
                .toString();
    }

    /** The keyspace, its tables and their indexes, as CQL statements (all idempotent). */
    public static final List<String> SCHEMA = List.of(
            "CREATE KEYSPACE IF NOT EXISTS " + NAME + " WITH replication = {'class': 'SimpleStrategy', "
                    + "'replication_factor': " + REPLICATION_FACTOR + "} AND durable_writes = false",
            "CREATE TABLE IF NOT EXISTS " + NAME
                    + ".snapshots (owner uuid, table_id uuid, epoch bigint, base_seq bigint,"
                    + " chunk int, chunks int, cut_millis bigint, kind text, filter blob,"
                    + " PRIMARY KEY ((owner, table_id, epoch), base_seq, chunk))"
                    + " WITH ID = '" + id("snapshots")
                    + "' AND default_time_to_live = 7200 AND gc_grace_seconds = 3600",
            "CREATE TABLE IF NOT EXISTS " + NAME + ".deltas (owner uuid, table_id uuid, epoch bigint, bucket bigint,"
                    + " seq_start bigint, seq_end bigint, cut_millis bigint, changes blob,"
                    + " PRIMARY KEY ((owner, table_id, epoch, bucket), seq_start))"
                    + " WITH ID = '" + id("deltas") + "' AND default_time_to_live = 3600 AND gc_grace_seconds = 3600"
                    + " AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'MINUTES',"
                    + " 'compaction_window_size': '10'}",
            "CREATE TABLE IF NOT EXISTS " + NAME + ".beats (owner uuid, table_id uuid, epoch bigint, seq bigint,"
                    + " cut_millis bigint, ready boolean, PRIMARY KEY ((owner), table_id))"
                    + " WITH ID = '" + id("beats") + "' AND default_time_to_live = 600 AND gc_grace_seconds = 600",
            "CREATE TABLE IF NOT EXISTS " + NAME + ".requests (owner uuid, id timeuuid, table_id uuid, kind text,"
                    + " requester uuid, key blob, PRIMARY KEY ((owner), id))"
                    + " WITH ID = '" + id("requests") + "' AND default_time_to_live = 600 AND gc_grace_seconds = 600",
            "CREATE CUSTOM INDEX IF NOT EXISTS snapshots_sync ON " + NAME + ".snapshots () USING '" + INDEX_CLASS + "'",
            "CREATE CUSTOM INDEX IF NOT EXISTS deltas_sync ON " + NAME + ".deltas () USING '" + INDEX_CLASS + "'",
            "CREATE CUSTOM INDEX IF NOT EXISTS beats_sync ON " + NAME + ".beats () USING '" + INDEX_CLASS + "'",
            "CREATE CUSTOM INDEX IF NOT EXISTS requests_sync ON " + NAME + ".requests () USING '" + INDEX_CLASS + "'");

    private SyncKeyspace() {}

    /** Prints {@link #SCHEMA} as a CQL script, for operators who create the keyspace themselves. */
    public static void main(String[] args) {
        for (String cql : SCHEMA) {
            System.out.println(cql + ";");
        }
    }

    /** Whether the keyspace, its tables and their indexes exist on this node. */
    static boolean exists() {
        var ks = Schema.instance.getKeyspaceMetadata(NAME);
        if (ks == null) {
            return false;
        }
        for (String t : new String[] {"snapshots", "deltas", "beats", "requests"}) {
            var table = ks.getTableOrViewNullable(t);
            if (table == null || table.indexes.size() != 1) {
                return false;
            }
        }
        return true;
    }

    /** Creates what is missing (idempotent; safe on several nodes at once). */
    static void create() {
        for (String cql : SCHEMA) {
            QueryProcessor.process(cql, ConsistencyLevel.ONE);
        }
    }

    static void writeSnapshotChunk(
            UUID owner,
            UUID table,
            long epoch,
            long baseSeq,
            int chunk,
            int chunks,
            long cutMillis,
            String kind,
            ByteBuffer filter) {
        QueryProcessor.execute(
                "INSERT INTO " + NAME + ".snapshots (owner, table_id, epoch, base_seq, chunk, chunks, cut_millis,"
                        + " kind, filter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ConsistencyLevel.ONE,
                owner,
                table,
                epoch,
                baseSeq,
                chunk,
                chunks,
                cutMillis,
                kind,
                filter);
    }

    static void writeBatch(UUID owner, UUID table, OwnerFilter.Batch b, ByteBuffer changes) {
        QueryProcessor.execute(
                "INSERT INTO " + NAME + ".deltas (owner, table_id, epoch, bucket, seq_start, seq_end, cut_millis,"
                        + " changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ConsistencyLevel.ONE,
                owner,
                table,
                b.epoch(),
                b.seqStart() / BUCKET,
                b.seqStart(),
                b.seqEnd(),
                b.cutMillis(),
                changes);
    }

    static void writeBeat(UUID owner, UUID table, long epoch, long seq, long cutMillis, boolean ready) {
        QueryProcessor.execute(
                "INSERT INTO " + NAME + ".beats (owner, table_id, epoch, seq, cut_millis, ready)"
                        + " VALUES (?, ?, ?, ?, ?, ?)",
                ConsistencyLevel.ONE,
                owner,
                table,
                epoch,
                seq,
                cutMillis,
                ready);
    }

    /** Asks {@code owner} to send its snapshot of a table again, or to check a key ("verify"). */
    static void writeRequest(UUID owner, UUID table, String kind, UUID requester, ByteBuffer key) {
        QueryProcessor.execute(
                "INSERT INTO " + NAME + ".requests (owner, id, table_id, kind, requester, key)"
                        + " VALUES (?, ?, ?, ?, ?, ?)",
                ConsistencyLevel.ONE,
                owner,
                TimeUUID.Generator.nextTimeUUID().asUUID(),
                table,
                kind,
                requester,
                key == null ? ByteBuffer.allocate(0) : key);
    }

    /** This node's replica of an owner's latest snapshot chunks of one epoch (for catching up after a restart). */
    static UntypedResultSet readSnapshot(UUID owner, UUID table, long epoch) {
        return QueryProcessor.executeInternal(
                "SELECT base_seq, chunk, chunks, cut_millis, kind, filter FROM " + NAME
                        + ".snapshots WHERE owner = ? AND table_id = ? AND epoch = ?",
                owner,
                table,
                epoch);
    }

    /** This node's replica of an owner's batches of one epoch from {@code seqStart} on. */
    static UntypedResultSet readBatches(UUID owner, UUID table, long epoch, long bucket, long fromSeq) {
        return QueryProcessor.executeInternal(
                "SELECT seq_start, seq_end, cut_millis, changes FROM " + NAME + ".deltas"
                        + " WHERE owner = ? AND table_id = ? AND epoch = ? AND bucket = ? AND seq_start >= ?",
                owner,
                table,
                epoch,
                bucket,
                fromSeq);
    }

    /** Every heartbeat this node holds. */
    static UntypedResultSet readBeats() {
        return QueryProcessor.executeInternal(
                "SELECT owner, table_id, epoch, seq, cut_millis, ready FROM " + NAME + ".beats");
    }
}
