package dev.needle.cassandra.node;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.net.Message;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.net.Verb;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.TimeUUID;

/**
 * The keyspace that carries node filters between nodes. An owner sends each row straight to the
 * node it is for (a {@link Receivers} receiver: the key's other replicas, or every other node), as
 * a mutation message of this keyspace, which the receiver hands to its copies as it arrives,
 * neither writing nor answering it ({@link SyncIndex#receive}). Every node is a replica of it
 * (replication factor above any cluster size), so that a row a node does apply (one that came
 * before its node filters started) is applied where it was sent. Node filters travel as
 * snapshots (the filter of the keys a receiver holds, in chunks) and ordered batches of changes;
 * heartbeats say how far an owner has got. A row that does not arrive (a node down, a timeout)
 * is not sent again: the receiver's copy finds the gap and asks for a snapshot.
 *
 * <p>The plugin creates it itself (idempotently, with fixed table ids so that several nodes
 * creating it at once agree); {@link #SCHEMA} is the CQL for operators who create it first.
 * Each table carries a {@link SyncIndex}, which hands the rows a node applies to {@link
 * NodeFilters}.
 */
public final class SyncKeyspace {
    public static final String NAME = "needle_sync";
    /** Above any cluster size: SimpleStrategy then makes every node a replica (and only warns). */
    static final int REPLICATION_FACTOR = 64;
    /** Changes of one epoch are grouped in partitions of this many sequence numbers. */
    static final long BUCKET = 1 << 16;
    /** By name, so that printing the schema needs no Cassandra classes. */
    private static final String INDEX_CLASS = "dev.needle.cassandra.node.SyncIndex";
    /** The tables rows travel in, each with a {@link SyncIndex}. */
    static final String[] TABLES = {"snapshot_chunks", "batches", "heartbeats", "requests"};

    private static String id(String table) {
        return UUID.nameUUIDFromBytes((NAME + "." + table).getBytes(StandardCharsets.UTF_8))
                .toString();
    }

