package dev.needle.cassandra.node;

import dev.needle.filter.KeyFilter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * This coordinator's copy of one other node's filter of one table: the owner's last snapshot,
 * and the changes after it applied strictly in sequence order.
 *
 * <p>A copy at sequence {@code w} holds exactly the set the owner had published at {@code w}
 * (invariant 5a), so a removal only ever removes what the copy holds. Changes that arrive early
 * wait for the ones before them; a change of another epoch waits for that epoch's snapshot.
 *
 * <p>Trust: the owner's clock time up to which every change is applied ({@link Epoch#freshMillis})
 * is known from the snapshot's and the batches' cut times and from heartbeats whose sequence
 * number the copy has reached. A coordinator skips on the copy's word only while that time is
 * within the staleness bound S of now, the owner says its filter is ready, and the copy is of the
 * owner's current epoch (invariant 5b, 5d).
 *
 * <p>Updates are serialized by this object's lock; lookups read {@link #current()} without locking.
 */
final class NodeCopy {
    /** Batches waiting for earlier ones (or for their epoch's snapshot) beyond this many: the copy asks for a snapshot. */
    static final int MAX_PENDING = 4096;
    /**
     * Batches and changes kept after they are applied, for a snapshot that arrives after them: the
     * last 5 s of batches at one per 5 ms, and at most 16,384 changes of 9 bytes each.
     */
    static final int RECENT_BATCHES = 1024;

    static final int RECENT_CHANGES = 1 << 14;

    /** What lookups read: one epoch of the owner's filter, and how fresh it is. */
    static final class Epoch {
        final KeyFilter filter;
        final long epoch;
        /** The owner's {@link Receivers#fingerprint} for this epoch: which keys the copy holds. */
        final long ring;
        /** Owner time before which every change is applied. */
        volatile long freshMillis;
        /** The owner's filter is ready, and the copy is of its current epoch and complete. */
        volatile boolean usable;

        Epoch(KeyFilter filter, long epoch, long ring, long freshMillis) {
            this.filter = filter;
            this.epoch = epoch;
            this.ring = ring;
            this.freshMillis = freshMillis;
        }

        /** Whether a lookup at {@code nowMillis} may trust this copy under staleness bound {@code stalenessMillis}. */
        boolean trusted(long nowMillis, long stalenessMillis) {
            return usable && nowMillis - freshMillis <= stalenessMillis;
        }
    }

    /** The owner's host id. */
    final java.util.UUID owner;

    private volatile Epoch current;

    // Guarded by this.
    private long applied = -1; // sequence number the current epoch is at
    /** Batches not applied yet, by epoch, then by first sequence number. */
    private final Map<Long, TreeMap<Long, OwnerFilter.Batch>> pending = new java.util.HashMap<>();

    private int pendingCount;
    private long beatEpoch = -1;
    private boolean beatReady;
    /** Heartbeats (sequence number, owner time) the copy has not reached yet. */
    private final TreeMap<Long, Long> beatsAhead = new TreeMap<>();

    private boolean broken;
    private long lastChange;
    /**
     * The last batches applied to the current epoch (at most {@link #RECENT_BATCHES} batches and {@link
     * #RECENT_CHANGES} changes), to apply again to a snapshot that they overtook.
     */
    private final ArrayDeque<OwnerFilter.Batch> recent = new ArrayDeque<>();

    private long recentChanges;

    NodeCopy(java.util.UUID owner) {
        this.owner = owner;
    }

    /** The epoch lookups read now, or null before the first snapshot. */
    Epoch current() {
        return current;
    }

