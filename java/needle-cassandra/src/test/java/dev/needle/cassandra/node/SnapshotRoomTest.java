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

    /** A set growing from nothing to 100,000 keys is sent whole 7 times (30 with room for a quarter more). */
    @Test
    void aGrowingSetIsSentWholeAFewTimes() {
        OwnerTable o = owner();
        KeyFilter first = o.snapshotFilter(0, hashes(0), OwnerTable.HEADROOM, 0);
        assertEquals(4096, o.snapshotCapacity[0]);
        assertTrue(first.capacity() >= 4096);
        int sent = 0;
        for (int n = 1; n <= 100_000; n++) {
            if (OwnerTable.outgrown(n, o.snapshotCapacity[0])) {
                KeyFilter f = o.snapshotFilter(0, hashes(n), OwnerTable.GROWTH_HEADROOM, o.snapshotCapacity[0]);
                assertTrue(f.capacity() >= 2L * n, "room for twice the keys");
                sent++;
            }
        }
        assertTrue(sent <= 7, sent + " snapshots");
        assertTrue(o.snapshotCapacity[0] >= 100_000 / 0.9, "room for every key at the end");
    }

    @Test
    void aSnapshotWithinAnEpochKeepsTheRoomTheCopiesHave() {
        OwnerTable o = owner();
        o.snapshotFilter(0, hashes(50_000), OwnerTable.GROWTH_HEADROOM, 0);
        long room = o.snapshotCapacity[0];
        o.snapshotFilter(0, hashes(10_000), OwnerTable.HEADROOM, room); // asked for by a copy
        assertEquals(room, o.snapshotCapacity[0]);
        o.snapshotFilter(0, hashes(10_000), OwnerTable.HEADROOM, 0); // a new epoch starts afresh
        assertEquals(12_500, o.snapshotCapacity[0]);
    }

    /**
     * A set that grew and stopped: its copies have up to twice the room they need, and a minute
     * after the last snapshot with the keys about the same, a snapshot with a quarter more room
     * shrinks them; not while the set grows, not before the minute, not when the room fits.
     */
    @Test
    void aCopyTwiceTheSizeItNeedsIsShrunkOnceTheSetStopsGrowing() {
        long minute = OwnerTable.SHRINK_AFTER_MILLIS;
        assertTrue(OwnerTable.oversized(55_000, 110_000, 55_000, minute), "room for twice the keys, a minute quiet");
        assertFalse(OwnerTable.oversized(55_000, 110_000, 55_000, minute - 1), "not before the minute");
        assertFalse(OwnerTable.oversized(60_000, 110_000, 55_000, minute), "the keys grew by 9 %");
        assertFalse(OwnerTable.oversized(90_000, 110_000, 88_000, minute), "the room fits");
        assertFalse(OwnerTable.oversized(100, OwnerTable.MIN_CAPACITY, 100, minute), "the smallest copy");
        OwnerTable o = owner();
        o.snapshotFilter(0, hashes(55_000), OwnerTable.GROWTH_HEADROOM, 0);
        long big = o.snapshotCapacity[0];
        o.snapshotFilter(0, hashes(55_000), OwnerTable.HEADROOM, 0);
        assertTrue(o.snapshotCapacity[0] * 1.5 <= big, o.snapshotCapacity[0] + " after " + big);
        assertFalse(OwnerTable.oversized(55_000, o.snapshotCapacity[0], 55_000, minute), "shrunk once, not again");
    }
}
