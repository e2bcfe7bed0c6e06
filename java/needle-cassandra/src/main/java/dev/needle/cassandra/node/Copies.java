package dev.needle.cassandra.node;

import dev.needle.filter.FilterIO;
import dev.needle.filter.KeyFilter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.cassandra.db.marshal.BooleanType;
import org.apache.cassandra.db.marshal.BytesType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.marshal.UUIDType;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copies this node holds of the other nodes' filters, per opted-in table and owner, and the
 * receiving of the sync keyspace's rows that feed them ({@link SyncIndex} hands each row over as
 * it is applied here): snapshots (gathered chunk by chunk), batches of changes and heartbeats go
 * to their {@link NodeCopy}; requests addressed to this node go to its {@link OwnerTable}. Rows are
 * applied by one thread, in the order they arrive; a copy that cannot be trusted until a snapshot
 * comes asks its owner for one.
 */
final class Copies {
    private static final Logger logger = LoggerFactory.getLogger(Copies.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    /** A copy that needs a snapshot asks its owner at most this often. */
    static final long REQUEST_INTERVAL_MILLIS = 2000;
    /** Rows of the sync keyspace waiting to be applied beyond this many are dropped (copies then ask for snapshots). */
    static final int RECEIVE_QUEUE = 1 << 16;

    private final Map<UUID, OwnerTable> owners;
    private final OwnerRequests requests;
    private final ConcurrentHashMap<UUID, ConcurrentHashMap<UUID, NodeCopy>> copies = new ConcurrentHashMap<>();
    /** The same copies by the owner's address, as read plans name replicas (resolved off the read path). */
    private final ConcurrentHashMap<UUID, ConcurrentHashMap<InetAddressAndPort, NodeCopy>> copiesByEndpoint =
            new ConcurrentHashMap<>();

    private final ConcurrentHashMap<String, SnapshotAssembly> assembling = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<NodeCopy, Long> lastRequest = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor receiver = NodeFilters.singleThread("needle-node-filter-receiver", RECEIVE_QUEUE);

    /** Rows of the sync keyspace this node could not apply (queue full or unreadable). */
    final AtomicLong rowsDropped = new AtomicLong();

    Copies(Map<UUID, OwnerTable> owners, OwnerRequests requests) {
        this.owners = owners;
        this.requests = requests;
    }

    /** Copies of {@code table} are kept from now on. */
    void addTable(UUID table) {
        copies.computeIfAbsent(table, t -> new ConcurrentHashMap<>());
        copiesByEndpoint.computeIfAbsent(table, t -> new ConcurrentHashMap<>());
    }

    /** The copies of {@code table} are forgotten. */
    void removeTable(UUID table) {
        copiesByEndpoint.remove(table);
        ConcurrentHashMap<UUID, NodeCopy> c = copies.remove(table);
        if (c != null) {
            c.values().forEach(lastRequest::remove);
        }
    }

    /** The copies of {@code table} by their owners' addresses; null if the table keeps none. */
    Map<InetAddressAndPort, NodeCopy> byEndpoint(UUID table) {
        return copiesByEndpoint.get(table);
    }

    /** The copies of {@code table} by their owners' host ids (empty if it keeps none). */
    Map<UUID, NodeCopy> of(UUID table) {
        Map<UUID, NodeCopy> c = copies.get(table);
        return c == null ? Map.of() : c;
    }

    /** How far behind its owner the stalest copy of a table is (the delta lag), in ms; -1 without copies. */
    long maxCopyAge(UUID table) {
        long now = System.currentTimeMillis();
        long max = -1;
        for (NodeCopy copy : of(table).values()) {
            NodeCopy.Epoch v = copy.current();
            max = Math.max(max, v == null ? Long.MAX_VALUE : now - v.freshMillis);
        }
        return max;
    }

    /** A row of the sync keyspace was applied here (called on the write path: hands it off at once). */
    void received(SyncIndex.SyncRow row) {
        try {
            receiver.execute(() -> {
                try {
                    apply(row);
                } catch (RuntimeException | IOException e) {
                    rowsDropped.incrementAndGet();
                    noSpam.warn("Needle could not apply a node-filter row of {}: {}", row.table(), e.toString(), e);
                }
            });
        } catch (RejectedExecutionException e) {
            rowsDropped.incrementAndGet(); // the copy finds the gap and asks for a snapshot
        }
    }

    /** The copy of {@code owner}'s filter of {@code table}, made if new; null for a table not registered here. */
    private NodeCopy copy(UUID table, UUID owner) {
        ConcurrentHashMap<UUID, NodeCopy> c = copies.get(table);
        ConcurrentHashMap<InetAddressAndPort, NodeCopy> e = copiesByEndpoint.get(table);
        if (c == null || e == null) {
            return null;
        }
        NodeCopy copy = c.computeIfAbsent(owner, NodeCopy::new);
        // A node replaced at the same address has a new host id: its address now names the new copy.
        InetAddressAndPort endpoint = StorageService.instance.getEndpointForHostId(owner);
        if (endpoint != null && e.get(endpoint) != copy) {
            e.put(endpoint, copy);
        }
        return copy;
    }

    private void apply(SyncIndex.SyncRow row) throws IOException {
        UUID me = NodeFilters.localHost();
        UUID owner = row.get("owner", UUIDType.instance);
        UUID table = row.get("table_id", UUIDType.instance);
        if (me == null || owner == null || table == null) {
            return;
        }
        if (row.table().equals("requests")) {
            OwnerTable o = owner.equals(me) ? owners.get(table) : null;
            if (o != null) {
                o.requested(
                        row.get("kind", UTF8Type.instance),
                        row.get("requester", UUIDType.instance),
                        row.get("key", BytesType.instance));
            }
            return;
        }
        if (owner.equals(me) || !me.equals(row.get("receiver", UUIDType.instance))) {
            return; // a row for another node (a repair of the sync keyspace spreads them)
        }
        NodeCopy copy = copy(table, owner);
        if (copy == null) {
            return; // a table without node filtering here (yet)
        }
        long now = System.currentTimeMillis();
        switch (row.table()) {
            case "heartbeats" -> {
                Long epoch = row.get("epoch", LongType.instance);
                Long seq = row.get("seq", LongType.instance);
                Long cut = row.get("cut_millis", LongType.instance);
                Boolean ready = row.get("ready", BooleanType.instance);
                // A heartbeat older than the one applied here arrives without the cells it lost.
                if (epoch != null && seq != null && cut != null && ready != null) {
                    copy.heartbeat(epoch, seq, cut, ready);
                }
            }
            case "batches" -> {
                Long epoch = row.get("epoch", LongType.instance);
                Long seqStart = row.get("seq_start", LongType.instance);
                Long seqEnd = row.get("seq_end", LongType.instance);
                Long cut = row.get("cut_millis", LongType.instance);
                ByteBuffer blob = row.get("changes");
                if (epoch == null || seqStart == null || seqEnd == null || cut == null || blob == null) {
                    return; // a batch delivered again (a hint, a repair): applied already
                }
                received(table, blob.remaining());
                SyncCodec.Changes c = SyncCodec.decode(blob);
                if (c.hashes().length != seqEnd - seqStart) {
                    throw new IOException("a batch of changes " + seqStart + ".." + seqEnd + " holds "
                            + c.hashes().length + " changes");
                }
                copy.batch(new OwnerFilter.Batch(epoch, seqStart, seqEnd, cut, c.hashes(), c.removals(), 0), now);
            }
            case "snapshot_chunks" -> snapshotChunk(copy, owner, table, row, now);
            default -> {}
        }
    }

    private void received(UUID table, long bytes) {
        OwnerTable o = owners.get(table);
        if (o != null) {
            o.bytesReceived.addAndGet(bytes);
        }
    }

    /** The chunks of one snapshot, gathered until all arrived. */
    private static final class SnapshotAssembly {
        final ByteBuffer[] chunks;
        int present;

        SnapshotAssembly(int n) {
            chunks = new ByteBuffer[n];
        }
    }

    private void snapshotChunk(NodeCopy copy, UUID owner, UUID table, SyncIndex.SyncRow row, long now)
            throws IOException {
        Long epochCell = row.get("epoch", LongType.instance);
        Long seqCell = row.get("base_seq", LongType.instance);
        Integer chunkCell = row.get("chunk", Int32Type.instance);
        Integer chunksCell = row.get("chunks", Int32Type.instance);
        Long cutCell = row.get("cut_millis", LongType.instance);
        Long ringCell = row.get("ring", LongType.instance);
        ByteBuffer bytes = row.get("filter");
        if (epochCell == null
                || seqCell == null
                || chunkCell == null
                || chunksCell == null
                || cutCell == null
                || ringCell == null) {
            return; // a chunk delivered again: applied already
        }
        long epoch = epochCell;
        long seq = seqCell;
        int chunk = chunkCell;
        int chunks = chunksCell;
        long cut = cutCell;
        if (chunks < 1 || chunk < 0 || chunk >= chunks || bytes == null) {
            throw new IOException("snapshot chunk " + chunk + " of " + chunks + " is malformed");
        }
        String prefix = owner + "/" + table + "/";
        String id = prefix + epoch + "/" + seq;
        // Only the newest snapshot of an owner's table is worth gathering.
        assembling.keySet().removeIf(k -> k.startsWith(prefix) && !k.equals(id));
        SnapshotAssembly a = assembling.computeIfAbsent(id, k -> new SnapshotAssembly(chunks));
        if (a.chunks.length != chunks) {
            throw new IOException("snapshot " + id + " arrives with " + chunks + " and " + a.chunks.length + " chunks");
        }
        if (a.chunks[chunk] == null) {
            a.chunks[chunk] = bytes;
            a.present++;
        }
        if (a.present < chunks) {
            return;
        }
        assembling.remove(id);
        int total = 0;
        for (ByteBuffer b : a.chunks) {
            total += b.remaining();
        }
        byte[] all = new byte[total];
        int at = 0;
        for (ByteBuffer b : a.chunks) {
            int n = b.remaining();
            b.duplicate().get(all, at, n);
            at += n;
        }
        received(table, total);
        copy.snapshot(epoch, seq, cut, ringCell, (KeyFilter) FilterIO.read(all), now);
    }

    /** Copies that cannot be trusted until a snapshot comes ask their owners for one. */
    void askForSnapshots(UUID me, long now) {
        for (Map.Entry<UUID, ConcurrentHashMap<UUID, NodeCopy>> t : copies.entrySet()) {
            for (Map.Entry<UUID, NodeCopy> c : t.getValue().entrySet()) {
                NodeCopy copy = c.getValue();
                if (!copy.needsSnapshot() || now - copy.lastChangeMillis() < 500) {
                    continue;
                }
                Long last = lastRequest.get(copy);
                if (last != null && now - last < REQUEST_INTERVAL_MILLIS) {
                    continue;
                }
                lastRequest.put(copy, now);
                UUID owner = c.getKey();
                UUID table = t.getKey();
                requests.send(owner, table, "snapshot", me, null);
            }
        }
    }
}