    /**
     * A complete snapshot arrived: it replaces the copy if it is of a newer epoch, or of the same
     * epoch and further on. Epochs only grow, so an older one is a late message.
     *
     * <p>A snapshot of the same epoch at the copy's own sequence number is taken if its room
     * differs (an owner that stopped growing shrinks its copies). One that the batches after it
     * have overtaken (it is large and travels slower) is taken too when it mends the copy: when
     * the copy's filter is full, or when the snapshot's is bigger (its owner grew, and the old
     * filter would fill). The batches applied since its sequence number are applied to it again,
     * from {@link #recent}; if they are no longer all there, a full copy takes it at its own
     * sequence number and asks for the rest (a gap).
     */
    synchronized void snapshot(long epoch, long seq, long cutMillis, long ring, KeyFilter filter, long nowMillis) {
        Epoch v = current;
        if (epoch < beatEpoch || (v != null && epoch < v.epoch)) {
            return;
        }
        List<OwnerFilter.Batch> replay = List.of();
        if (v != null && epoch == v.epoch && seq <= applied) {
            // At the copy's own sequence number a snapshot holds the keys the copy holds, so it
            // may replace it whatever its size: that is how an owner whose set stopped growing
            // shrinks its copies. Behind it, only a bigger one (or a full copy) makes it worth it.
            boolean same = seq == applied;
            long room = filter.capacity(), held = v.filter.capacity();
            if (!broken && (same ? room == held : room <= held)) {
                return; // the copy is further on (or as far) and has room
            }
            replay = recentAfter(seq);
            if (replay == null) {
                if (!broken) {
                    return;
                }
                replay = List.of();
            }
        }
        long before = applied;
        applied = seq;
        broken = false;
        Epoch next = new Epoch(filter, epoch, ring, cutMillis);
        recent.clear();
        recentChanges = 0;
        for (OwnerFilter.Batch b : replay) {
            apply(next, b);
        }
        if (v != null && v.epoch == epoch && applied == before) {
            next.freshMillis = Math.max(next.freshMillis, v.freshMillis); // the same changes as the epoch it replaces
        } else if (v != null && v.epoch == epoch && applied < before) {
            // A gap: the owner was at `before` by then. Like a heartbeat ahead, it makes the copy
            // ask for a snapshot, and counts toward freshness once the copy gets there.
            beatsAhead.merge(before, v.freshMillis, Math::max);
        }
        current = next;
        lastChange = nowMillis;
        if (epoch > beatEpoch) {
            beatsAhead.clear(); // of an older epoch
        }
        catchUpBeats(next);
        drainPending();
        updateUsable();
    }

    /**
     * The batches applied since sequence number {@code seq}, in order and without a hole, or null
     * if {@link #recent} no longer reaches back to it.
     */
    private List<OwnerFilter.Batch> recentAfter(long seq) {
        List<OwnerFilter.Batch> out = new ArrayList<>();
        for (OwnerFilter.Batch b : recent) {
            if (b.seqEnd() <= seq) {
                continue;
            }
            if (out.isEmpty() && b.seqStart() > seq) {
                return null;
            }
            out.add(b);
        }
        return out;
    }

    /** A batch of changes arrived (perhaps out of order, perhaps twice, perhaps before its epoch's snapshot). */
    synchronized void batch(OwnerFilter.Batch b, long nowMillis) {
        Epoch v = current;
        long newest = Math.max(beatEpoch, v == null ? -1 : v.epoch);
        if (b.epoch() < newest || (v != null && b.epoch() == v.epoch && b.seqEnd() <= applied)) {
            return; // of an epoch the owner has left, or applied already
        }
        if (v != null && b.epoch() == v.epoch && b.seqStart() <= applied) {
            apply(v, b);
            lastChange = nowMillis;
            drainPending();
        } else if (pendingCount >= MAX_PENDING) {
            broken = true; // too far behind: only a snapshot helps
        } else if (pending.computeIfAbsent(b.epoch(), e -> new TreeMap<>()).put(b.seqStart(), b) == null) {
            pendingCount++;
        }
        updateUsable();
    }

