package dev.needle.cassandra.node;

import com.codahale.metrics.Histogram;
import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.cassandra.storage.KeyEvents;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.CuckooFilter;
import dev.needle.filter.KeyFilter;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.utils.FBUtilities;

/**
 * One table's node filter on its owner: the storage filter's keys, published. It hears from the
 * storage filter of every key that may have become live or dead ({@link KeyEvents}) and decides
 * whether the published set changes; the {@link Publisher} sends the changes, the
 * snapshots and the heartbeats.
 *
 * <p>An epoch starts from the data (every key of the live SSTables and memtables that the
 * storage filter calls live) and then follows the events. Whenever the storage filter saw data
 * it could not report (an SSTable it had to scan, a write it could not record, a truncation), the
 * owner says "not ready" and starts a new epoch once the storage filter is ready again.
 */
final class OwnerTable implements KeyEvents {
    /** A snapshot's filter holds this many times the keys published when it is cut, so that the copies can grow. */
    static final double HEADROOM = 1.25;
    /**
     * The room of a snapshot sent because the published set outgrew the last one: the set is
     * growing, and with room for twice its keys the copies take a few snapshots while it grows
     * tenfold (each one the whole filter to every node) instead of about twenty.
     */
    static final double GROWTH_HEADROOM = 2.0;
    /**
     * The room of a snapshot that shrinks a copy whose keys stopped moving ({@link #oversized}):
     * with 13-bit fingerprints (the default {@code fp_rate}, 0.001) at the filter's design load,
     * 1.92 bytes per key the copy holds.
     */
    static final double REST_HEADROOM = 1.12;
    /**
     * A copy with more room than this for the keys it holds is shrunk once they stop moving: at
     * the default {@code fp_rate}, a copy at rest then takes at most 1.98 bytes per key it holds,
     * within the 2 bytes the node filters promise (so, with RF 3, 4 bytes per key a node
     * publishes).
     */
    static final double REST_MAX_HEADROOM = 1.16;

    final UUID table;
    final StorageFilter storage;
    final NeedleOptions options;
    final OwnerFilter filter = new OwnerFilter();

    // Written by the publisher thread only.
    /** The storage filter's unseen generation this epoch started from. */
    long epochGeneration = -1;
    /** The epoch's first snapshot went out: copies can follow it. */
    volatile boolean published;
    /** The reading of the data that builds the epoch's published set, while it runs or until it is finished; else null. */
    Future<?> building;
    /** When the epoch being built started. */
    long buildStartedMillis;
    /** Keys the last snapshot's filter of each receiver has room for, by receiver index. */
    long[] snapshotCapacity = new long[0];
    /**
     * The keys each receiver held when they last moved by more than {@link #STEADY_TOLERANCE} of
     * themselves, and when: how long a receiver's keys have been steady, by receiver index.
     */
    long[] steadyKeys = new long[0];
    /** When each receiver's keys last moved (see {@link #steadyKeys}), by receiver index; 0: not yet seen. */
    long[] steadySinceMillis = new long[0];
    /**
     * The least room a snapshot gives a copy: small, since a copy of few keys (an owner that
     * shares little of the ring with its receiver) keeps this room at rest, and the growth
     * snapshots of a small set are small too.
     */
    static final long MIN_CAPACITY = 256;

    /**
     * The least room a growth snapshot gives a copy: a set growing from nothing skips the
     * snapshots of a few hundred and a few thousand keys (each one the whole filter to every
     * receiver, while the load that grows the set is running) for 7 KB of room; a copy shrunk
     * at rest may still be smaller.
     */
    static final long MIN_GROWTH_CAPACITY = 4096;

    /** The room a snapshot gives a copy: {@code headroom} times the keys it holds, and at least {@code least} keys. */
    record Room(double headroom, long least) {
        long forKeys(long keys) {
            return Math.max(least, (long) (keys * headroom));
        }
    }

    /** An epoch's first snapshots and those a copy asks for. */
    static final Room EPOCH_ROOM = new Room(HEADROOM, MIN_CAPACITY);
    /** A snapshot sent because the set outgrew the copy ({@link #outgrown}). */
    static final Room GROWTH_ROOM = new Room(GROWTH_HEADROOM, MIN_GROWTH_CAPACITY);
    /** A snapshot that shrinks a copy at rest ({@link #oversized}). */
    static final Room REST_ROOM = new Room(REST_HEADROOM, MIN_CAPACITY);
    /** The most room a copy at rest keeps: one with more is {@link #oversized}. */
    static final Room REST_MAX_ROOM = new Room(REST_MAX_HEADROOM, MIN_CAPACITY);

