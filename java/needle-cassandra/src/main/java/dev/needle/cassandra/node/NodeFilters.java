package dev.needle.cassandra.node;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.cassandra.storage.Faults;
import dev.needle.cassandra.storage.StorageFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.service.StorageService;

/**
 * Node filters on this node: the tables that publish them, and the three roles, each in its own
 * class. As an <b>owner</b>, the {@link Publisher} sends which keys may hold live data here for
 * each table with {@code node_filter} on ({@link OwnerTable}) to the nodes that keep copies of
 * its keys ({@link Receivers}). The {@link Copies} keep a {@link NodeCopy} of the filter of each
 * node that sends here, fed as rows of the sync keyspace arrive ({@link SyncIndex#receive}). As
 * a <b>coordinator</b>, the {@link CoordinatorCheck} decides whether a read can be answered
 * empty without asking the replicas (docs/invariants.md, invariant 5).
 */
public final class NodeFilters {
    public static final NodeFilters instance = new NodeFilters();

    /** The tables this node publishes node filters for, by table id. */
    private final ConcurrentHashMap<UUID, OwnerTable> owners = new ConcurrentHashMap<>();

    private final OwnerRequests requests = new OwnerRequests();
    private final Copies copies = new Copies(owners, requests);
    private final Publisher publisher = new Publisher(owners, copies);
    private final CoordinatorCheck coordinator = new CoordinatorCheck(owners, copies, requests);

    private NodeFilters() {
        MessagingService.instance().inboundSink.add(SyncIndex::receive);
        if (Faults.enabled()) {
            // Needle's own tests: the fault point "sync.drop" loses this node's outgoing sync rows.
            MessagingService.instance()
                    .outboundSink
                    .add((message, to) -> !(Faults.armed("sync.drop") && SyncKeyspace.syncMutation(message) != null));
        }
    }

    /** A daemon thread with a bounded queue that rejects (throws) when full. */
    static ThreadPoolExecutor singleThread(String name, int queue) {
        ThreadPoolExecutor e =
                new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(queue), r -> {
                    Thread t = new Thread(r, name);
                    t.setDaemon(true);
                    return t;
                });
        e.setRejectedExecutionHandler((r, ex) -> {
            throw new RejectedExecutionException(name + " is full");
        });
        return e;
    }

    // ---- registration -------------------------------------------------------------------------

    /** A Needle index was registered (or its options changed): publish its table's keys if node filtering is on. */
    public synchronized void register(TableId table, StorageFilter storage) {
        NeedleOptions options = storage.options();
        if (options.nodeFilter == NeedleOptions.NodeFilterMode.OFF) {
            unregister(table, storage);
            return;
        }
        OwnerTable o = new OwnerTable(table.asUUID(), storage, options);
        OwnerTable old = owners.put(table.asUUID(), o);
        if (old != null && old.storage != storage) {
            old.storage.events(null);
        }
        storage.events(o);
        registerMetrics(o);
        copies.addTable(table.asUUID());
        publisher.start();
    }

    private void registerMetrics(OwnerTable o) {
        var m = o.storage.metrics();
        m.gauge("NodeFilterBytesSent", o.bytesSent::get);
        m.gauge("NodeFilterBytesReceived", o.bytesReceived::get);
        m.gauge("NodeFilterChangesSent", o.changesSent::get);
        m.gauge("NodeFilterBatchBytesSent", o.batchBytesSent::get);
        m.gauge("NodeFilterSnapshotsSent", o.snapshotsSent::get);
        m.gauge("NodeFilterShrinksSent", o.shrinksSent::get);
        m.gauge("NodeFilterEpochs", o.epochsStarted::get);
        m.gauge("NodeFilterPublishedKeys", o.filter::publishedCount);
        m.gauge("NodeFilterPublishedBytes", o.filter::publishedBytes);
        m.gauge("NodeFilterMaxCopyAgeMillis", () -> copies.maxCopyAge(o.table));
        m.gauge("NodeFilterRowsDropped", copies.rowsDropped::get);
        o.changeWaitMicros = m.histogram("NodeFilterChangeWaitMicros");
    }

    /** A Needle index went away: stop publishing its table and forget the copies of it. */
    public synchronized void unregister(TableId table, StorageFilter storage) {
        OwnerTable o = owners.get(table.asUUID());
        if (o != null && o.storage == storage) {
            owners.remove(table.asUUID());
            storage.events(null);
            copies.removeTable(table.asUUID());
        }
    }

    static UUID localHost() {
        UUID id = localHost;
        if (id == null) {
            id = StorageService.instance.getLocalHostUUID(); // a lookup under the ring's read lock
            localHost = id;
        }
        return id;
    }

    /** Set once known: a running node's host id does not change (a replacement is a new node with a new id). */
    private static volatile UUID localHost;

    // ---- the roles, as the plugin calls them -------------------------------------------------

    /** The coordinator's side: whether a read can be answered from the copies, and what it learns. */
    public CoordinatorCheck coordinator() {
        return coordinator;
    }

    /** Whether the table publishes node filters (so writes to it are worth recording). */
    public boolean enabled(TableId table) {
        return owners.containsKey(table.asUUID());
    }

    /** A row of the sync keyspace was applied here (called on the write path: hands it off at once). */
    void received(SyncIndex.SyncRow row) {
        copies.received(row);
    }

    // ---- inspection ---------------------------------------------------------------------------

    /** One row of {@code needle_views.node_filters}. */
    public record CopyStatus(
            UUID table,
            UUID owner,
            boolean own,
            long epoch,
            long seq,
            long ageMillis,
            long keys,
            long bytes,
            boolean trusted,
            String state,
            int receivers) {}

    /** The nodes {@code o} sends its changes to (as many as it receives copies from): -1 before its first epoch. */
    private static int receivers(OwnerTable o) {
        Receivers v = o.filter.receivers();
        return v == null ? -1 : v.size();
    }

    /** What this node publishes and what copies it holds, for the virtual table. */
    public List<CopyStatus> status() {
        long now = System.currentTimeMillis();
        UUID me = localHost();
        List<CopyStatus> out = new ArrayList<>();
        for (OwnerTable o : owners.values()) {
            out.add(new CopyStatus(
                    o.table,
                    me,
                    true,
                    o.filter.epoch(),
                    o.changesSent.get(),
                    0,
                    o.filter.publishedCount(),
                    o.bytesSent.get(),
                    o.ready(),
                    o.ready() ? "publishing" : o.storage.isReady() ? "starting epoch" : "storage filter not ready",
                    receivers(o)));
            for (Map.Entry<UUID, NodeCopy> c : copies.of(o.table).entrySet()) {
                NodeCopy copy = c.getValue();
                NodeCopy.Epoch v = copy.current();
                long age = v == null ? -1 : now - v.freshMillis;
                boolean trusted = v != null && v.trusted(now, o.options.stalenessMillis);
                String state = v == null
                        ? "waiting for a snapshot"
                        : !v.usable ? "not usable (owner not ready, or a gap)" : trusted ? "trusted" : "stale";
                out.add(new CopyStatus(
                        o.table,
                        c.getKey(),
                        false,
                        v == null ? -1 : v.epoch,
                        copy.appliedSeq(),
                        age,
                        v == null ? 0 : v.filter.count(),
                        v == null ? 0 : v.filter.sizeInBytes(),
                        trusted,
                        state,
                        0));
            }
        }
        return out;
    }
}