    /** A heartbeat: the owner's epoch, last sequence number and clock, and whether its filter is ready. */
    synchronized void heartbeat(long epoch, long seq, long ownerMillis, boolean ready) {
        if (epoch < beatEpoch) {
            return; // late
        }
        if (epoch > beatEpoch) {
            beatsAhead.clear();
        }
        beatEpoch = epoch;
        beatReady = ready;
        Epoch v = current;
        if (v != null && v.epoch == epoch && ready) {
            if (seq <= applied) {
                v.freshMillis = Math.max(v.freshMillis, ownerMillis);
            } else {
                beatsAhead.put(seq, ownerMillis);
                while (beatsAhead.size() > 64) {
                    beatsAhead.pollFirstEntry();
                }
            }
        }
        updateUsable();
    }

    /**
     * Applies a batch that starts at or before {@code applied} to epoch {@code v}: entries already
     * held are skipped. The batch is kept in {@link #recent}.
     */
    private void apply(Epoch v, OwnerFilter.Batch b) {
        long[] hashes = b.hashes();
        boolean[] removals = b.removals();
        for (int i = 0; i < hashes.length; i++) {
            long seq = b.seqStart() + 1 + i;
            if (seq <= applied) {
                continue;
            }
            if (removals[i]) {
                if (v.filter.supportsDelete()) {
                    v.filter.deleteHash(hashes[i]);
                }
            } else if (!v.filter.insertHash(hashes[i])) {
                broken = true; // full: the owner sends a bigger snapshot when its count grows
            }
        }
        applied = b.seqEnd();
        v.freshMillis = Math.max(v.freshMillis, b.cutMillis());
        catchUpBeats(v);
        recent.addLast(b);
        recentChanges += b.size();
        while (recentChanges > RECENT_CHANGES || recent.size() > RECENT_BATCHES) {
            recentChanges -= recent.removeFirst().size();
        }
    }

    /** Heartbeats the copy has now reached count toward its freshness. */
    private void catchUpBeats(Epoch v) {
        for (Iterator<Map.Entry<Long, Long>> it =
                        beatsAhead.headMap(applied, true).entrySet().iterator();
                it.hasNext(); ) {
            v.freshMillis = Math.max(v.freshMillis, it.next().getValue());
            it.remove();
        }
    }

    /** Applies the waiting batches that now follow on, and drops those of epochs the owner has left. */
    private void drainPending() {
        Epoch v = current;
        long newest = Math.max(beatEpoch, v.epoch);
        pending.keySet().removeIf(epoch -> {
            boolean drop = epoch < newest && epoch != v.epoch;
            if (drop) {
                pendingCount -= pending.get(epoch).size();
            }
            return drop;
        });
        TreeMap<Long, OwnerFilter.Batch> mine = pending.get(v.epoch);
        while (mine != null && !mine.isEmpty() && mine.firstKey() <= applied) {
            OwnerFilter.Batch b = mine.pollFirstEntry().getValue();
            pendingCount--;
            if (b.seqEnd() > applied) {
                apply(v, b);
            }
        }
    }

    private void updateUsable() {
        Epoch v = current;
        if (v != null) {
            v.usable = !broken && beatReady && beatEpoch == v.epoch;
        }
    }

    /** Whether this copy needs a snapshot from its owner: none yet, another epoch, a gap, or a full filter. */
    synchronized boolean needsSnapshot() {
        Epoch v = current;
        if (v == null || broken || beatEpoch > v.epoch) {
            return true;
        }
        TreeMap<Long, OwnerFilter.Batch> mine = pending.get(v.epoch);
        // A gap: batches wait for one that did not come, or heartbeats say the owner is further on
        // than any batch that came (the last batches were lost). The caller gives the missing
        // batches time to arrive before it asks.
        return (mine != null && !mine.isEmpty()) || !beatsAhead.isEmpty();
    }

    /** When the copy last changed (snapshot or batch applied), local clock. */
    synchronized long lastChangeMillis() {
        return lastChange;
    }

    synchronized long appliedSeq() {
        return applied;
    }

    synchronized int pendingBatches() {
        return pendingCount;
    }

    /** The owner's last heartbeat said its filter is not ready (or the copy has no epoch yet): forget nothing, trust nothing. */
    synchronized void invalidate() {
        beatReady = false;
        updateUsable();
    }
}