    /** The per-receiver state of a new epoch's {@code count} receivers, all at zero. */
    void newReceivers(int count) {
        snapshotCapacity = new long[count];
        steadyKeys = new long[count];
        steadySinceMillis = new long[count];
        lastBatchTo = new long[count];
    }

    long lastBeatMillis;
    /** What the last heartbeat said: the epoch, and whether the filter could be trusted. */
    long lastBeatEpoch = -1;

    boolean lastBeatClaim;
    /** When the last batch went to each receiver of the epoch, by receiver index. */
    long[] lastBatchTo = new long[0];

    long lastSnapshotMillis;
    /** When the publisher found the published set full ({@link OwnerFilter#full}); 0 when it is not. */
    long fullSinceMillis;
    /** The receivers whose copies asked for a snapshot, by host id. */
    final java.util.Set<UUID> snapshotWanted = java.util.concurrent.ConcurrentHashMap.newKeySet();

    final AtomicLong bytesSent = new AtomicLong();
    final AtomicLong changesSent = new AtomicLong();
    /** The part of {@link #bytesSent} that carried batches of changes (the rest carried snapshots). */
    final AtomicLong batchBytesSent = new AtomicLong();

    final AtomicLong snapshotsSent = new AtomicLong();
    /** The part of {@link #snapshotsSent} that shrank a copy at rest ({@link #oversized}). */
    final AtomicLong shrinksSent = new AtomicLong();

    final AtomicLong epochsStarted = new AtomicLong();
    /** Bytes of other nodes' snapshots and batches of this table applied to copies here. */
    final AtomicLong bytesReceived = new AtomicLong();

    OwnerTable(UUID table, StorageFilter storage, NeedleOptions options) {
        this.table = table;
        this.storage = storage;
        this.options = options;
    }

    String name() {
        return storage.keyspace() + "." + storage.table();
    }

    /** The receivers of this table's changes as the ring stands now (null while the node does not know its ring). */
    Receivers currentReceivers() {
        return Receivers.current(storage.keyspace(), options.copyScope);
    }

    /**
     * Heartbeats go out every S/2: a copy stays trusted between two of them unless one takes more
     * than S/2 to arrive. Every heartbeat is a message to every receiver, which a node pays
     * whether or not anything changes, so they are no more frequent than that.
     */
    long beatIntervalMillis() {
        return beatIntervalMillis(options.stalenessMillis);
    }

    static long beatIntervalMillis(long stalenessMillis) {
        return Math.max(2, stalenessMillis / 2);
    }

    /**
     * Whether a heartbeat goes out now. Heartbeats go at the first round of each slot of the
     * interval on a grid of the node's own ({@code phaseMillis} shifts it, so that nodes do not
     * all beat at once): every table with the same S, or with bounds that are multiples of each
     * other, beats in the same rounds, and the publisher sends each receiver one message for all
     * of them.
     *
     * <p>A batch says how far the owner has got as well as a heartbeat does (copies take their
     * freshness from its cut time), so while batches flow, a heartbeat that would repeat the last
     * one's epoch and claim waits, up to 2S: under a steady load the sync then sends one message
     * per batch and almost no heartbeats. A heartbeat that says something new (another epoch, "not
     * ready", "ready" again) goes at its interval.
     *
     * @param nowMillis       the owner's time now
     * @param lastBeatMillis  when the last heartbeat went (0: none yet)
     * @param sinceLastBatch  milliseconds since the last batch
     * @param sameClaim       this heartbeat would say what the last one said
     * @param phaseMillis     the node's shift of the grid
     */
    static boolean beatDue(
            long nowMillis,
            long lastBeatMillis,
            long sinceLastBatch,
            boolean sameClaim,
            long intervalMillis,
            long stalenessMillis,
            long phaseMillis) {
        if (Math.floorDiv(nowMillis + phaseMillis, intervalMillis)
                == Math.floorDiv(lastBeatMillis + phaseMillis, intervalMillis)) {
            return false;
        }
        boolean batchesFlow = sinceLastBatch < intervalMillis;
        return !(sameClaim && batchesFlow && nowMillis - lastBeatMillis < 2 * stalenessMillis);
    }

    /**
     * When the next heartbeat may be due, after a round at {@code nowMillis} ({@link #beatDue}):
     * at the start of the grid's next slot, or, if this slot's heartbeat waited for flowing
     * batches, once no batch has gone for an interval or the last heartbeat is 2S old. The
     * publisher sleeps until then unless something else calls it sooner.
     */
    static long nextBeatMillis(
            long nowMillis,
            long lastBeatMillis,
            long lastBatchMillis,
            long intervalMillis,
            long stalenessMillis,
            long phaseMillis) {
        long slot = Math.floorDiv(nowMillis + phaseMillis, intervalMillis);
        long next = (slot + 1) * intervalMillis - phaseMillis;
        if (slot != Math.floorDiv(lastBeatMillis + phaseMillis, intervalMillis)) {
            next = Math.min(next, Math.min(lastBatchMillis + intervalMillis, lastBeatMillis + 2 * stalenessMillis));
        }
        return Math.max(next, nowMillis + 1);
    }

