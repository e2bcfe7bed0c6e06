package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class OwnerFilterTest {
    /** One receiver, which gets every key. */
    private static final Receivers RECEIVERS = Receivers.everyKeyTo(1, new UUID[] {UUID.randomUUID()}, null);

    private static OwnerFilter oneReceiver(long maxPublished) {
        OwnerFilter owner = new OwnerFilter(maxPublished);
        startEpoch(owner, RECEIVERS);
        return owner;
    }

    /** A new epoch for {@code receivers} and its first snapshots, after which changes are queued. */
    static void startEpoch(OwnerFilter owner, Receivers receivers) {
        owner.newEpoch(receivers);
        owner.snapshots(java.util.stream.IntStream.range(0, receivers.size()).toArray(), true);
    }

    /**
     * The epoch's changes before its first snapshots are in them: they are numbered, not queued,
     * so an epoch that starts from more keys than a receiver's queue holds does not overflow it
     * (it would start over for ever), and the changes after the snapshots follow its number.
     */
    @Test
    void anEpochStartsFromMoreKeysThanAQueueHolds() {
        OwnerFilter owner = new OwnerFilter();
        owner.newEpoch(RECEIVERS);
        int keys = OwnerFilter.MAX_QUEUED + 1000;
        for (long k = 1; k <= keys; k++) {
            owner.decide(k * 0x9E3779B97F4A7C15L, () -> true);
        }
        assertFalse(owner.overflowed());
        assertEquals(null, owner.drain(0), "nothing goes to a receiver before its first snapshot");
        OwnerFilter.Snapshot first = owner.snapshots(new int[] {0}, true)[0];
        assertEquals(keys, first.hashes().length);
        assertEquals(keys, first.seq());
        assertTrue(owner.publish(-1));
        OwnerFilter.Batch b = owner.drain(0);
        assertEquals(1, b.size());
        assertEquals(first.seq(), b.seqStart());
        assertEquals(NodeKey.filterHash(-1), b.hashes()[0]);
    }

    @Test
    void retractingAnUnpublishedKeyAsksNothingAndQueuesNothing() {
        OwnerFilter owner = oneReceiver(OwnerFilter.MAX_PUBLISHED);
        AtomicInteger asked = new AtomicInteger();
        assertFalse(owner.retract(42, () -> {
            asked.incrementAndGet();
            return false;
        }));
        assertEquals(0, asked.get(), "a key never published needs no lookup");
        assertEquals(null, owner.drain(0));
    }

    /**
     * A live key beyond the bound is not published: the set says it is full, sends no batch (whose
     * cut time would vouch for the key it lacks) until a new epoch starts empty.
     */
    @Test
    void aLiveKeyBeyondTheBoundMakesTheSetFullUntilTheNextEpoch() {
        OwnerFilter owner = oneReceiver(3);
        for (long h = 1; h <= 3; h++) {
            assertTrue(owner.publish(h));
        }
        assertFalse(owner.full());
        assertFalse(owner.publish(4), "no room for a fourth key");
        assertTrue(owner.full());
        assertFalse(owner.isPublished(4));
        assertEquals(null, owner.drain(0), "no batch from an incomplete set");
        assertTrue(owner.retract(2, () -> false), "removals stay exact");
        assertEquals(null, owner.drain(0));
        startEpoch(owner, RECEIVERS);
        assertFalse(owner.full());
        assertTrue(owner.publish(4));
        assertEquals(1, owner.drain(0).size());
    }

    @Test
    void retractWithdrawsOnlyWhatIsNoLongerLive() {
        OwnerFilter owner = oneReceiver(OwnerFilter.MAX_PUBLISHED);
        assertTrue(owner.publish(7));
        assertFalse(owner.publish(7), "published once");
        assertFalse(owner.retract(7, () -> true), "still live: stays published");
        assertTrue(owner.isPublished(7));
        assertTrue(owner.retract(7, () -> false));
        assertFalse(owner.isPublished(7));
        OwnerFilter.Batch b = owner.drain(0);
        assertEquals(2, b.size());
        assertEquals(NodeKey.filterHash(7), b.hashes()[0]);
        assertFalse(b.removals()[0]);
        assertTrue(b.removals()[1]);
        assertEquals(0, b.seqStart());
        assertEquals(2, b.seqEnd());
    }

    /** The lock-free count always equals the published set, through every kind of change and a new epoch. */
    @Test
    void publishedCountFollowsTheSet() {
        Random rnd = new Random(11);
        OwnerFilter owner = oneReceiver(OwnerFilter.MAX_PUBLISHED);
        Set<Long> model = new HashSet<>();
        Map<Long, Boolean> live = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            long k = rnd.nextInt(2_000) * 0x9E3779B97F4A7C15L; // spread over the stripes
            boolean nowLive = rnd.nextBoolean();
            live.put(k, nowLive);
            switch (rnd.nextInt(3)) {
                case 0 -> {
                    owner.publish(k);
                    model.add(k);
                }
                case 1 -> {
                    owner.retract(k, () -> nowLive);
                    if (!nowLive) {
                        model.remove(k);
                    }
                }
                default -> {
                    owner.decide(k, () -> nowLive);
                    if (nowLive) {
                        model.add(k);
                    } else {
                        model.remove(k);
                    }
                }
            }
            assertEquals(model.size(), owner.publishedCount());
            if (i == 10_000) {
                owner.newEpoch(RECEIVERS);
                model.clear();
                assertEquals(0, owner.publishedCount());
            }
        }
        assertEquals(model.size(), owner.snapshot(0).hashes().length);
    }

    /**
     * A ring of three ranges, (100, -100] wrapping, (-100, 0] and (0, 100], replicated by
     * receivers {0, 1}, {1, 2} and {2, 0}: a key's changes go to the receivers of its range only,
     * each receiver numbers its own changes without gaps, and each one's snapshot holds exactly
     * the published keys of its ranges.
     */
    @Test
    void changesAndSnapshotsGoToTheReceiversOfTheKeysRange() {
        UUID[] hosts = {UUID.randomUUID(), UUID.randomUUID(), UUID.randomUUID()};
        long[] tokens = {-100, 0, 100};
        int[][] byRange = {{0, 1}, {1, 2}, {2, 0}};
        Receivers receivers = new Receivers(7, hosts, null, tokens, byRange);
        assertArrayEquals(new int[] {0, 1}, receivers.of(-100), "a range holds its end token");
        assertArrayEquals(new int[] {1, 2}, receivers.of(-99));
        assertArrayEquals(new int[] {2, 0}, receivers.of(100));
        assertArrayEquals(new int[] {0, 1}, receivers.of(101), "above the last token, the ring wraps");
        assertArrayEquals(new int[] {0, 1}, receivers.of(Long.MIN_VALUE + 1));

        OwnerFilter owner = new OwnerFilter();
        startEpoch(owner, receivers);
        Random rnd = new Random(5);
        List<Set<Long>> model = List.of(new HashSet<>(), new HashSet<>(), new HashSet<>());
        long[] seq = new long[3];
        for (int i = 0; i < 3_000; i++) {
            long k = rnd.nextInt(400) - 200;
            boolean nowLive = rnd.nextInt(3) > 0;
            if (owner.decide(k, () -> nowLive)) {
                for (int r : receivers.of(k)) {
                    if (nowLive) {
                        model.get(r).add(NodeKey.filterHash(k));
                    } else {
                        model.get(r).remove(NodeKey.filterHash(k));
                    }
                }
            }
            if (rnd.nextInt(50) == 0) {
                for (int r = 0; r < 3; r++) {
                    OwnerFilter.Batch b = owner.drain(r);
                    if (b != null) {
                        assertEquals(seq[r], b.seqStart(), "receiver " + r + " missed changes");
                        assertEquals(b.seqEnd() - b.seqStart(), b.size());
                        seq[r] = b.seqEnd();
                    }
                }
            }
        }
        for (int r = 0; r < 3; r++) {
            OwnerFilter.Snapshot snap = owner.snapshot(r);
            Set<Long> got = new HashSet<>();
            for (long h : snap.hashes()) {
                got.add(h);
            }
            assertEquals(model.get(r), got, "receiver " + r + "'s snapshot");
            assertEquals(model.get(r).size(), owner.keysFor(r));
        }
    }
}
