package dev.needle.cassandra.node;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The owner side of one table's node filter: exactly which keys ({@link NodeKey}s) this node has
 * published as "may hold live data here" in the current epoch, and, for each node that receives
 * them ({@link Receivers}: the key's other replicas, or every other node), the ordered changes not
 * yet sent to it.
 *
 * <p>Each receiver has its own sequence: a change of a key gets the next sequence number of every
 * receiver of that key. A key is added ("+h") when it becomes live and was not published, removed
 * ("−h") when it stops being live and was published; so the copy of a receiver that applies its
 * snapshot and then its changes in sequence order holds exactly the published keys it receives at
 * its sequence number, and a removal never touches a fingerprint the copy does not hold
 * (docs/invariants.md, invariants 2 and 5a). Batches and snapshots carry the keys' filter hashes
 * ({@link NodeKey#filterHash}).
 *
 * <p>A key's decisions are serialized by its stripe's lock (the liveness check and the change
 * are one step), and the sequence numbers by the sequencer's, so the last change of a key
 * reflects the last state seen. Thread safe.
 *
 * <p>About 400 lines, on purpose: the published set, the receivers' queues and their sequence
 * numbers change together under those two locks, and split across classes each would have to
 * take the other's.
 */
final class OwnerFilter {
    private static final int STRIPES = 64;
    /** Changes waiting to be sent to one receiver beyond this many: the epoch is abandoned and snapshots sent instead. */
    static final int MAX_QUEUED = 1 << 20;
    /**
     * The most keys a table's published set holds ({@code -Dneedle.node_filter.max_published_keys},
     * default 50 million: 0.8 to 1.6 GB of native memory). A live key beyond it cannot be published,
     * so the set is no longer complete: the filter says so ({@link #full}) until an epoch fits.
     */
    static final long MAX_PUBLISHED = Long.getLong("needle.node_filter.max_published_keys", 50_000_000L);

    private final long maxPublished;

    private final ReentrantLock[] locks = new ReentrantLock[STRIPES];
    private final LongSet[] published = new LongSet[STRIPES];
    /** The size of the published set, kept beside it so that reading it takes no lock. */
    private final AtomicInteger publishedCount = new AtomicInteger();

    private final Object sequencer = new Object();
    /** The thread a change wakes ({@link #wakeWhenQueued}); null when none waits for one. */
    private volatile Thread waiting;
    /** How many changes a receiver's queue holds when a change wakes {@link #waiting}. */
    private volatile int wakeAtQueued = Integer.MAX_VALUE;

    // Guarded by sequencer.
    private long epoch;
    private Receivers receivers;
    private Stream[] streams = new Stream[0];
    private boolean overflowed;
    private boolean full;

    /** One receiver's sequence and the changes not yet sent to it. */
    private static final class Stream {
        long seq;
        long sentUpTo;
        /**
         * The epoch's first snapshot was cut for this receiver: its changes are queued from then
         * on. Before, they are only numbered: that snapshot holds them, and drops the queue, so an
         * epoch that starts from more keys than a queue holds ({@link #MAX_QUEUED}) still starts.
         */
        boolean snapshotted;

        long[] hashes = new long[64];
        boolean[] removals = new boolean[64];
        int queued;
        /** When the oldest change queued was queued ({@link System#nanoTime}). */
        long queuedSinceNanos;
        /** Published keys this receiver holds. */
        long keys;
    }

    OwnerFilter() {
        this(MAX_PUBLISHED);
    }

    OwnerFilter(long maxPublished) {
        this.maxPublished = maxPublished;
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
            published[i] = new LongSet(1024);
        }
    }

    /**
     * What a snapshot is for one receiver: the filter hashes of the published keys it receives,
     * cut at its sequence number {@code seq}; every change the owner made before {@code cutMillis}
     * (its clock) is in it.
     */
    record Snapshot(long epoch, long seq, long cutMillis, long[] hashes) {}

    /** Where a receiver's sequence stood at owner time {@code atMillis}: every change made before then is numbered {@code seq} or lower. */
    record Position(long epoch, long seq, long atMillis) {}

    /**
     * Changes {@code (seqStart, seqEnd]} of an epoch for one receiver, in order: the i-th has
     * sequence number {@code seqStart + 1 + i}. Cut at owner time {@code cutMillis}: every change
     * the owner made before then is in this batch or an earlier one. On the owner, {@code
     * queuedSinceNanos} is when its oldest change was queued ({@link System#nanoTime}; 0 in a
     * batch received).
     */
    record Batch(
            long epoch,
            long seqStart,
            long seqEnd,
            long cutMillis,
            long[] hashes,
            boolean[] removals,
            long queuedSinceNanos) {
        int size() {
            return hashes.length;
        }
    }

    /**
     * Starts a new epoch for {@code receivers}: nothing published, nothing queued; returns its id,
     * larger than any before.
     */
    long newEpoch(Receivers receivers) {
        lockAll();
        try {
            for (LongSet set : published) {
                set.clear();
            }
            publishedCount.set(0);
            synchronized (sequencer) {
                // Epochs only grow, also across restarts (the clock moves on): a copy tells a late
                // message of an old epoch from the start of a new one.
                epoch = Math.max(epoch + 1, System.currentTimeMillis());
                this.receivers = receivers;
                streams = new Stream[receivers.size()];
                for (int i = 0; i < streams.length; i++) {
                    streams[i] = new Stream();
                }
                overflowed = false;
                full = false;
                return epoch;
            }
        } finally {
            unlockAll();
        }
    }

    long epoch() {
        synchronized (sequencer) {
            return epoch;
        }
    }

    /** The receivers of this epoch (null before the first). */
    Receivers receivers() {
        synchronized (sequencer) {
            return receivers;
        }
    }

    /** The lock stripe of a key, from its filter hash (a key's token alone would crowd the stripes of its ranges). */
    private static int stripe(long hash) {
        return (int) (hash >>> 58);
    }

    /**
     * Decides, for one key, whether it is published: {@code live} is asked under the key's lock,
     * so two decisions for a key never interleave. Returns whether a change was queued.
     */
    boolean decide(long key, BooleanSupplier live) {
        return decide(key, live, true);
    }

    /**
     * Publishes a key known to be live: written with live data here, or arriving in an SSTable
     * that did not come through the write path (streaming, import). Returns whether a change was
     * queued.
     */
    boolean publish(long key) {
        return decide(key, () -> true, true);
    }

    /**
     * Withdraws a published key if {@code live} says it no longer is; a key not published is left
     * alone without asking (nothing that can only end liveness makes it live). Returns whether a
     * change was queued.
     */
    boolean retract(long key, BooleanSupplier live) {
        return decide(key, live, false);
    }

    /**
     * Has the change that brings a receiver's queue to {@code queued} changes wake {@code thread}
     * ({@link LockSupport#unpark}), once; a null thread wakes none. The publisher parks between
     * its rounds: a change that is to go out at once (in a light stream) or that fills a batch
     * wakes it instead of waiting for its timer, and the write path pays a volatile read when none
     * waits. A queue that held as many before the call wakes nothing: the caller looks at {@link
     * #queued} after.
     */
    void wakeWhenQueued(Thread thread, int queued) {
        if (thread == null) {
            wakeAtQueued = Integer.MAX_VALUE;
            waiting = null;
        } else {
            waiting = thread;
            wakeAtQueued = queued;
        }
    }

    private boolean decide(long key, BooleanSupplier live, boolean mayAdd) {
        long hash = NodeKey.filterHash(key);
        int s = stripe(hash);
        locks[s].lock();
        try {
            LongSet set = published[s];
            boolean was = set.contains(key);
            if (!was && !mayAdd) {
                return false;
            }
            boolean isLive = live.getAsBoolean();
            if (isLive && !was) {
                if (publishedCount.get() >= maxPublished) {
                    synchronized (sequencer) {
                        full = true;
                    }
                    return false;
                }
                set.add(key);
                publishedCount.incrementAndGet();
                enqueue(key, hash, false);
                return true;
            }
            if (!isLive && was) {
                set.remove(key);
                publishedCount.decrementAndGet();
                enqueue(key, hash, true);
                return true;
            }
            return false;
        } finally {
            locks[s].unlock();
        }
    }

    boolean isPublished(long key) {
        int s = stripe(NodeKey.filterHash(key));
        locks[s].lock();
        try {
            return published[s].contains(key);
        } finally {
            locks[s].unlock();
        }
    }

    /** Queues the change of {@code key} (whose filter hash is {@code hash}) for each of its receivers. */
    private void enqueue(long key, long hash, boolean removal) {
        int most = 0;
        synchronized (sequencer) {
            if (receivers == null) {
                return; // before the first epoch, which starts from the data
            }
            for (int r : receivers.of(key)) {
                Stream st = streams[r];
                st.keys += removal ? -1 : 1;
                if (!st.snapshotted) {
                    st.seq++;
                    continue;
                }
                if (st.queued == st.hashes.length) {
                    if (st.queued >= MAX_QUEUED) {
                        // The publisher starts a new epoch; the changes of this one no longer
                        // matter, and no later batch of it is sent (sequence numbers would no
                        // longer match).
                        overflowed = true;
                        continue;
                    }
                    st.hashes = Arrays.copyOf(st.hashes, st.queued * 2);
                    st.removals = Arrays.copyOf(st.removals, st.queued * 2);
                }
                if (st.queued == 0) {
                    st.queuedSinceNanos = System.nanoTime();
                }
                st.hashes[st.queued] = hash;
                st.removals[st.queued] = removal;
                st.queued++;
                st.seq++;
                most = Math.max(most, st.queued);
            }
        }
        if (most >= wakeAtQueued) {
            Thread t = waiting;
            if (t != null) {
                wakeWhenQueued(null, 0);
                LockSupport.unpark(t);
            }
        }
    }

    /** The most changes numbered and not yet taken by {@link #drain} for any one receiver. */
    int queued() {
        synchronized (sequencer) {
            int most = 0;
            for (Stream st : streams) {
                most = Math.max(most, st.queued);
            }
            return most;
        }
    }

    /** Whether changes were lost to an overflowing queue (then only a new epoch helps). */
    boolean overflowed() {
        synchronized (sequencer) {
            return overflowed;
        }
    }

    /**
     * Whether a live key could not be published for want of room: the set is then incomplete, no
     * batch is sent (its cut time would vouch for keys it lacks) and the owner must not claim ready
     * until a new epoch fits.
     */
    boolean full() {
        synchronized (sequencer) {
            return full;
        }
    }

    /**
     * The published keys that {@code receiver} holds, at this moment, and the last sequence number
     * of its they reflect. Changes still queued are in it; batches carry each change's own
     * sequence number, so a copy that starts from this snapshot skips those it already holds.
     */
    Snapshot snapshot(int receiver) {
        return snapshots(new int[] {receiver}, false)[0];
    }

    /**
     * {@link #snapshot} for several receivers, in one pass over the published set. With {@code
     * replacesQueue} (the epoch's first snapshots, which no copy can have followed before) their
     * queued changes are dropped.
     */
    Snapshot[] snapshots(int[] receivers, boolean replacesQueue) {
        lockAll();
        try {
            Receivers v;
            synchronized (sequencer) {
                v = this.receivers;
            }
            int[] slot = new int[v.size()];
            Arrays.fill(slot, -1);
            for (int i = 0; i < receivers.length; i++) {
                slot[receivers[i]] = i;
            }
            LongList[] out = new LongList[receivers.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = new LongList();
            }
            for (LongSet set : published) {
                for (long key : set.toArray()) {
                    long hash = NodeKey.filterHash(key);
                    for (int r : v.of(key)) {
                        if (slot[r] >= 0) {
                            out[slot[r]].add(hash);
                        }
                    }
                }
            }
            synchronized (sequencer) {
                long now = System.currentTimeMillis();
                Snapshot[] snaps = new Snapshot[receivers.length];
                for (int i = 0; i < receivers.length; i++) {
                    Stream st = streams[receivers[i]];
                    if (replacesQueue) {
                        st.sentUpTo = st.seq;
                        st.queued = 0;
                        st.snapshotted = true;
                    }
                    snaps[i] = new Snapshot(epoch, st.seq, now, out[i].toArray());
                }
                return snaps;
            }
        } finally {
            unlockAll();
        }
    }

    private void lockAll() {
        for (ReentrantLock l : locks) {
            l.lock();
        }
    }

    private void unlockAll() {
        for (ReentrantLock l : locks) {
            l.unlock();
        }
    }

    /** Takes the changes queued for {@code receiver} as one batch, or null if there are none. */
    Batch drain(int receiver) {
        synchronized (sequencer) {
            Stream st = receiver < streams.length ? streams[receiver] : null;
            if (st == null || st.queued == 0 || overflowed || full) {
                return null;
            }
            Batch b = new Batch(
                    epoch,
                    st.sentUpTo,
                    st.seq,
                    System.currentTimeMillis(),
                    Arrays.copyOf(st.hashes, st.queued),
                    Arrays.copyOf(st.removals, st.queued),
                    st.queuedSinceNanos);
            st.sentUpTo = st.seq;
            st.queued = 0;
            return b;
        }
    }

    /**
     * The epoch and the last sequence number assigned to {@code receiver}, at one instant: every
     * change for it up to there is sent or queued.
     */
    Position position(int receiver) {
        synchronized (sequencer) {
            long seq = receiver < streams.length ? streams[receiver].seq : 0;
            return new Position(epoch, seq, System.currentTimeMillis());
        }
    }

    /** How many published keys {@code receiver} holds. */
    long keysFor(int receiver) {
        synchronized (sequencer) {
            return receiver < streams.length ? streams[receiver].keys : 0;
        }
    }

    /** Native bytes the published set holds: read without a lock, for a gauge (may lag a growth). */
    long publishedBytes() {
        long bytes = 0;
        for (LongSet set : published) {
            bytes += set.bytes();
        }
        return bytes;
    }

    /** The most keys the published set holds. */
    long maxPublished() {
        return maxPublished;
    }

    /** How many keys are published: read without a lock, for gauges and the publisher's loop. */
    int publishedCount() {
        return publishedCount.get();
    }
}