    /** {@link #nextBeatMillis} for this table after a round at {@code nowMillis}. */
    long nextBeatMillis(long nowMillis, long phaseMillis) {
        return nextBeatMillis(
                nowMillis,
                lastBeatMillis,
                oldestBatchMillis(),
                beatIntervalMillis(),
                options.stalenessMillis,
                phaseMillis);
    }

    /**
     * When the receiver that heard last from a batch did: batches flow for the table only while
     * every receiver gets them (a receiver whose keys did not change hears only heartbeats).
     */
    private long oldestBatchMillis() {
        long oldest = lastBatchTo.length == 0 ? pacing.lastBatchMillis : Long.MAX_VALUE;
        for (long t : lastBatchTo) {
            oldest = Math.min(oldest, t);
        }
        return oldest;
    }

    /** {@link #beatDue} for this table now, for a heartbeat that would claim {@code claim}. */
    boolean beatDue(long nowMillis, boolean claim, long phaseMillis) {
        boolean same = claim == lastBeatClaim && filter.epoch() == lastBeatEpoch;
        return beatDue(
                nowMillis,
                lastBeatMillis,
                nowMillis - oldestBatchMillis(),
                same,
                beatIntervalMillis(),
                options.stalenessMillis,
                phaseMillis);
    }

    /**
     * How long each change sent waited on this owner for its batch, in microseconds, counted at
     * its batch's oldest (so at most what it waited): the sync's own part of a copy's lag, apart
     * from Cassandra's delivery of the message. Null until the metrics are registered.
     */
    volatile Histogram changeWaitMicros;

    /** Counts the wait of every change of {@code b}, sent at {@code nowNanos}, at its oldest's. */
    void waited(OwnerFilter.Batch b, long nowNanos) {
        Histogram h = changeWaitMicros;
        if (h != null && b.queuedSinceNanos() != 0) {
            long micros = Math.max(0, (nowNanos - b.queuedSinceNanos()) / 1000);
            for (int i = 0; i < b.size(); i++) {
                h.update(micros);
            }
        }
    }

    /** When batches go out. */
    final BatchPacing pacing = new BatchPacing();

    /** Whether the queued changes go out in this round ({@link BatchPacing#due}). */
    boolean batchDue(long nowMillis, boolean beatDue) {
        return pacing.due(filter.queued(), nowMillis, beatDue, BatchPacing.holdMillis(options.stalenessMillis));
    }

    /** Whether the published set can be trusted by others right now. */
    boolean ready() {
        return published
                && storage.isReady()
                && storage.unseenGeneration() == epochGeneration
                && !filter.overflowed()
                && !filter.full();
    }

    boolean live(ByteBuffer key, long nowInSec) {
        Token token = storage.partitionToken(key);
        return storage.lookup(key, token, nowInSec) == KeyState.LIVE;
    }

    @Override
    public void written(ByteBuffer key, Token token, boolean withLiveData) {
        // A write with live data makes the key live (or, behind a newer deletion, a false
        // positive, which costs a read): no lookup on the write path. Only a write that can end
        // liveness (a deletion) looks the key up, and only if it is published.
        if (withLiveData) {
            filter.publish(NodeKey.of(token));
        } else {
            filter.retract(NodeKey.of(token), () -> live(key, FBUtilities.nowInSeconds()));
        }
    }

    @Override
    public void provenDead(ByteBuffer key, Token token) {
        filter.retract(NodeKey.of(token), () -> live(key, FBUtilities.nowInSeconds()));
    }

    @Override
    public void arriving(Token token) {
        filter.publish(NodeKey.of(token));
    }

    /**
     * A request from a coordinator, through the sync keyspace: "snapshot" (a copy needs one) or
     * "verify" (a read its copy called live found {@code key} empty: check it).
     */
    void requested(String kind, UUID requester, ByteBuffer key) {
        if ("snapshot".equals(kind) && requester != null) {
            snapshotWanted.add(requester);
        } else if ("verify".equals(kind) && key != null && key.hasRemaining()) {
            storage.readFoundNothing(key);
        }
    }

    /**
     * Whether the {@code keys} receiver {@code r} holds outgrew its last snapshot's room (its
     * copy's filter would fill).
     */
    boolean outgrewSnapshot(int r, long keys) {
        return r < snapshotCapacity.length && outgrown(keys, snapshotCapacity[r]);
    }

