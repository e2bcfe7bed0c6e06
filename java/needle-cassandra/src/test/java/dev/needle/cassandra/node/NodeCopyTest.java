package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.filter.CuckooFilter;
import dev.needle.filter.KeyFilter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The owner's published set and a coordinator's copy of it, against a model: whatever order the
 * batches arrive in, duplicated or lost, a copy that says it is at sequence number w never denies
 * a key the owner had published at w (invariant 5a), holds exactly as many keys, and asks for a
 * snapshot when a batch is missing.
 */
class NodeCopyTest {
    private static final double FP = 0.001;
    private static final long RING = 42;
    /** One receiver, which gets every key. */
    private static final Receivers RECEIVERS =
            Receivers.everyKeyTo(RING, new java.util.UUID[] {java.util.UUID.randomUUID()}, null);

    private static final int[] ONE = {0};

    private static OwnerFilter oneReceiver() {
        OwnerFilter owner = new OwnerFilter();
        OwnerFilterTest.startEpoch(owner, RECEIVERS);
        return owner;
    }

    private static KeyFilter filterOf(long[] hashes) {
        KeyFilter f = CuckooFilter.create(Math.max(4096, hashes.length * 2L), FP);
        for (long h : hashes) {
            assertTrue(f.insertHash(h));
        }
        return f;
    }

    /** The owner's published set after each sequence number, replayed from the batches. */
    private static final class History {
        final Map<Long, Set<Long>> atSeq = new HashMap<>();
        final Set<Long> current = new HashSet<>();

        void apply(OwnerFilter.Batch b) {
            for (int i = 0; i < b.size(); i++) {
                if (b.removals()[i]) {
                    assertTrue(current.remove(b.hashes()[i]), "a removal of a key not published");
                } else {
                    assertTrue(current.add(b.hashes()[i]), "an addition of a key already published");
                }
            }
            atSeq.put(b.seqEnd(), new HashSet<>(current));
        }
    }

    @Test
    void aCopyNeverDeniesAKeyPublishedAtItsSequenceNumber() {
        for (long seed = 1; seed <= 20; seed++) {
            run(new Random(seed), false);
        }
    }

    /**
     * The same with filters sized as the owner sizes its snapshots (a quarter of room), so copies
     * fill up as the owner grows, and snapshots delivered late, after batches that follow them.
     */
    @Test
    void aCopyOfAGrowingOwnerWithLateSnapshotsNeverDeniesAKey() {
        for (long seed = 1; seed <= 20; seed++) {
            run(new Random(seed), true);
        }
    }

    private static KeyFilter snapshotFilter(long[] hashes, boolean tight) {
        if (!tight) {
            return filterOf(hashes);
        }
        for (long capacity = Math.max(32, hashes.length * 5L / 4); ; capacity += capacity / 4) {
            KeyFilter f = CuckooFilter.create(capacity, FP);
            boolean all = true;
            for (long h : hashes) {
                all &= f.insertHash(h);
            }
            if (all) {
                return f;
            }
        }
    }

