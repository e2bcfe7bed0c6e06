package dev.needle.cassandra.node;

import dev.needle.cassandra.NeedleOptions;
import dev.needle.cassandra.storage.Faults;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.FilterIO;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyFilter;
import dev.needle.filter.KeyState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.marshal.BooleanType;
import org.apache.cassandra.db.marshal.BytesType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.marshal.UUIDType;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.exceptions.UnavailableException;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.locator.Replica;
import org.apache.cassandra.locator.ReplicaPlan;
import org.apache.cassandra.locator.ReplicaPlans;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.net.Verb;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Node filters on this node, both sides of them.
 *
 * <p>As an <b>owner</b>, for each table with {@code node_filter} on, it publishes which keys may
 * hold live data here ({@link OwnerTable}): a snapshot per epoch, then batches of changes as they
 * come ({@link OwnerTable#batchDue}), and heartbeats ({@link OwnerTable#beatDue}), all as writes to
 * {@link SyncKeyspace}, whose replicas are every node.
 *
 * <p>As a <b>coordinator</b>, it keeps a {@link NodeCopy} of every other node's filter of those
 * tables, fed by the {@link SyncIndex} on the sync tables, and {@link #check decides} whether a
 * read can be answered empty without asking the replicas: only when every replica the read could
 * go to says, from a copy fresher than the table's staleness bound S, that it holds no live data
 * for the key (docs/invariants.md, invariant 5).
 */
public final class NodeFilters {
    private static final Logger logger = LoggerFactory.getLogger(NodeFilters.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    public static final NodeFilters instance = new NodeFilters();

    /** Snapshot bytes per row of the sync keyspace. */
    static final int CHUNK_BYTES = 1 << 20;
    /** The publisher's round: changes wait at least this long to be sent, and more while they stream in ({@link OwnerTable#batchDue}). */
    static final long BATCH_MILLIS = 5;
    /** A copy that needs a snapshot asks its owner at most this often. */
    static final long REQUEST_INTERVAL_MILLIS = 2000;
    /** An owner sends at most one asked-for snapshot of a table this often. */
    static final long SNAPSHOT_INTERVAL_MILLIS = 1000;
    /** Rows of the sync keyspace waiting to be applied beyond this many are dropped (copies then ask for snapshots). */
    static final int RECEIVE_QUEUE = 1 << 16;

    private final ConcurrentHashMap<UUID, OwnerTable> owners = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<UUID, ConcurrentHashMap<UUID, NodeCopy>> copies = new ConcurrentHashMap<>();
    /** The same copies by the owner's address, as read plans name replicas (resolved off the read path). */
    private final ConcurrentHashMap<UUID, ConcurrentHashMap<InetAddressAndPort, NodeCopy>> copiesByEndpoint =
            new ConcurrentHashMap<>();

    private final ConcurrentHashMap<String, SnapshotAssembly> assembling = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<NodeCopy, Long> lastRequest = new ConcurrentHashMap<>();
    /**
     * Keys written through this coordinator lately: read through it, they are never skipped. 2 MiB:
     * past some 10^5 keys written within S, collisions make more keys look recent (read, never lost).
     */
    final RecentWrites recentWrites = new RecentWrites(18);

    private final ThreadPoolExecutor receiver = singleThread("needle-node-filter-receiver", RECEIVE_QUEUE);
    /** Snapshot and verification requests to owners, written off the read path. */
    private final ThreadPoolExecutor requests = singleThread("needle-node-filter-requests", 4096);

    private Thread publisher;
    private volatile boolean keyspaceChecked;
    /** Nodes that start together do not all create the keyspace at once: the first attempt waits 1 to 5 s. */
    private long lastCreateAttempt = System.currentTimeMillis()
            - 4000
            + java.util.concurrent.ThreadLocalRandom.current().nextLong(4000);

    /** Rows of the sync keyspace this node could not apply (queue full or unreadable). */
    public final AtomicLong rowsDropped = new AtomicLong();

    private NodeFilters() {
        if (Faults.enabled()) {
            // Needle's own tests: the fault point "sync.drop" loses this node's outgoing sync rows.
            MessagingService.instance()
                    .outboundSink
                    .add((message, to) -> !(Faults.armed("sync.drop")
                            && message.verb() == Verb.MUTATION_REQ
                            && message.payload instanceof Mutation m
                            && m.getKeyspaceName().equals(SyncKeyspace.NAME)));
        }
    }

    private static ThreadPoolExecutor singleThread(String name, int queue) {
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
        copies.computeIfAbsent(table.asUUID(), t -> new ConcurrentHashMap<>());
        copiesByEndpoint.computeIfAbsent(table.asUUID(), t -> new ConcurrentHashMap<>());
        if (publisher == null) {
            publisher = new Thread(this::runPublisher, "needle-node-filter-publisher");
            publisher.setDaemon(true);
            publisher.start();
        }
    }

    private void registerMetrics(OwnerTable o) {
        var m = o.storage.metrics();
        m.gauge("NodeFilterBytesSent", o.bytesSent::get);
        m.gauge("NodeFilterBytesReceived", o.bytesReceived::get);
        m.gauge("NodeFilterChangesSent", o.changesSent::get);
        m.gauge("NodeFilterBatchBytesSent", o.batchBytesSent::get);
        m.gauge("NodeFilterSnapshotsSent", o.snapshotsSent::get);
        m.gauge("NodeFilterEpochs", o.epochsStarted::get);
        m.gauge("NodeFilterPublishedKeys", o.filter::publishedCount);
        m.gauge("NodeFilterMaxCopyAgeMillis", () -> maxCopyAge(o.table));
        m.gauge("NodeFilterRowsDropped", rowsDropped::get);
    }

    /** How far behind its owner the stalest copy of a table is (the delta lag), in ms; -1 without copies. */
    private long maxCopyAge(UUID table) {
        ConcurrentHashMap<UUID, NodeCopy> c = copies.get(table);
        long now = System.currentTimeMillis();
        long max = -1;
        if (c != null) {
            for (NodeCopy copy : c.values()) {
                NodeCopy.View v = copy.view();
                max = Math.max(max, v == null ? Long.MAX_VALUE : now - v.freshMillis);
            }
        }
        return max;
    }

    /** A Needle index went away: stop publishing its table and forget the copies of it. */
    public synchronized void unregister(TableId table, StorageFilter storage) {
        OwnerTable o = owners.get(table.asUUID());
        if (o != null && o.storage == storage) {
            owners.remove(table.asUUID());
            storage.events(null);
            copiesByEndpoint.remove(table.asUUID());
            ConcurrentHashMap<UUID, NodeCopy> c = copies.remove(table.asUUID());
            if (c != null) {
                c.values().forEach(lastRequest::remove);
            }
        }
    }

    private static UUID localHost() {
        return StorageService.instance.getLocalHostUUID();
    }

    // ---- coordinator side ---------------------------------------------------------------------

    /** Why a read was or was not answered from the copies. */
    public enum Verdict {
        /** Every replica the read could go to holds no live data for the key: answered empty. */
        SKIP,
        /** A replica's copy (or this node's own filter) says the key may be live there. */
        LIVE,
        /** A replica's copy is older than the staleness bound, or missing. */
        STALE,
        /** A replica's owner says its filter is not ready, or its copy is incomplete. */
        NOT_READY,
        /** Not decided from copies: written through this node lately, a range moving, a client-set time, or too few replicas. */
        NOT_ELIGIBLE
    }

    /**
     * The answer for one key: the verdict, the owners whose copies said "live" (a read that then
     * finds nothing asks them to check), and for tracing, the copies used.
     */
    public record Check(Verdict verdict, List<UUID> liveOwners, String detail) {}

    private static final Check[] QUIET = new Check[Verdict.values().length];

    static {
        for (Verdict v : Verdict.values()) {
            QUIET[v.ordinal()] = new Check(v, List.of(), "");
        }
    }

    /** The answer, with its explanation only when one is wanted (tracing): no allocation otherwise. */
    private static Check answer(Verdict v, boolean explain, String detail) {
        return explain ? new Check(v, List.of(), detail) : QUIET[v.ordinal()];
    }

    /**
     * Whether a read of {@code key} at {@code cl} can be answered empty from the copies: every
     * live replica the read could be sent to (Cassandra's own read plan, so at ONE whichever one
     * the snitch picks, and at QUORUM any of them) must say it holds no live data. Lock-free.
     *
     * @param local this node's storage filter of the table (consulted when it is a replica itself)
     * @param nowInSec the read's "now" (a client may set it)
     * @param explain whether to describe the copies used, for tracing
     */
    public Check check(
            StorageFilter local,
            TableMetadata table,
            ByteBuffer key,
            Token token,
            ConsistencyLevel cl,
            long nowInSec,
            boolean explain) {
        UUID tableId = table.id.asUUID();
        OwnerTable own = owners.get(tableId);
        if (own == null) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "node filter off");
        }
        long now = System.currentTimeMillis();
        long staleness = own.options.stalenessMillis;
        long hash = Hashing.hash(key);
        if (recentWrites.writtenSince(tableId.getMostSignificantBits(), hash, now - staleness - 1000)) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "written through this node lately");
        }
        // The owners decided liveness at their "now": an earlier one (a client may set it) could see data still live.
        if (nowInSec < FBUtilities.nowInSeconds() - 1) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "read at a client-set time in the past");
        }
        if (!StorageService.instance
                .getTokenMetadata()
                .pendingEndpointsForToken(token, table.keyspace)
                .isEmpty()) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "token range moving");
        }
        ReplicaPlan.ForTokenRead plan;
        try {
            plan = ReplicaPlans.forRead(Keyspace.open(table.keyspace), token, null, cl, table.params.speculativeRetry);
        } catch (UnavailableException e) {
            return answer(Verdict.NOT_ELIGIBLE, explain, "unavailable");
        }
        ConcurrentHashMap<InetAddressAndPort, NodeCopy> tableCopies = copiesByEndpoint.get(tableId);
        InetAddressAndPort self = FBUtilities.getBroadcastAddressAndPort();
        StringBuilder detail = explain ? new StringBuilder() : null;
        List<UUID> live = null;
        boolean selfLive = false;
        for (Replica r : plan.readCandidates()) {
            if (detail != null && detail.length() > 0) {
                detail.append(", ");
            }
            if (r.endpoint().equals(self)) {
                if (!local.isReady()) {
                    return answer(Verdict.NOT_READY, explain, "this node's filter is not ready");
                }
                KeyState s = local.lookup(key, hash, token, nowInSec);
                selfLive |= s == KeyState.LIVE;
                if (detail != null) {
                    detail.append(r.endpoint()).append(" (this node): ").append(s);
                }
                continue;
            }
            NodeCopy copy = tableCopies == null ? null : tableCopies.get(r.endpoint());
            NodeCopy.View v = copy == null ? null : copy.view();
            if (v == null) {
                return answer(Verdict.STALE, explain, r.endpoint() + ": no copy");
            }
            if (!v.usable) {
                return answer(Verdict.NOT_READY, explain, r.endpoint() + ": copy not usable");
            }
            long age = now - v.freshMillis;
            if (age > staleness) {
                return answer(Verdict.STALE, explain, r.endpoint() + ": copy " + age + " ms old");
            }
            boolean maybe = v.filter.mightContainHash(hash);
            if (detail != null) {
                detail.append(r.endpoint())
                        .append(": epoch ")
                        .append(v.epoch)
                        .append(" seq ")
                        .append(copy.appliedSeq())
                        .append(", ")
                        .append(age)
                        .append(" ms old, ")
                        .append(maybe ? "maybe live" : "not live");
            }
            if (maybe) {
                if (live == null) {
                    live = new ArrayList<>(2);
                }
                live.add(copy.owner);
            }
        }
        Verdict v = selfLive || live != null ? Verdict.LIVE : Verdict.SKIP;
        if (live == null) {
            return answer(v, explain, detail == null ? "" : detail.toString());
        }
        return new Check(v, live, detail == null ? "" : detail.toString());
    }

    /** A write through this coordinator: reads of the key through it are not skipped for a while. */
    public void written(TableId table, ByteBuffer key) {
        if (owners.containsKey(table.asUUID())) {
            recentWrites.record(table.asUUID().getMostSignificantBits(), Hashing.hash(key), System.currentTimeMillis());
        }
    }

    /** Whether the table publishes node filters (so writes to it are worth recording). */
    public boolean enabled(TableId table) {
        return owners.containsKey(table.asUUID());
    }

    /**
     * A read the copies of {@code owners} called live found nothing: ask them to check the key
     * (a key whose rows were deleted one by one stays live in the filters until a read proves it dead).
     */
    public void verify(TableId table, ByteBuffer key, List<UUID> liveOwners) {
        UUID me = localHost();
        ByteBuffer copy =
                ByteBuffer.allocate(key.remaining()).put(key.duplicate()).flip();
        for (UUID owner : liveOwners) {
            submitRequest(() -> SyncKeyspace.writeRequest(owner, table.asUUID(), "verify", me, copy));
        }
    }

    private void submitRequest(Runnable r) {
        try {
            requests.execute(() -> {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    noSpam.info("Needle could not send a node-filter request: {}", e.toString());
                }
            });
        } catch (RejectedExecutionException e) {
            // Requests are hints; the next one asks again.
        }
    }

    // ---- receiving ----------------------------------------------------------------------------

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
        UUID me = localHost();
        UUID owner = row.get("owner", UUIDType.instance);
        UUID table = row.get("table_id", UUIDType.instance);
        if (me == null || owner == null || table == null) {
            return;
        }
        if (row.table().equals("requests")) {
            if (owner.equals(me)) {
                request(table, row.get("kind", UTF8Type.instance), row.get("key", BytesType.instance));
            }
            return;
        }
        if (owner.equals(me)) {
            return; // our own publication, applied to our replica of the sync keyspace
        }
        NodeCopy copy = copy(table, owner);
        if (copy == null) {
            return; // a table without node filtering here (yet)
        }
        long now = System.currentTimeMillis();
        switch (row.table()) {
            case "beats" -> {
                Long epoch = row.get("epoch", LongType.instance);
                Long seq = row.get("seq", LongType.instance);
                Long cut = row.get("cut_millis", LongType.instance);
                Boolean ready = row.get("ready", BooleanType.instance);
                // A heartbeat older than the one applied here arrives without the cells it lost.
                if (epoch != null && seq != null && cut != null && ready != null) {
                    copy.heartbeat(epoch, seq, cut, ready);
                }
            }
            case "deltas" -> {
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
                copy.batch(new OwnerFilter.Batch(epoch, seqStart, seqEnd, cut, c.hashes(), c.removals()), now);
            }
            case "snapshots" -> snapshotChunk(copy, owner, table, row, now);
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
        ByteBuffer bytes = row.get("filter");
        if (epochCell == null || seqCell == null || chunkCell == null || chunksCell == null || cutCell == null) {
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
        copy.snapshot(epoch, seq, cut, (KeyFilter) FilterIO.read(all), now);
    }

    /** A request to this node as an owner. */
    private void request(UUID table, String kind, ByteBuffer key) {
        OwnerTable o = owners.get(table);
        if (o == null || kind == null) {
            return;
        }
        if (kind.equals("snapshot")) {
            o.snapshotWanted = true;
        } else if (kind.equals("verify") && key != null && key.hasRemaining()) {
            o.storage.readFoundNothing(key);
        }
    }

    // ---- publishing ---------------------------------------------------------------------------

    private void runPublisher() {
        long lastMaintenance = 0;
        while (true) {
            try {
                UUID me = localHost();
                if (me != null && !stopping() && peersKnown() && keyspaceReady()) {
                    for (OwnerTable o : owners.values()) {
                        try {
                            publish(me, o);
                        } catch (RuntimeException | IOException e) {
                            o.published = false; // start over: copies stop trusting us meanwhile
                            noSpam.warn(
                                    "Needle could not publish the node filter of {}: {}", o.name(), e.toString(), e);
                        }
                    }
                    long now = System.currentTimeMillis();
                    if (now - lastMaintenance >= 250) {
                        lastMaintenance = now;
                        askForSnapshots(me, now);
                    }
                }
                Thread.sleep(BATCH_MILLIS);
            } catch (InterruptedException e) {
                return;
            } catch (Throwable t) {
                noSpam.error("Needle's node-filter publisher failed; it goes on", t);
            }
        }
    }

    /**
     * Whether the node is draining or shut down. Nothing is published then: a drain closes the
     * internode connections once their queues are empty, and a publisher that kept writing would
     * keep them from emptying until the drain's timeout (a minute). Copies elsewhere stop trusting
     * this node within S, as when it dies.
     */
    private static boolean stopping() {
        StorageService ss = StorageService.instance;
        return ss.isDraining() || ss.isDrained() || ss.isShutdown();
    }

    private boolean peersKnown;

    /**
     * Whether this node has joined the ring and gossip has heard of every node in it: before that,
     * a write to the sync keyspace makes Cassandra's failure detector log an error for each node
     * it does not know yet.
     */
    private boolean peersKnown() {
        if (peersKnown) {
            return true;
        }
        if (!StorageService.instance.isJoined()) {
            return false; // the ring is not loaded yet: it would look empty
        }
        for (InetAddressAndPort ep : StorageService.instance.getTokenMetadata().getAllEndpoints()) {
            if (Gossiper.instance.getEndpointStateForEndpoint(ep) == null) {
                return false;
            }
        }
        peersKnown = true;
        return true;
    }

    /** Whether the sync keyspace exists here; creates it (at most every few seconds) if not. */
    private boolean keyspaceReady() {
        if (keyspaceChecked && SyncKeyspace.exists()) {
            return true;
        }
        if (SyncKeyspace.exists()) {
            keyspaceChecked = true;
            return true;
        }
        long now = System.currentTimeMillis();
        if (now - lastCreateAttempt < 5000 || !StorageService.instance.isJoined()) {
            return false;
        }
        lastCreateAttempt = now;
        try {
            SyncKeyspace.create();
            logger.info("Needle created the {} keyspace for node filters", SyncKeyspace.NAME);
        } catch (RuntimeException e) {
            noSpam.warn(
                    "Needle could not create the {} keyspace ({}); node filters wait for it. Create it with the CQL"
                            + " in docs/node-filters.md if this persists",
                    SyncKeyspace.NAME,
                    e.toString());
        }
        return SyncKeyspace.exists();
    }

    private void publish(UUID me, OwnerTable o) throws IOException {
        long now = System.currentTimeMillis();
        StorageFilter s = o.storage;
        if (!s.isReady()) {
            beat(me, o, now, false);
            return;
        }
        long generation = s.unseenGeneration();
        if (!o.published || generation != o.epochGeneration || o.filter.overflowed()) {
            startEpoch(me, o, generation);
            return;
        }
        boolean beatDue = o.beatDue(now, o.ready());
        OwnerFilter.Batch b = OwnerTable.batchDue(o.filter.queued(), now - o.lastBatchMillis, beatDue, o.holdMillis())
                ? o.filter.drain()
                : null;
        if (b != null) {
            o.lastBatchMillis = now;
            if (s.unseenGeneration() != generation) {
                return; // this epoch is over: the next round starts a new one
            }
            ByteBuffer blob = SyncCodec.encode(b.hashes(), b.removals());
            o.bytesSent.addAndGet(blob.remaining());
            o.batchBytesSent.addAndGet(blob.remaining());
            o.changesSent.addAndGet(b.size());
            SyncKeyspace.writeBatch(me, o.table, b, blob);
        }
        if (o.outgrown(o.filter.publishedCount())) {
            sendSnapshot(me, o, false, OwnerTable.GROWTH_HEADROOM);
        } else if (o.snapshotWanted && now - o.lastSnapshotMillis >= SNAPSHOT_INTERVAL_MILLIS) {
            sendSnapshot(me, o, false, OwnerTable.HEADROOM);
        }
        beat(me, o, now, o.ready());
    }

    private void beat(UUID me, OwnerTable o, long now, boolean ready) {
        if (!o.beatDue(now, ready && o.ready())) {
            return;
        }
        OwnerFilter.Position p = o.filter.position();
        // Checked after the position is taken: data unseen by then makes the claim false.
        boolean claim = ready && o.ready();
        SyncKeyspace.writeBeat(me, o.table, p.epoch(), p.seq(), p.atMillis(), claim);
        o.lastBeatMillis = now;
        o.lastBeatEpoch = p.epoch();
        o.lastBeatClaim = claim;
    }

    /**
     * A new epoch: the published set is rebuilt from the data (every key the storage filter calls
     * live, while the write path reports new ones as they come), then sent as a snapshot.
     */
    private void startEpoch(UUID me, OwnerTable o, long generation) throws IOException {
        o.published = false;
        long started = System.currentTimeMillis();
        o.filter.newEpoch();
        o.epochGeneration = generation;
        long nowInSec = FBUtilities.nowInSeconds();
        o.storage.forEachKey(key -> {
            long hash = Hashing.hash(key);
            o.filter.decide(hash, () -> o.live(key, nowInSec));
        });
        if (!o.storage.isReady() || o.storage.unseenGeneration() != generation) {
            return; // something arrived unseen meanwhile: the next round starts again
        }
        sendSnapshot(me, o, true, OwnerTable.HEADROOM);
        o.published = true;
        o.epochsStarted.incrementAndGet();
        o.lastBeatMillis = 0; // say "ready" at once
        beat(me, o, System.currentTimeMillis(), true);
        logger.debug(
                "Needle node filter of {}: epoch {} published, {} keys, in {} ms",
                o.name(),
                o.filter.epoch(),
                o.filter.publishedCount(),
                System.currentTimeMillis() - started);
    }

    private void sendSnapshot(UUID me, OwnerTable o, boolean firstOfEpoch, double headroom) throws IOException {
        OwnerFilter.Snapshot snap = o.filter.snapshot(firstOfEpoch);
        // Within an epoch a snapshot has no less room than the last one gave the copies.
        KeyFilter f = o.snapshotFilter(snap.hashes(), headroom, firstOfEpoch ? 0 : o.snapshotCapacity);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        f.writeTo(out);
        byte[] bytes = out.toByteArray();
        int chunks = Math.max(1, (bytes.length + CHUNK_BYTES - 1) / CHUNK_BYTES);
        for (int i = 0; i < chunks; i++) {
            int from = i * CHUNK_BYTES;
            int len = Math.min(CHUNK_BYTES, bytes.length - from);
            SyncKeyspace.writeSnapshotChunk(
                    me,
                    o.table,
                    snap.epoch(),
                    snap.seq(),
                    i,
                    chunks,
                    snap.cutMillis(),
                    o.options.filter.name().toLowerCase(java.util.Locale.ROOT),
                    ByteBuffer.wrap(bytes, from, len));
        }
        o.bytesSent.addAndGet(bytes.length);
        o.snapshotsSent.incrementAndGet();
        o.snapshotWanted = false;
        o.lastSnapshotMillis = System.currentTimeMillis();
    }

    /** Copies that cannot be trusted until a snapshot comes ask their owners for one. */
    private void askForSnapshots(UUID me, long now) {
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
                submitRequest(() -> SyncKeyspace.writeRequest(owner, table, "snapshot", me, null));
            }
        }
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
            String state) {}

    /** What this node publishes and what copies it holds, for the virtual table. */
    public List<CopyStatus> status() {
        long now = System.currentTimeMillis();
        UUID me = localHost();
        List<CopyStatus> out = new ArrayList<>();
        for (OwnerTable o : owners.values()) {
            OwnerFilter.Position p = o.filter.position();
            out.add(new CopyStatus(
                    o.table,
                    me,
                    true,
                    p.epoch(),
                    p.seq(),
                    0,
                    o.filter.publishedCount(),
                    o.bytesSent.get(),
                    o.ready(),
                    o.ready() ? "publishing" : o.storage.isReady() ? "starting epoch" : "storage filter not ready"));
            ConcurrentHashMap<UUID, NodeCopy> tableCopies = copies.get(o.table);
            if (tableCopies == null) {
                continue;
            }
            for (Map.Entry<UUID, NodeCopy> c : tableCopies.entrySet()) {
                NodeCopy copy = c.getValue();
                NodeCopy.View v = copy.view();
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
                        state));
            }
        }
        return out;
    }
}
