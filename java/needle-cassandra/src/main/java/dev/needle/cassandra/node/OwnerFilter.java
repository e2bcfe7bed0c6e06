package dev.needle.cassandra.node;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The owner side of one table's node filter: exactly which key hashes this node has published
 * as "may hold live data here" in the current epoch, and the ordered changes not yet sent.
 *
 * <p>Every change gets the next sequence number of the epoch. A key is added ("+h") when it
 * becomes live and was not published, removed ("−h") when it stops being live and was
 * published; so the copy of a coordinator that applies the snapshot and then the changes in
 * sequence order holds exactly the published set at its sequence number, and a removal never
 * touches a fingerprint the copy does not hold (docs/invariants.md, invariants 2 and 5a).
 *
 * <p>A key's decisions are serialized by its stripe's lock (the liveness check and the change
 * are one step), and the sequence numbers by the sequencer's, so the last change of a key
 * reflects the last state seen. Thread safe.
 */
final class OwnerFilter {
    private static final int STRIPES = 64;
    /** Changes waiting to be sent beyond this many: the epoch is abandoned and a snapshot sent instead. */
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

    // Guarded by sequencer.
    private long epoch;
    private long seq;
    private long sentUpTo;
    private long[] queuedHashes = new long[1024];
    private boolean[] queuedRemovals = new boolean[1024];
    private int queued;
    private boolean overflowed;
    private boolean full;

    OwnerFilter() {
        this(MAX_PUBLISHED);
    }

    OwnerFilter(long maxPublished) {
        this.maxPublished = maxPublished;
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
            published[i] = new LongSet(1024);
        }
        newEpoch();
    }

    /**
     * What an epoch's snapshot is: every published hash, cut at {@code seq}; every change the
     * owner made before {@code cutMillis} (its clock) is in it.
     */
    record Snapshot(long epoch, long seq, long cutMillis, long[] hashes) {}

    /** Where the sequence stood at owner time {@code atMillis}: every change made before then is numbered {@code seq} or lower. */
    record Position(long epoch, long seq, long atMillis) {}

    /**
     * Changes {@code (seqStart, seqEnd]} of an epoch, in order: the i-th has sequence number
     * {@code seqStart + 1 + i}. Cut at owner time {@code cutMillis}: every change the owner made
     * before then is in this batch or an earlier one.
     */
    record Batch(long epoch, long seqStart, long seqEnd, long cutMillis, long[] hashes, boolean[] removals) {
        int size() {
            return hashes.length;
        }
    }

    /** Starts a new epoch: nothing published, nothing queued; returns its id, larger than any before. */
    long newEpoch() {
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
                seq = 0;
                sentUpTo = 0;
                queued = 0;
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

    private static int stripe(long hash) {
        return (int) (hash >>> 58);
    }

    /**
     * Decides, for one key, whether it is published: {@code live} is asked under the key's lock,
     * so two decisions for a key never interleave. Returns whether a change was queued.
     */
    boolean decide(long hash, BooleanSupplier live) {
        return decide(hash, live, true);
    }

    /**
     * Publishes a key known to be live: written with live data here, or arriving in an SSTable
     * that did not come through the write path (streaming, import). Returns whether a change was
     * queued.
     */
    boolean publish(long hash) {
        return decide(hash, () -> true, true);
    }

    /**
     * Withdraws a published key if {@code live} says it no longer is; a key not published is left
     * alone without asking (nothing that can only end liveness makes it live). Returns whether a
     * change was queued.
     */
    boolean retract(long hash, BooleanSupplier live) {
        return decide(hash, live, false);
    }

    private boolean decide(long hash, BooleanSupplier live, boolean mayAdd) {
        int s = stripe(hash);
        locks[s].lock();
        try {
            LongSet set = published[s];
            boolean was = set.contains(hash);
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
                set.add(hash);
                publishedCount.incrementAndGet();
                enqueue(hash, false);
                return true;
            }
            if (!isLive && was) {
                set.remove(hash);
                publishedCount.decrementAndGet();
                enqueue(hash, true);
                return true;
            }
            return false;
        } finally {
            locks[s].unlock();
        }
    }

    boolean isPublished(long hash) {
        int s = stripe(hash);
        locks[s].lock();
        try {
            return published[s].contains(hash);
        } finally {
            locks[s].unlock();
        }
    }

    private void enqueue(long hash, boolean removal) {
        synchronized (sequencer) {
            if (queued == queuedHashes.length) {
                if (queued >= MAX_QUEUED) {
                    // The publisher starts a new epoch; the changes of this one no longer matter,
                    // and no later batch of it is sent (sequence numbers would no longer match).
                    overflowed = true;
                    return;
                }
                queuedHashes = Arrays.copyOf(queuedHashes, queued * 2);
                queuedRemovals = Arrays.copyOf(queuedRemovals, queued * 2);
            }
            queuedHashes[queued] = hash;
            queuedRemovals[queued] = removal;
            queued++;
            seq++;
        }
    }

    /** Changes numbered and not yet taken by {@link #drain}. */
    int queued() {
        synchronized (sequencer) {
            return queued;
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
     * The published set at this moment and the last sequence number it reflects. Changes still
     * queued are in it; batches carry each change's own sequence number, so a copy that starts
     * from this snapshot skips those it already holds. With {@code replacesQueue} (the epoch's
     * first snapshot, which no copy can have followed before) the queued changes are dropped.
     */
    Snapshot snapshot(boolean replacesQueue) {
        lockAll();
        try {
            int n = 0;
            for (LongSet set : published) {
                n += set.size();
            }
            long[] all = new long[n];
            int at = 0;
            for (LongSet set : published) {
                long[] part = set.toArray();
                System.arraycopy(part, 0, all, at, part.length);
                at += part.length;
            }
            synchronized (sequencer) {
                if (replacesQueue) {
                    sentUpTo = seq;
                    queued = 0;
                }
                return new Snapshot(epoch, seq, System.currentTimeMillis(), all);
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

    /** Takes the queued changes as one batch, or null if there are none. */
    Batch drain() {
        synchronized (sequencer) {
            if (queued == 0 || overflowed || full) {
                return null;
            }
            Batch b = new Batch(
                    epoch,
                    sentUpTo,
                    seq,
                    System.currentTimeMillis(),
                    Arrays.copyOf(queuedHashes, queued),
                    Arrays.copyOf(queuedRemovals, queued));
            sentUpTo = seq;
            queued = 0;
            return b;
        }
    }

    /** The epoch and last sequence number assigned, at one instant: every change up to it is sent or queued. */
    Position position() {
        synchronized (sequencer) {
            return new Position(epoch, seq, System.currentTimeMillis());
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
