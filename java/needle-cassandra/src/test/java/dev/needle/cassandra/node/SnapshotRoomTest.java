package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.filter.KeyFilter;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** How much room an owner's snapshots give the copies, and how often a growing set is sent whole. */
class SnapshotRoomTest {

    private static OwnerTable owner() {
        OwnerTable o = new OwnerTable(UUID.randomUUID(), null, NeedleOptions.parse(Map.of("node_filter", "one")));
        o.newReceivers(1);
        return o;
    }

    private static long[] hashes(int n) {
        SplittableRandom r = new SplittableRandom(n);
        long[] h = new long[n];
        for (int i = 0; i < n; i++) {
            h[i] = r.nextLong();
        }
        return h;
    }

    /**
     * A set growing from nothing to 100,000 keys is sent whole 7 times: its first growth snapshot
     * has room for 4,096 keys, then twice the keys each time (10 times if growth started from the
     * least room of 256, about 35 with room for a quarter more).
     */
    @Test
    void aGrowingSetIsSentWholeAFewTimes() {
        OwnerTable o = owner();
        KeyFilter first = o.snapshotFilter(0, hashes(0), OwnerTable.EPOCH_ROOM, 0);
        assertEquals(OwnerTable.MIN_CAPACITY, o.snapshotCapacity[0]);
        assertTrue(first.capacity() >= OwnerTable.MIN_CAPACITY);
        int sent = 0;
        for (int n = 1; n <= 100_000; n++) {
            if (OwnerTable.outgrown(n, o.snapshotCapacity[0])) {
                KeyFilter f = o.snapshotFilter(0, hashes(n), OwnerTable.GROWTH_ROOM, o.snapshotCapacity[0]);
                assertTrue(f.capacity() >= 2L * n, "room for twice the keys");
                if (sent == 0) {
                    assertEquals(OwnerTable.MIN_GROWTH_CAPACITY, o.snapshotCapacity[0], "the first growth snapshot");
                }
                sent++;
            }
        }
        assertTrue(sent <= 7, sent + " snapshots");
        assertTrue(o.snapshotCapacity[0] >= 100_000 / 0.95, "room for every key at the end");
    }

    @Test
    void aSnapshotWithinAnEpochKeepsTheRoomTheCopiesHave() {
        OwnerTable o = owner();
        o.snapshotFilter(0, hashes(50_000), OwnerTable.GROWTH_ROOM, 0);
        long room = o.snapshotCapacity[0];
        o.snapshotFilter(0, hashes(10_000), OwnerTable.EPOCH_ROOM, room); // asked for by a copy
        assertEquals(room, o.snapshotCapacity[0]);
        o.snapshotFilter(0, hashes(10_000), OwnerTable.EPOCH_ROOM, 0); // a new epoch starts afresh
        assertEquals(12_500, o.snapshotCapacity[0]);
    }

    /**
     * A set that grew and stopped: its copies have up to twice the room they need, and once its
     * keys have been steady for a minute and no change has gone to the copy for ten seconds, a
     * snapshot with an eighth more room shrinks them; not while the keys move, not before the
     * minute, not while changes still flow (unless the count has been steady for ten minutes),
     * not when the room is close to what a copy at rest has, not the smallest copies.
     */
    @Test
    void aCopyWithMoreRoomThanItNeedsIsShrunkOnceTheKeysStopMoving() {
        long minute = OwnerTable.SHRINK_AFTER_MILLIS;
        long quiet = OwnerTable.QUIET_MILLIS;
        assertTrue(OwnerTable.oversized(55_000, 110_000, minute, quiet), "room for twice the keys, a minute steady");
        assertTrue(
                OwnerTable.oversized(80_000, 100_000, minute, quiet),
                "room for a quarter more (an epoch's first snapshot)");
        assertFalse(OwnerTable.oversized(55_000, 110_000, minute - 1, quiet), "not before the minute");
        assertFalse(
                OwnerTable.oversized(55_000, 110_000, minute, quiet - 1),
                "not while changes flow to the copy (a paced load within the steady tolerance)");
        assertTrue(
                OwnerTable.oversized(55_000, 110_000, OwnerTable.SHRINK_UNDER_CHURN_AFTER_MILLIS, 0),
                "a count steady for ten minutes under a churn of changes");
        assertFalse(OwnerTable.oversized(90_000, 104_000, minute, quiet), "the room is within 16 % of the keys");
        assertFalse(OwnerTable.oversized(100, OwnerTable.MIN_CAPACITY, minute, quiet), "the smallest copy");
        OwnerTable o = owner();
        o.snapshotFilter(0, hashes(55_000), OwnerTable.GROWTH_ROOM, 0);
        long big = o.snapshotCapacity[0];
        assertTrue(o.oversized(0, 55_000, minute + quiet), "no batch sent yet: the copy is quiet");
        o.lastBatchTo[0] = minute;
        assertFalse(o.oversized(0, 55_000, minute + quiet - 1), "a batch went to the copy within ten seconds");
        o.snapshotFilter(0, hashes(55_000), OwnerTable.REST_ROOM, 0);
        assertTrue(o.snapshotCapacity[0] * 1.75 <= big, o.snapshotCapacity[0] + " after " + big);
        assertFalse(OwnerTable.oversized(55_000, o.snapshotCapacity[0], minute, quiet), "shrunk once, not again");
        assertFalse(OwnerTable.outgrown(55_000 * 105 / 100, o.snapshotCapacity[0]), "room to grow by 5 % again");
    }

    /**
     * Keys are steady while they stay within 2 % of where their steady period began; a copy whose
     * set grew long after its last snapshot and then stopped is shrunk a minute after it stopped.
     */
    @Test
    void keysAreSteadyOnceTheyStopMovingWhateverTheyDidSinceTheLastSnapshot() {
        OwnerTable o = owner();
        o.observeKeys(0, 0, 1_000);
        assertEquals(1_000, o.steadySinceMillis[0]);
        o.steadyKeys[0] = 50_000; // as if the receiver had held 50,000 keys from then on
        o.observeKeys(0, 0, 2_000); // the receiver holds no key: a move of 100 %
        assertEquals(2_000, o.steadySinceMillis[0], "a move starts a new steady period");
        assertEquals(0, o.steadyKeys[0]);
        o.observeKeys(0, 0, 70_000);
        assertEquals(2_000, o.steadySinceMillis[0], "no move, the period goes on");
    }

    /** The room of a copy at rest: within the 2 bytes per key the node filters promise at the default fp_rate. */
    @Test
    void aCopyAtRestTakesAtMostTwoBytesPerKey() {
        OwnerTable o = owner();
        for (int keys : new int[] {20_000, 100_000, 300_000}) {
            long room = (long) (keys * OwnerTable.REST_MAX_HEADROOM);
            KeyFilter f = o.snapshotFilter(0, hashes(keys), OwnerTable.REST_MAX_ROOM, room);
            double perKey = (double) f.sizeInBytes() / keys;
            assertTrue(perKey <= 2.0, keys + " keys: " + perKey + " bytes per key");
        }
    }
}