    /** The keyspace, its tables and their indexes, as CQL statements (all idempotent). */
    public static final List<String> SCHEMA = List.of(
            "CREATE KEYSPACE IF NOT EXISTS " + NAME + " WITH replication = {'class': 'SimpleStrategy', "
                    + "'replication_factor': " + REPLICATION_FACTOR + "} AND durable_writes = false",
            "CREATE TABLE IF NOT EXISTS " + NAME
                    + ".snapshot_chunks (receiver uuid, owner uuid, table_id uuid, epoch bigint, base_seq bigint,"
                    + " chunk int, chunks int, cut_millis bigint, ring bigint, kind text, filter blob,"
                    + " PRIMARY KEY ((receiver, owner, table_id, epoch), base_seq, chunk))"
                    + " WITH ID = '" + id("snapshot_chunks")
                    + "' AND default_time_to_live = 7200 AND gc_grace_seconds = 3600",
            "CREATE TABLE IF NOT EXISTS " + NAME
                    + ".batches (receiver uuid, owner uuid, table_id uuid, epoch bigint, bucket bigint,"
                    + " seq_start bigint, seq_end bigint, cut_millis bigint, changes blob,"
                    + " PRIMARY KEY ((receiver, owner, table_id, epoch, bucket), seq_start))"
                    + " WITH ID = '" + id("batches") + "' AND default_time_to_live = 3600 AND gc_grace_seconds = 3600"
                    + " AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'MINUTES',"
                    + " 'compaction_window_size': '10'}",
            "CREATE TABLE IF NOT EXISTS " + NAME
                    + ".heartbeats (receiver uuid, owner uuid, table_id uuid, epoch bigint, seq bigint,"
                    + " cut_millis bigint, ready boolean, PRIMARY KEY ((receiver, owner), table_id))"
                    + " WITH ID = '" + id("heartbeats") + "' AND default_time_to_live = 600 AND gc_grace_seconds = 600",
            "CREATE TABLE IF NOT EXISTS " + NAME + ".requests (owner uuid, id timeuuid, table_id uuid, kind text,"
                    + " requester uuid, key blob, PRIMARY KEY ((owner), id))"
                    + " WITH ID = '" + id("requests") + "' AND default_time_to_live = 600 AND gc_grace_seconds = 600",
            "CREATE CUSTOM INDEX IF NOT EXISTS snapshot_chunks_sync ON " + NAME + ".snapshot_chunks () USING '"
                    + INDEX_CLASS + "'",
            "CREATE CUSTOM INDEX IF NOT EXISTS batches_sync ON " + NAME + ".batches () USING '" + INDEX_CLASS + "'",
            "CREATE CUSTOM INDEX IF NOT EXISTS heartbeats_sync ON " + NAME + ".heartbeats () USING '" + INDEX_CLASS
                    + "'",
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
        for (String t : TABLES) {
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

    private static PartitionUpdate.SimpleBuilder row(String table, Object... partitionKey) {
        TableMetadata t = Schema.instance.getTableMetadata(NAME, table);
        if (t == null) {
            throw new IllegalStateException(NAME + "." + table + " does not exist here");
        }
        PartitionUpdate.SimpleBuilder b = PartitionUpdate.simpleBuilder(t, partitionKey);
        b.ttl(t.params.defaultTimeToLive);
        return b;
    }

    /**
     * Sends the row {@code b} to the node at {@code to} alone, fire and forget: the receiver
     * does not answer ({@link SyncIndex#receive}; a response from a node that applied the row
     * finds no callback and is dropped), and a row that does not arrive is noticed by the
     * receiver's copy (a gap, or no heartbeat).
     */
    private static void send(InetAddressAndPort to, PartitionUpdate.SimpleBuilder b) {
        Mutation m = b.buildAsMutation();
        MessagingService.instance().send(Message.out(Verb.MUTATION_REQ, m), to);
    }

    /**
     * The sync's rows that {@code message} carries ({@link #send}), or null for any other message:
     * a {@code MUTATION_REQ} of this keyspace.
     */
    static Mutation syncMutation(Message<?> message) {
        return message.verb() == Verb.MUTATION_REQ
                        && message.payload instanceof Mutation m
                        && m.getKeyspaceName().equals(NAME)
                ? m
                : null;
    }

    static void sendSnapshotChunk(
            Receivers receivers,
            int r,
            UUID owner,
            UUID table,
            OwnerFilter.Snapshot snap,
            int chunk,
            int chunks,
            String kind,
            ByteBuffer filter) {
        PartitionUpdate.SimpleBuilder b = row("snapshot_chunks", receivers.hostIds[r], owner, table, snap.epoch());
        b.row(snap.seq(), chunk)
                .add("chunks", chunks)
                .add("cut_millis", snap.cutMillis())
                .add("ring", receivers.fingerprint)
                .add("kind", kind)
                .add("filter", filter);
        send(receivers.endpoints[r], b);
    }

    static void sendBatch(
            Receivers receivers, int r, UUID owner, UUID table, OwnerFilter.Batch batch, ByteBuffer changes) {
        PartitionUpdate.SimpleBuilder b =
                row("batches", receivers.hostIds[r], owner, table, batch.epoch(), batch.seqStart() / BUCKET);
        b.row(batch.seqStart())
                .add("seq_end", batch.seqEnd())
                .add("cut_millis", batch.cutMillis())
                .add("changes", changes);
        send(receivers.endpoints[r], b);
    }

    /**
     * An owner's heartbeats to one receiver, one row per table, sent as one message: a message
     * costs both nodes about the same whatever it carries, so the heartbeats of all of a node's
     * tables share it.
     */
    static final class Beats {
        private final InetAddressAndPort to;
        private final PartitionUpdate.SimpleBuilder rows;

        /** Heartbeats from {@code owner} to {@code receiver}, at {@code to}; each is {@link #add}ed once made. */
        Beats(UUID receiver, InetAddressAndPort to, UUID owner) {
            this.to = to;
            this.rows = row("heartbeats", receiver, owner);
        }

        /** Adds the heartbeat of {@code table}. */
        void add(UUID table, long epoch, long seq, long cutMillis, boolean ready) {
            rows.row(table)
                    .add("epoch", epoch)
                    .add("seq", seq)
                    .add("cut_millis", cutMillis)
                    .add("ready", ready);
        }

        void send() {
            SyncKeyspace.send(to, rows);
        }
    }

    /**
     * Asks {@code owner} to send its snapshot of a table again, or to check a key ("verify"): the
     * row goes to the owner alone, fire and forget, as the other rows do; a request that does not
     * arrive (the owner down or unknown here) is a hint lost, and the copy asks again.
     */
    static void sendRequest(UUID owner, UUID table, String kind, UUID requester, ByteBuffer key) {
        InetAddressAndPort to = StorageService.instance.getTokenMetadata().getEndpointForHostId(owner);
        if (to == null) {
            return;
        }
        PartitionUpdate.SimpleBuilder b = row("requests", owner);
        b.row(TimeUUID.Generator.nextTimeUUID())
                .add("table_id", table)
                .add("kind", kind)
                .add("requester", requester)
                .add("key", key == null ? ByteBuffer.allocate(0) : key);
        send(to, b);
    }
}
