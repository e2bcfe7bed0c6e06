package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.bench.KeySpace.DeleteMode;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class KeySpaceTest {
    @Test
    void deletedFractionAndModesAreAsAsked() {
        KeySpace ks = new KeySpace(7, 0.3, List.of("partition", "row"));
        KeySpace.Pools p = ks.pools(100_000);
        int deleted = p.byPartition().length + p.byRow().length;
        assertEquals(100_000, p.live().length + deleted);
        assertEquals(0.3, deleted / 100_000.0, 0.01);
        assertEquals(0.5, p.byPartition().length / (double) deleted, 0.02);
        for (long id : p.byRow()) {
            assertEquals(DeleteMode.ROW, ks.deletedBy(id));
        }
        for (long id : p.live()) {
            assertNull(ks.deletedBy(id));
        }
    }

    @Test
    void oneModeDeletesEverythingThatWay() {
        KeySpace.Pools p = new KeySpace(7, 0.5, List.of("row")).pools(10_000);
        assertEquals(0, p.byPartition().length);
        assertTrue(p.byRow().length > 4_000);
        KeySpace.Pools none = new KeySpace(7, 0.5, List.of("none")).pools(10_000);
        assertEquals(10_000, none.live().length);
    }

    @Test
    void growingKeepsEarlierRoles() {
        KeySpace ks = new KeySpace(11, 0.5, List.of("partition", "row"));
        KeySpace.Pools small = ks.pools(1_000);
        KeySpace.Pools big = ks.pools(4_000);
        assertArrayEquals(
                small.live(), Arrays.stream(big.live()).filter(k -> k < 1_000).toArray());
        assertArrayEquals(
                small.byRow(), Arrays.stream(big.byRow()).filter(k -> k < 1_000).toArray());
        // A different seed gives different roles.
        KeySpace.Pools other = new KeySpace(12, 0.5, List.of("partition", "row")).pools(1_000);
        assertTrue(!Arrays.equals(small.live(), other.live()));
    }

    @Test
    void absentKeysWereNeverWritten() {
        KeySpace.Pools p = new KeySpace(1, 0.5, List.of("partition")).pools(5_000);
        Set<Long> written = new HashSet<>();
        LongStream.range(0, 5_000).forEach(written::add);
        assertEquals(5_000, p.absent().length);
        for (long k : p.absent()) {
            assertTrue(!written.contains(k), "absent key " + k + " was written");
        }
    }

    @Test
    void lookupsFollowTheMix() {
        KeySpace ks = new KeySpace(3, 0.5, List.of("partition", "row"));
        KeySpace.Pools p = ks.pools(20_000);
        KeySpace.LookupKeys keys = new KeySpace.LookupKeys(
                p,
                Map.of("deleted", 0.25, "live", 0.5, "absent", 0.25),
                DeleteMode.ROW,
                KeyChooser.Distribution.UNIFORM);
        SplittableRandom r = new SplittableRandom(5);
        int n = 200_000;
        int deleted = 0, live = 0, absent = 0;
        for (int i = 0; i < n; i++) {
            int pool = keys.nextPool(r);
            long key = keys.nextKey(pool, r);
            switch (keys.poolName(pool)) {
                case "deleted" -> {
                    deleted++;
                    assertEquals(DeleteMode.ROW, ks.deletedBy(key));
                }
                case "live" -> {
                    live++;
                    assertTrue(key < 20_000);
                    assertNull(ks.deletedBy(key));
                }
                default -> {
                    absent++;
                    assertTrue(key >= KeySpace.ABSENT_BASE);
                }
            }
        }
        double sd = Math.sqrt(n * 0.25 * 0.75);
        assertTrue(Math.abs(deleted - n * 0.25) < 5 * sd, "deleted " + deleted);
        assertTrue(Math.abs(absent - n * 0.25) < 5 * sd, "absent " + absent);
        assertEquals(n, deleted + live + absent);
    }

    @Test
    void anEmptyPoolIsAClearError() {
        KeySpace.Pools p = new KeySpace(3, 0.0, List.of("none")).pools(100);
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new KeySpace.LookupKeys(
                        p, Map.of("deleted", 1.0), DeleteMode.PARTITION, KeyChooser.Distribution.UNIFORM));
        assertTrue(e.getMessage().contains("'deleted' pool is empty"), e.getMessage());
    }

    @Test
    void poolsSplitByOwnerKeepEveryKeyOnceInOrder() {
        KeySpace.Pools p = new KeySpace(3, 0.5, List.of("partition", "row")).pools(2_000);
        java.util.function.LongPredicate odd = k -> (k & 1) == 1;
        KeySpace.Pools a = p.only(odd);
        KeySpace.Pools b = p.only(odd.negate());
        for (String pool : List.of("live", "absent")) {
            long[] all = p.named(pool, null);
            long[] x = a.named(pool, null);
            long[] y = b.named(pool, null);
            assertEquals(all.length, x.length + y.length);
            assertTrue(java.util.Arrays.stream(x).allMatch(odd::test));
            assertTrue(java.util.Arrays.stream(y).noneMatch(odd::test));
            assertTrue(x.length > 0 && y.length > 0);
            for (int i = 1; i < x.length; i++) {
                assertTrue(x[i - 1] < x[i], "ascending, as the chooser expects");
            }
        }
        assertEquals(p.byRow().length, a.byRow().length + b.byRow().length);
        assertEquals(p.byPartition().length, a.byPartition().length + b.byPartition().length);
    }
}
