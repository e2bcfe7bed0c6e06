package dev.needle.cassandra.node;

import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.KeyFilter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.cassandra.gms.FailureDetector;
import org.apache.cassandra.gms.Gossiper;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner's side of node filters: one thread that, in rounds ({@link BatchPacing#nextRound}),
 * publishes for each opted-in table ({@link OwnerTable}) which keys may hold live data here: a
 * snapshot per epoch, then batches of changes as they come ({@link BatchPacing#batchDue}), and
 * heartbeats ({@link OwnerTable#beatDue}), each sent to the nodes that keep copies of the table's
 * keys ({@link Receivers}) as rows of {@link SyncKeyspace}. An epoch belongs to one ring: when the
 * ring changes, a new one starts. Between rounds it has the copies that need a snapshot ask their
 * owners for one.
 *
 * <p>Longer than 400 lines because the round is one thread's: the changes, heartbeats, epochs and
 * snapshots it sends share that thread's state (the round's beats, the owners' published sets and
 * what each receiver was last sent) without a lock; what holds state of its own ({@link
 * OwnerTable}, {@link OwnerFilter}, {@link Receivers}, {@link SyncKeyspace}) is in files of its own.
 */
final class Publisher {
    private static final Logger logger = LoggerFactory.getLogger(Publisher.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    /** Snapshot bytes per row of the sync keyspace. */
    static final int CHUNK_BYTES = 1 << 20;
    /**
     * The shortest time between two rounds that are not woken by a change, and the wait while an
     * epoch is read: a change that goes out at once ({@link BatchPacing#batchDue}) wakes the
     * publisher, and held changes are looked at when they may go ({@link BatchPacing#nextRound}).
     */
    static final long BATCH_MILLIS = 5;
    /**
     * The longest the publisher sleeps between rounds when no change, heartbeat or epoch calls it
     * sooner: how late it at most notices a snapshot request, a copy to shrink or data it could
     * not see. The rounds cost the node CPU whether or not they send anything, so they run when
     * something is due rather than every {@link #BATCH_MILLIS}.
     */
    static final long MAX_ROUND_MILLIS = 50;
    /** An owner sends at most one asked-for snapshot of a table this often. */
    static final long SNAPSHOT_INTERVAL_MILLIS = 1000;
    /** A table whose live keys did not fit its published set tries a new epoch this often. */
    static final long FULL_RETRY_MILLIS = 10 * 60_000;

    private final Map<UUID, OwnerTable> owners;
    private final Copies copies;
    /** The heartbeats of this round, one message per receiver for all tables ({@link SyncKeyspace.Beats}). */
    private final Map<UUID, SyncKeyspace.Beats> roundBeats = new java.util.LinkedHashMap<>();
    /**
     * Reads the data of new epochs ({@link #startEpoch}), one table at a time, off the publisher's
     * thread: an epoch of a large table takes seconds, and the other tables' copies would go stale
     * meanwhile.
     */
    private final ExecutorService epochBuilder = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "needle-node-filter-epoch");
        t.setDaemon(true);
        return t;
    });

    private Thread thread;
    private volatile boolean keyspaceChecked;
    /** Nodes that start together do not all create the keyspace at once: the first attempt waits 1 to 5 s. */
    private long lastCreateAttempt = System.currentTimeMillis()
            - 4000
            + java.util.concurrent.ThreadLocalRandom.current().nextLong(4000);

    Publisher(Map<UUID, OwnerTable> owners, Copies copies) {
        this.owners = owners;
        this.copies = copies;
    }

    /** Starts the publishing thread, once (the first table with node filters on starts it). */
    synchronized void start() {
        if (thread == null) {
            thread = new Thread(this::run, "needle-node-filter-publisher");
            thread.setDaemon(true);
            thread.start();
        }
    }

    private void run() {
        long lastMaintenance = 0;
        while (!Thread.currentThread().isInterrupted()) {
            long nextRound = System.currentTimeMillis() + MAX_ROUND_MILLIS;
            try {
                UUID me = NodeFilters.localHost();
                if (me != null && !stopping() && peersKnown() && keyspaceReady(me)) {
                    try {
                        for (OwnerTable o : owners.values()) {
                            try {
                                nextRound = Math.min(nextRound, publish(me, o));
                            } catch (RuntimeException | IOException e) {
                                o.published = false; // start over: copies stop trusting us meanwhile
                                nextRound = System.currentTimeMillis() + BATCH_MILLIS;
                                noSpam.warn(
                                        "Needle could not publish the node filter of {}: {}",
                                        o.name(),
                                        e.toString(),
                                        e);
                            }
                        }
                    } finally {
                        sendBeats();
                    }
                    long now = System.currentTimeMillis();
                    if (now - lastMaintenance >= 250) {
                        lastMaintenance = now;
                        copies.askForSnapshots(me, now);
                    }
                }
            } catch (Throwable t) {
                noSpam.error("Needle's node-filter publisher failed; it goes on", t);
            }
            long sleep = nextRound - System.currentTimeMillis();
            if (sleep > 0) {
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(sleep));
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

    /** When this node first found the sync keyspace missing (0: not yet). */
    private long keyspaceMissingSince;

    /**
     * A node that has waited this long for another node to create the sync keyspace creates it
     * itself (the node that should may lack the plugin, or be stuck).
     */
    static final long CREATE_FALLBACK_MILLIS = 60_000;

    /**
     * Whether the sync keyspace exists here; creates it (at most every few seconds) if not and
     * this node is the one to ({@link #createsKeyspace}).
     */
    private boolean keyspaceReady(UUID me) {
        if (keyspaceChecked && SyncKeyspace.exists()) {
            return true;
        }
        if (SyncKeyspace.exists()) {
            keyspaceChecked = true;
            return true;
        }
        long now = System.currentTimeMillis();
        if (keyspaceMissingSince == 0) {
            keyspaceMissingSince = now;
        }
        if (now - lastCreateAttempt < 5000
                || !StorageService.instance.isJoined()
                || !(createsKeyspace(me) || now - keyspaceMissingSince >= CREATE_FALLBACK_MILLIS)) {
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

    /**
     * Whether this node is the one that creates the sync keyspace: the live node with the least
     * host id. Every node that creates it writes nine schema changes, and the schema versions of
     * several nodes doing so at once (each node's first table with node filters registers at about
     * the same time) keep every node pulling schemas from the others for a minute or more after
     * they agree, each pull rewriting and flushing the schema tables: CPU a loaded cluster lacks.
     */
    private static boolean createsKeyspace(UUID me) {
        var ring = StorageService.instance.getTokenMetadata();
        for (InetAddressAndPort ep : ring.getAllEndpoints()) {
            UUID id = ring.getHostId(ep);
            if (id != null && id.compareTo(me) < 0 && FailureDetector.instance.isAlive(ep)) {
                return false;
            }
        }
        return true;
    }

    /**
     * One round of table {@code o}: sends what is due, and returns by when it wants the next
     * round (the run loop takes the soonest of all tables', and at most {@link
     * #MAX_ROUND_MILLIS}).
     */
    private long publish(UUID me, OwnerTable o) throws IOException {
        long now = System.currentTimeMillis();
        long soon = now + BATCH_MILLIS;
        if (o.building != null) {
            if (!o.building.isDone()) {
                beat(me, o, now, false); // the copies know the epoch is not published yet
                return soon;
            }
            finishEpoch(me, o);
            return soon;
        }
        StorageFilter s = o.storage;
        if (!s.isReady()) {
            beat(me, o, now, false);
            return o.nextBeatMillis(now, phaseMillis(me));
        }
        Receivers receivers = o.currentReceivers();
        if (receivers == null) {
            return o.nextBeatMillis(now, phaseMillis(me)); // the ring is not known yet
        }
        long generation = s.unseenGeneration();
        if (o.filter.full()) {
            // The copies are told not to trust the set; now and then a new epoch sees whether the
            // live keys fit again (deletions, TTLs and compactions shrink them).
            if (o.fullSinceMillis == 0) {
                warnFull(o, now);
            }
            if (now - o.fullSinceMillis < FULL_RETRY_MILLIS) {
                beat(me, o, now, false);
                return o.nextBeatMillis(now, phaseMillis(me));
            }
            o.fullSinceMillis = 0;
            startEpoch(me, o, generation, receivers);
            return soon;
        }
        if (!o.published
                || generation != o.epochGeneration
                || o.filter.overflowed()
                || !receivers.sameAs(o.filter.receivers())) {
            // A node joined, left or moved, or the replication changed: which node holds which
            // keys changed with it, so the copies start over from a new epoch's snapshots.
            startEpoch(me, o, generation, receivers);
            return soon;
        }
        boolean beatDue = o.beatDue(now, o.ready(), phaseMillis(me));
        if (o.batchDue(now, beatDue)) {
            o.pacing.batchSent(now, o.filter.queued());
            if (s.unseenGeneration() != generation) {
                return soon; // this epoch is over: the next round starts a new one
            }
            for (int r = 0; r < receivers.size(); r++) {
                OwnerFilter.Batch b = o.filter.drain(r);
                if (b == null) {
                    continue;
                }
                o.waited(b, System.nanoTime());
                ByteBuffer blob = SyncCodec.encode(b.hashes(), b.removals());
                o.bytesSent.addAndGet(blob.remaining());
                o.batchBytesSent.addAndGet(blob.remaining());
                o.changesSent.addAndGet(b.size());
                o.lastBatchTo[r] = now;
                SyncKeyspace.sendBatch(receivers, r, me, o.table, b, blob);
            }
        }
        List<Integer> grown = new ArrayList<>();
        List<Integer> asked = new ArrayList<>();
        List<Integer> oversized = new ArrayList<>();
        boolean mayAnswer = now - o.lastSnapshotMillis >= SNAPSHOT_INTERVAL_MILLIS;
        for (int r = 0; r < receivers.size(); r++) {
            long keys = o.filter.keysFor(r);
            o.observeKeys(r, keys, now);
            if (o.outgrewSnapshot(r, keys)) {
                grown.add(r);
            } else if (mayAnswer && o.snapshotWanted.contains(receivers.hostIds[r])) {
                asked.add(r);
            } else if (mayAnswer && o.oversized(r, keys, now)) {
                oversized.add(r);
            }
        }
        sendSnapshots(me, o, receivers, grown, false, false, OwnerTable.GROWTH_ROOM);
        sendSnapshots(me, o, receivers, asked, false, false, OwnerTable.EPOCH_ROOM);
        if (!oversized.isEmpty() && o.filter.queued() == 0) {
            // Only with nothing queued: the snapshot is then at the copy's own sequence number,
            // which a copy takes whatever its size (NodeCopy#snapshot).
            sendSnapshots(me, o, receivers, oversized, false, true, OwnerTable.REST_ROOM);
            o.shrinksSent.addAndGet(oversized.size());
        }
        beat(me, o, now, o.ready());
        return nextRound(o, now, o.nextBeatMillis(now, phaseMillis(me)));
    }

    /**
     * When table {@code o}, which has published, wants its next round ({@link
     * BatchPacing#nextRound}). The wake by a change is armed before the queue is looked at again,
     * so a change queued in between is seen one way or the other.
     */
    private long nextRound(OwnerTable o, long now, long nextBeat) {
        BatchPacing.NextRound next =
                o.pacing.nextRound(o.filter.queued(), now, BatchPacing.holdMillis(o.options.stalenessMillis), nextBeat);
        o.filter.wakeWhenQueued(Thread.currentThread(), next.wakeAtQueued());
        if (o.filter.queued() >= next.wakeAtQueued()) {
            o.filter.wakeWhenQueued(null, 0);
            return now; // the change came meanwhile
        }
        return next.atMillis();
    }

    /**
     * Adds a heartbeat for every receiver of the epoch to this round's messages, if one is due.
     * They go out at the end of the round ({@link #sendBeats}), after the round's batches and
     * snapshots, which a heartbeat must never overtake.
     */
    private void beat(UUID me, OwnerTable o, long now, boolean ready) {
        if (!o.beatDue(now, ready && o.ready(), phaseMillis(me))) {
            return;
        }
        Receivers receivers = o.filter.receivers();
        if (receivers == null) {
            return; // no epoch yet: no copy to tell anything
        }
        OwnerFilter.Position[] at = new OwnerFilter.Position[receivers.size()];
        for (int r = 0; r < at.length; r++) {
            at[r] = o.filter.position(r);
        }
        // Checked after the positions are taken: data unseen by then makes the claim false.
        boolean claim = ready && o.ready();
        for (int r = 0; r < at.length; r++) {
            InetAddressAndPort to = receivers.endpoints[r];
            roundBeats
                    .computeIfAbsent(receivers.hostIds[r], id -> new SyncKeyspace.Beats(id, to, me))
                    .add(o.table, at[r].epoch(), at[r].seq(), at[r].atMillis(), claim);
        }
        o.lastBeatMillis = now;
        o.lastBeatEpoch = at.length == 0 ? o.filter.epoch() : at[0].epoch();
        o.lastBeatClaim = claim;
    }

    /** Sends this round's heartbeats: one message per receiver, whatever the number of tables. */
    private void sendBeats() {
        for (SyncKeyspace.Beats b : roundBeats.values()) {
            try {
                b.send();
            } catch (RuntimeException e) {
                noSpam.warn("Needle could not send node-filter heartbeats: {}", e.toString(), e);
            }
        }
        roundBeats.clear();
    }

    /**
     * Where this node's heartbeat grid starts ({@link OwnerTable#beatDue}): from its host id, so
     * that the nodes of a cluster spread their heartbeats instead of sending them all at once.
     */
    private static long phaseMillis(UUID me) {
        return Math.floorMod(me.getLeastSignificantBits() ^ me.getMostSignificantBits(), 60_000L);
    }

    /**
     * A new epoch: the published set is rebuilt from the data (every key the storage filter calls
     * live, while the write path reports new ones as they come), then sent to each receiver as a
     * snapshot of the keys it holds ({@link #finishEpoch}). The data is read on the epoch
     * builder's thread, so that this thread goes on sending the other tables' changes and
     * heartbeats meanwhile, and this table's heartbeats, which say it is not ready.
     */
    private void startEpoch(UUID me, OwnerTable o, long generation, Receivers receivers) {
        o.published = false;
        o.buildStartedMillis = System.currentTimeMillis();
        o.filter.newEpoch(receivers);
        o.newReceivers(receivers.size());
        o.epochGeneration = generation;
        long nowInSec = FBUtilities.nowInSeconds();
        o.building = epochBuilder.submit(() -> {
            o.storage.forEachKey(key -> {
                long k = NodeKey.of(o.storage.partitionToken(key));
                o.filter.decide(k, () -> o.live(key, nowInSec));
            });
            return null;
        });
    }

    /**
     * Publishes the epoch whose set {@link #startEpoch} built: its first snapshots, then a
     * heartbeat that says it is ready. If reading the data failed, or data arrived unseen
     * meanwhile, the next round starts a new epoch instead.
     */
    private void finishEpoch(UUID me, OwnerTable o) throws IOException {
        Future<?> built = o.building;
        o.building = null;
        try {
            built.get();
        } catch (ExecutionException e) {
            throw new IOException("reading the keys of " + o.name() + " for a new epoch failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        long generation = o.epochGeneration;
        Receivers receivers = o.filter.receivers();
        if (!o.storage.isReady() || o.storage.unseenGeneration() != generation) {
            return; // something arrived unseen meanwhile: the next round starts again
        }
        if (o.filter.full()) {
            warnFull(o, System.currentTimeMillis());
            beat(me, o, System.currentTimeMillis(), false);
            return;
        }
        List<Integer> all = new ArrayList<>(receivers.size());
        for (int r = 0; r < receivers.size(); r++) {
            all.add(r);
        }
        sendSnapshots(me, o, receivers, all, true, true, OwnerTable.EPOCH_ROOM);
        o.published = true;
        o.epochsStarted.incrementAndGet();
        o.lastBeatMillis = 0; // say "ready" at once
        beat(me, o, System.currentTimeMillis(), true);
        logger.debug(
                "Needle node filter of {}: epoch {} published, {} keys to {}, in {} ms",
                o.name(),
                o.filter.epoch(),
                o.filter.publishedCount(),
                receivers,
                System.currentTimeMillis() - o.buildStartedMillis);
    }

    private static void warnFull(OwnerTable o, long now) {
        o.fullSinceMillis = now;
        noSpam.warn(
                "Needle node filter of {}: more live keys than the {} a published set holds"
                        + " (-Dneedle.node_filter.max_published_keys); its copies are not trusted, so reads of"
                        + " it go to the replicas. Raise the limit, or set node_filter 'off' for this table;"
                        + " a new epoch tries again in {} minutes",
                o.name(),
                o.filter.maxPublished(),
                FULL_RETRY_MILLIS / 60_000);
    }

    /**
     * Sends receivers {@code rs} a snapshot of the keys each holds: with {@code firstOfEpoch}, the
     * epoch's first (their queued changes are in it and dropped). Within an epoch a snapshot has
     * no less room than the last one gave the copy unless {@code mayShrink}: a copy may have
     * taken the bigger one's room already and filled it with the batches after. {@code room}:
     * how much room each gives its copy.
     */
    private void sendSnapshots(
            UUID me,
            OwnerTable o,
            Receivers receivers,
            List<Integer> rs,
            boolean firstOfEpoch,
            boolean mayShrink,
            OwnerTable.Room room)
            throws IOException {
        if (rs.isEmpty()) {
            return;
        }
        int[] indexes = rs.stream().mapToInt(Integer::intValue).toArray();
        OwnerFilter.Snapshot[] snaps = o.filter.snapshots(indexes, firstOfEpoch);
        for (int i = 0; i < indexes.length; i++) {
            int r = indexes[i];
            OwnerFilter.Snapshot snap = snaps[i];
            KeyFilter f = o.snapshotFilter(r, snap.hashes(), room, mayShrink ? 0 : o.snapshotCapacity[r]);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            f.writeTo(out);
            byte[] bytes = out.toByteArray();
            int chunks = Math.max(1, (bytes.length + CHUNK_BYTES - 1) / CHUNK_BYTES);
            for (int c = 0; c < chunks; c++) {
                int from = c * CHUNK_BYTES;
                int len = Math.min(CHUNK_BYTES, bytes.length - from);
                SyncKeyspace.sendSnapshotChunk(
                        receivers,
                        r,
                        me,
                        o.table,
                        snap,
                        c,
                        chunks,
                        o.options.filter.name().toLowerCase(java.util.Locale.ROOT),
                        ByteBuffer.wrap(bytes, from, len));
            }
            o.bytesSent.addAndGet(bytes.length);
            o.snapshotsSent.incrementAndGet();
            o.snapshotWanted.remove(receivers.hostIds[r]);
        }
        o.lastSnapshotMillis = System.currentTimeMillis();
    }
}