    private static void run(Random rnd, boolean growing) {
        OwnerFilter owner = oneReceiver();
        Map<Long, Boolean> live = new HashMap<>();
        long[] keys = new long[500];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = rnd.nextLong();
        }
        OwnerFilter.Snapshot first = owner.snapshots(ONE, true)[0];
        History history = new History();
        history.atSeq.put(first.seq(), Set.of());
        NodeCopy copy = new NodeCopy(java.util.UUID.randomUUID());
        copy.snapshot(first.epoch(), first.seq(), first.cutMillis(), RING, snapshotFilter(first.hashes(), growing), 0);
        copy.heartbeat(first.epoch(), first.seq(), first.cutMillis(), true);
        List<OwnerFilter.Batch> inFlight = new ArrayList<>();
        List<OwnerFilter.Snapshot> snapshotsInFlight = new ArrayList<>();
        boolean mended = false;
        for (int round = 0; round < 300; round++) {
            for (int op = rnd.nextInt(20); op > 0; op--) {
                long k = keys[rnd.nextInt(keys.length)];
                boolean nowLive = rnd.nextInt(growing ? 5 : 3) > 0;
                live.put(k, nowLive);
                owner.decide(k, () -> live.getOrDefault(k, false));
            }
            OwnerFilter.Batch b = owner.drain(0);
            if (b != null) {
                history.apply(b);
                inFlight.add(b);
                if (rnd.nextInt(10) == 0) {
                    inFlight.add(b); // delivered twice
                }
            }
            // Deliver some of what is in flight, in any order; lose one now and then.
            Collections.shuffle(inFlight, rnd);
            for (int n = rnd.nextInt(inFlight.size() + 1); n > 0; n--) {
                OwnerFilter.Batch d = inFlight.remove(inFlight.size() - 1);
                if (rnd.nextInt(50) != 0) {
                    copy.batch(d, round);
                }
            }
            check(copy, history);
            assertTrue(growing || copy.current().usable, "a copy without growth stopped being trusted");
            boolean wanted = copy.needsSnapshot() && rnd.nextInt(4) == 0;
            if (wanted || (growing && rnd.nextInt(15) == 0)) {
                OwnerFilter.Snapshot s = owner.snapshot(0);
                assertEquals(history.current, toSet(s.hashes()), "the snapshot is the published set");
                snapshotsInFlight.add(s);
            }
            // Snapshots arrive at once without growth, or some rounds late with it.
            for (int i = snapshotsInFlight.size() - 1; i >= 0; i--) {
                if (!growing || rnd.nextInt(3) == 0) {
                    OwnerFilter.Snapshot s = snapshotsInFlight.remove(i);
                    boolean wasFull = copy.needsSnapshot() && copy.current() != null && !copy.current().usable;
                    copy.snapshot(s.epoch(), s.seq(), s.cutMillis(), RING, snapshotFilter(s.hashes(), growing), round);
                    mended |= wasFull && copy.current().usable;
                    check(copy, history);
                }
            }
        }
        if (growing) {
            assertTrue(mended || copy.current().usable, "a full copy was never mended by a snapshot");
        }
    }

    private static Set<Long> toSet(long[] hashes) {
        Set<Long> s = new HashSet<>();
        for (long h : hashes) {
            s.add(h);
        }
        return s;
    }

    /** What a trusted copy promises; a copy that is full (so not trusted) promises nothing. */
    private static void check(NodeCopy copy, History history) {
        NodeCopy.Epoch v = copy.current();
        if (!v.usable) {
            return;
        }
        long w = copy.appliedSeq();
        Set<Long> published = history.atSeq.get(w);
        assertNotNull(published, "the copy is at sequence " + w + ", which no batch ended at");
        for (long h : published) {
            assertTrue(v.filter.mightContainHash(h), "a false negative at sequence " + w);
        }
        assertEquals(published.size(), v.filter.count(), "the copy holds other keys than the owner published");
    }

    @Test
    void aBatchAfterAGapWaitsAndTheCopyAsksForASnapshot() {
        OwnerFilter owner = oneReceiver();
        OwnerFilter.Snapshot s = owner.snapshots(ONE, true)[0];
        NodeCopy copy = new NodeCopy(java.util.UUID.randomUUID());
        copy.snapshot(s.epoch(), s.seq(), s.cutMillis(), RING, filterOf(s.hashes()), 0);
        copy.heartbeat(s.epoch(), s.seq(), s.cutMillis(), true);
        owner.publish(1);
        OwnerFilter.Batch lost = owner.drain(0);
        owner.publish(2);
        OwnerFilter.Batch next = owner.drain(0);
        copy.batch(next, 1);
        assertEquals(s.seq(), copy.appliedSeq(), "a batch after a gap was applied");
        assertTrue(copy.needsSnapshot());
        assertEquals(0, copy.current().filter.count(), "the copy holds a change that follows a gap");
        copy.batch(lost, 2);
        assertEquals(next.seqEnd(), copy.appliedSeq(), "the waiting batch follows once the gap is filled");
        assertFalse(copy.needsSnapshot());
        assertTrue(copy.current().filter.mightContainHash(NodeKey.filterHash(1))
                && copy.current().filter.mightContainHash(NodeKey.filterHash(2)));
    }

    @Test
    void trustNeedsAReadyOwnerOfTheSameEpochAndAFreshHeartbeat() {
        OwnerFilter owner = oneReceiver();
        OwnerFilter.Snapshot s = owner.snapshots(ONE, true)[0];
        NodeCopy copy = new NodeCopy(java.util.UUID.randomUUID());
        assertNull(copy.current());
        long t0 = s.cutMillis();
        copy.snapshot(s.epoch(), s.seq(), t0, RING, filterOf(s.hashes()), 0);
        assertFalse(copy.current().trusted(t0, 1_000), "trusted before the owner said it is ready");
        copy.heartbeat(s.epoch(), s.seq(), t0 + 500, true);
        assertTrue(copy.current().trusted(t0 + 1_400, 1_000));
        assertFalse(copy.current().trusted(t0 + 1_600, 1_000), "trusted beyond the staleness bound");
        // A heartbeat ahead of what the copy has applied does not make it fresher.
        owner.publish(7);
        OwnerFilter.Position p = owner.position(0);
        long later = p.atMillis() + 5_000;
        copy.heartbeat(p.epoch(), p.seq(), later, true);
        assertFalse(copy.current().trusted(later, 1_000), "fresh on a heartbeat the copy has not caught up with");
        copy.batch(owner.drain(0), 3);
        assertTrue(copy.current().trusted(later, 1_000), "the heartbeat counts once its changes are applied");
        // The owner restarts: a new, larger epoch; the old copy is not used.
        long oldEpoch = s.epoch();
        owner.newEpoch(RECEIVERS);
        assertTrue(owner.epoch() > oldEpoch);
        copy.heartbeat(owner.epoch(), 0, later, false);
        assertFalse(copy.current().usable);
        assertTrue(copy.needsSnapshot());
        // A late snapshot of the old epoch is ignored; the new one replaces the copy.
        copy.snapshot(oldEpoch, 99, later, RING, filterOf(new long[] {5}), 4);
        assertEquals(oldEpoch, copy.current().epoch);
        OwnerFilter.Snapshot s2 = owner.snapshots(ONE, true)[0];
        copy.snapshot(s2.epoch(), s2.seq(), s2.cutMillis(), RING, filterOf(s2.hashes()), 5);
        copy.heartbeat(s2.epoch(), s2.seq(), s2.cutMillis(), true);
        assertEquals(s2.epoch(), copy.current().epoch);
        assertTrue(copy.current().usable);
    }

    /** The last batches lost, nothing after them but heartbeats: the copy asks for a snapshot, and the snapshot settles it. */
    @Test
    void heartbeatsAheadOfEveryBatchMeanAGap() {
        OwnerFilter owner = oneReceiver();
        OwnerFilter.Snapshot s = owner.snapshots(ONE, true)[0];
        NodeCopy copy = new NodeCopy(java.util.UUID.randomUUID());
        copy.snapshot(s.epoch(), s.seq(), s.cutMillis(), RING, filterOf(s.hashes()), 0);
        copy.heartbeat(s.epoch(), s.seq(), s.cutMillis(), true);
        assertFalse(copy.needsSnapshot());
        owner.publish(9);
        owner.drain(0); // lost
        OwnerFilter.Position p = owner.position(0);
        copy.heartbeat(p.epoch(), p.seq(), p.atMillis(), true);
        assertTrue(copy.needsSnapshot(), "the owner is further on than any batch that came");
        OwnerFilter.Snapshot again = owner.snapshot(0);
        copy.snapshot(again.epoch(), again.seq(), again.cutMillis(), RING, filterOf(again.hashes()), 1);
        assertFalse(copy.needsSnapshot(), "still asking after the snapshot");
        assertTrue(copy.current().trusted(p.atMillis(), 1_000), "the heartbeat counts once the snapshot covers it");
        assertTrue(copy.current().filter.mightContainHash(NodeKey.filterHash(9)));
    }

    /** A copy of {@code owner}'s new epoch in a filter for {@code capacity} keys, trusted. */
    private static NodeCopy trustedCopy(OwnerFilter owner, long capacity) {
        OwnerFilter.Snapshot s = owner.snapshots(ONE, true)[0];
        NodeCopy copy = new NodeCopy(java.util.UUID.randomUUID());
        copy.snapshot(s.epoch(), s.seq(), s.cutMillis(), RING, filterOf(s.hashes(), capacity), 0);
        copy.heartbeat(s.epoch(), s.seq(), s.cutMillis(), true);
        return copy;
    }

    private static KeyFilter filterOf(long[] hashes, long capacity) {
        KeyFilter f = CuckooFilter.create(capacity, FP);
        for (long h : hashes) {
            assertTrue(f.insertHash(h));
        }
        return f;
    }

    /**
     * An owner that grows sends a bigger snapshot, but the batches after it travel faster and
     * fill the copy's old filter: the copy takes the bigger snapshot late and applies those
     * batches to it again, instead of staying full (untrusted) for good.
     */
    @Test
    void aBiggerSnapshotOvertakenByLaterBatchesIsTakenAndTheyAreAppliedAgain() {
        OwnerFilter owner = oneReceiver();
        NodeCopy copy = trustedCopy(owner, 64);
        long small = copy.current().filter.capacity();
        OwnerFilter.Snapshot bigger = null;
        Random rnd = new Random(11);
        List<Long> keys = new ArrayList<>();
        for (int b = 0; b < 40; b++) {
            for (int i = 0; i < 10; i++) {
                keys.add(rnd.nextLong());
                owner.publish(keys.get(keys.size() - 1));
            }
            copy.batch(owner.drain(0), b);
            if (b == 3) {
                bigger = owner.snapshot(0); // sent now, delivered after every batch below
            }
        }
        assertTrue(copy.needsSnapshot(), "400 keys fit in a filter for " + small);
        assertFalse(copy.current().usable, "a full copy is trusted");
        long last = owner.position(0).seq();
        assertEquals(last, copy.appliedSeq());
        copy.snapshot(bigger.epoch(), bigger.seq(), bigger.cutMillis(), RING, filterOf(bigger.hashes(), 1024), 50);
        assertEquals(last, copy.appliedSeq(), "the copy is behind the batches it had applied");
        assertFalse(copy.needsSnapshot(), "the copy still asks for a snapshot");
        assertTrue(copy.current().usable);
        assertEquals(400, copy.current().filter.count());
        for (long k : keys) {
            assertTrue(copy.current().filter.mightContainHash(NodeKey.filterHash(k)), "a false negative for key " + k);
        }
        // An owner that grows while no copy is full: the bigger snapshot is taken as well.
        OwnerFilter.Snapshot grown = owner.snapshot(0);
        owner.publish(rnd.nextLong());
        copy.batch(owner.drain(0), 60);
        copy.snapshot(grown.epoch(), grown.seq(), grown.cutMillis(), RING, filterOf(grown.hashes(), 4096), 61);
        assertTrue(copy.current().filter.capacity() >= 4096, "the bigger filter was not taken");
        assertEquals(401, copy.current().filter.count());
        assertEquals(owner.position(0).seq(), copy.appliedSeq());
        // A snapshot of the same size behind the batches changes nothing.
        KeyFilter held = copy.current().filter;
        copy.snapshot(grown.epoch(), grown.seq(), grown.cutMillis(), RING, filterOf(grown.hashes(), 4096), 62);
        assertTrue(held == copy.current().filter, "a snapshot no bigger and behind the batches replaced the copy");
    }

    /**
     * An owner whose set stopped growing shrinks its copies: a smaller snapshot at the copy's own
     * sequence number replaces the copy (the same keys in less room); behind it, it does not.
     */
    @Test
    void aSmallerSnapshotAtTheCopysSequenceNumberShrinksItAndBehindItDoesNot() {
        OwnerFilter owner = oneReceiver();
        NodeCopy copy = trustedCopy(owner, 65_536);
        Random rnd = new Random(14);
        List<Long> keys = new ArrayList<>();
        for (int k = 0; k < 3_000; k++) {
            keys.add(rnd.nextLong());
            owner.publish(keys.get(k));
        }
        copy.batch(owner.drain(0), 1);
        OwnerFilter.Snapshot now = owner.snapshot(0);
        assertEquals(now.seq(), copy.appliedSeq());
        copy.snapshot(now.epoch(), now.seq(), now.cutMillis(), RING, filterOf(now.hashes(), 4096), 2);
        assertTrue(copy.current().filter.capacity() < 65_536, "the copy was not shrunk");
        assertTrue(copy.current().usable);
        assertEquals(3_000, copy.current().filter.count());
        for (long k : keys) {
            assertTrue(copy.current().filter.mightContainHash(NodeKey.filterHash(k)), "a false negative for key " + k);
        }
        KeyFilter held = copy.current().filter;
        owner.publish(rnd.nextLong());
        copy.batch(owner.drain(0), 3);
        copy.snapshot(now.epoch(), now.seq(), now.cutMillis(), RING, filterOf(now.hashes(), 4096), 4);
        assertTrue(held == copy.current().filter, "a snapshot behind the batches replaced the copy");
        assertEquals(3_001, copy.current().filter.count());
    }

    /** A full copy that has applied every batch takes a snapshot at the same sequence number (an idle owner). */
    @Test
    void aFullCopyTakesASnapshotAtTheSequenceNumberItIsAt() {
        OwnerFilter owner = oneReceiver();
        NodeCopy copy = trustedCopy(owner, 64);
        Random rnd = new Random(12);
        for (int k = 0; k < 200; k++) {
            owner.publish(rnd.nextLong());
        }
        copy.batch(owner.drain(0), 1);
        assertTrue(copy.needsSnapshot());
        OwnerFilter.Snapshot now = owner.snapshot(0);
        assertEquals(now.seq(), copy.appliedSeq());
        copy.snapshot(now.epoch(), now.seq(), now.cutMillis(), RING, filterOf(now.hashes(), 512), 2);
        assertFalse(copy.needsSnapshot());
        assertEquals(200, copy.current().filter.count());
    }

    /**
     * A snapshot older than the batches the copy still keeps: a copy with room ignores it; a full
     * copy takes it at its own sequence number and asks for the changes it lacks (a gap).
     */
    @Test
    void aSnapshotBehindTheKeptBatchesMendsOnlyAFullCopyAndLeavesAGap() {
        OwnerFilter owner = oneReceiver();
        NodeCopy copy = trustedCopy(owner, 8192);
        Random rnd = new Random(13);
        owner.publish(rnd.nextLong());
        copy.batch(owner.drain(0), 1);
        OwnerFilter.Snapshot old = owner.snapshot(0);
        for (int b = 0; b < NodeCopy.RECENT_BATCHES + 10; b++) {
            owner.publish(rnd.nextLong());
            copy.batch(owner.drain(0), 2);
        }
        KeyFilter held = copy.current().filter;
        copy.snapshot(old.epoch(), old.seq(), old.cutMillis(), RING, filterOf(old.hashes(), 16384), 3);
        assertTrue(
                held == copy.current().filter, "a bigger snapshot the kept batches no longer reach back to was taken");
        assertFalse(copy.needsSnapshot());
        // Fill the copy: 8,192 slots are not enough.
        while (!copy.needsSnapshot()) {
            for (int i = 0; i < 500; i++) {
                owner.publish(rnd.nextLong());
            }
            copy.batch(owner.drain(0), 4);
        }
        assertFalse(copy.current().usable);
        copy.snapshot(old.epoch(), old.seq(), old.cutMillis(), RING, filterOf(old.hashes(), 16384), 5);
        assertEquals(old.seq(), copy.appliedSeq(), "a full copy did not take the snapshot");
        assertTrue(copy.needsSnapshot(), "the changes after the snapshot are missing, yet the copy asks for nothing");
        OwnerFilter.Snapshot now = owner.snapshot(0);
        copy.snapshot(
                now.epoch(), now.seq(), now.cutMillis(), RING, filterOf(now.hashes(), now.hashes().length * 2L), 6);
        assertFalse(copy.needsSnapshot());
        assertTrue(copy.current().usable);
    }
}