    /**
     * Whether {@code keys} outgrew a snapshot with room for {@code capacity}: past 95 % of it (90 %
     * of the filter's slots), a few percent before the filter's design load, so that the bigger
     * snapshot arrives before the copy's inserts start to fail (a copy that cannot insert a key
     * stops being trusted until it has the snapshot).
     */
    static boolean outgrown(long keys, long capacity) {
        return keys > capacity * 0.95;
    }

    /**
     * How long the keys of a receiver must stay steady before its copy is shrunk; {@code
     * -Dneedle.node_filter.shrink_after_ms} sets it (tests shorten it to see copies shrunk).
     */
    static final long SHRINK_AFTER_MILLIS = Long.getLong("needle.node_filter.shrink_after_ms", 60_000);

    /**
     * How long no change must have gone to a receiver before its copy is shrunk: a shrink is a
     * whole snapshot, sent when the copy's stream of changes is idle rather than in the middle of
     * a burst of inserts, whose cost per change it would multiply; {@code
     * -Dneedle.node_filter.quiet_ms} sets it.
     */
    static final long QUIET_MILLIS = Long.getLong("needle.node_filter.quiet_ms", 10_000);

    /**
     * A set whose count stays steady while changes keep flowing (TTLs expiring as much as the
     * inserts add) is never quiet; its copies are shrunk after this long steady even so, one
     * snapshot each: ten times {@link #SHRINK_AFTER_MILLIS}.
     */
    static final long SHRINK_UNDER_CHURN_AFTER_MILLIS = 10 * SHRINK_AFTER_MILLIS;

    /** Keys that move by at most this fraction of themselves are steady. */
    static final double STEADY_TOLERANCE = 0.02;

    /**
     * Notes the {@code keys} receiver {@code r} holds now: a move of more than {@link
     * #STEADY_TOLERANCE} starts a new steady period.
     */
    void observeKeys(int r, long keys, long nowMillis) {
        if (r >= steadyKeys.length) {
            return;
        }
        if (Math.abs(keys - steadyKeys[r]) > steadyKeys[r] * STEADY_TOLERANCE || steadySinceMillis[r] == 0) {
            steadyKeys[r] = keys;
            steadySinceMillis[r] = nowMillis;
        }
    }

    /**
     * Whether receiver {@code r}'s copy, of {@code keys}, has more room than a copy at rest needs
     * and is at rest: then a snapshot with {@link #REST_HEADROOM} shrinks it.
     */
    boolean oversized(int r, long keys, long nowMillis) {
        return r < snapshotCapacity.length
                && oversized(keys, snapshotCapacity[r], nowMillis - steadySinceMillis[r], nowMillis - lastBatchTo[r]);
    }

    /**
     * Whether a copy with room for {@code capacity} is oversized for {@code keys} that have been
     * steady for {@code steadyMillis}, with no change sent to it for {@code quietMillis}: more
     * room than {@link #REST_MAX_HEADROOM} times the keys, the keys steady for {@link
     * #SHRINK_AFTER_MILLIS} and the copy's changes quiet for {@link #QUIET_MILLIS} (or the keys
     * steady for {@link #SHRINK_UNDER_CHURN_AFTER_MILLIS}, whatever the changes). A set that grows
     * sends snapshots with room for twice its keys ({@link #GROWTH_HEADROOM}) and an epoch starts
     * with a quarter more ({@link #HEADROOM}): once the set stops, its copies come down to about an
     * eighth more, one snapshot per copy per steady period (after it, the copy fits and is not
     * shrunk again until its keys move).
     */
    static boolean oversized(long keys, long capacity, long steadyMillis, long quietMillis) {
        boolean atRest = steadyMillis >= SHRINK_AFTER_MILLIS
                && (quietMillis >= QUIET_MILLIS || steadyMillis >= SHRINK_UNDER_CHURN_AFTER_MILLIS);
        return atRest && capacity > REST_MAX_ROOM.forKeys(keys);
    }

    /**
     * The filter a snapshot carries to receiver {@code r}: the hashes, with the {@code room} they
     * call for, and for at least {@code minCapacity} keys.
     */
    KeyFilter snapshotFilter(int r, long[] hashes, Room room, long minCapacity) {
        long capacity = Math.max(minCapacity, room.forKeys(hashes.length));
        while (true) {
            KeyFilter f = options.tracksDeletions()
                    ? CuckooFilter.create(capacity, options.fpRate)
                    : BloomFilter.create(capacity, options.fpRate);
            boolean all = true;
            for (long h : hashes) {
                if (!f.insertHash(h)) {
                    all = false;
                    break;
                }
            }
            if (all) {
                snapshotCapacity[r] = capacity;
                return f;
            }
            capacity += capacity / 4;
        }
    }
}
