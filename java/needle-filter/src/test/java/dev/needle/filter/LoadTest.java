package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** How full a filter gets before an insert fails, and that a failed insert changes nothing. */
class LoadTest {

    @ParameterizedTest(name = "{0} buckets")
    @ValueSource(ints = {250, 1_000, 10_000, 100_000, 1_000_000})
    void fourSlotBucketsReachNinetyFivePercent(int buckets) {
        for (int seed = 0; seed < (buckets <= 10_000 ? 20 : 2); seed++) {
            CuckooFilter filter = CuckooFilter.create(new CuckooSizing(12, 4, buckets, CuckooSizing.DEFAULT_STASH));
            SplittableRandom r = new SplittableRandom(seed * 1000L + buckets);
            while (filter.insertHash(r.nextLong())) {
                // fill until the first failure
            }
            assertTrue(filter.load() >= 0.95, "first failed insert at load " + filter.load() + " (seed " + seed + ")");
        }
    }

    @Test
    void sizedFilterHoldsItsExpectedKeys() {
        for (double fpp : new double[] {0.01, 0.001, 0.0001}) {
            int n = 1_000_000;
            CuckooFilter filter = CuckooFilter.create(n, fpp);
            SplittableRandom r = new SplittableRandom(42);
            for (int i = 0; i < n; i++) {
                assertTrue(filter.insertHash(r.nextLong()), "insert " + i + " of " + n + " failed at " + filter);
            }
            assertTrue(
                    filter.expectedFalsePositiveRate() <= fpp,
                    filter + " expects " + filter.expectedFalsePositiveRate());
        }
    }

    @Test
    void failedInsertLeavesTheFilterUnchanged() throws Exception {
        for (int b : new int[] {2, 4, 8}) {
            for (int kind = 0; kind < 3; kind++) {
                CuckooSizing s = new CuckooSizing(10, b, 50, 2);
                Filter filter = kind == 0
                        ? CuckooFilter.create(s)
                        : kind == 1 ? DeletionAwareCuckooFilter.create(s) : AdaptiveCuckooFilter.create(s);
                SplittableRandom r = new SplittableRandom(b * 10L + kind);
                List<Long> held = new ArrayList<>();
                int failures = 0;
                for (int i = 0; i < 2000 && failures < 20; i++) {
                    long k = r.nextLong();
                    byte[] before = filter.toByteArray();
                    boolean ok = insert(filter, k);
                    if (ok) {
                        held.add(k);
                    } else {
                        failures++;
                        assertArrayEquals(
                                before, filter.toByteArray(), "a failed insert changed the serialized filter");
                        assertFalse(held.isEmpty());
                    }
                }
                assertEquals(20, failures, "the filter never filled up");
                for (long k : held) {
                    assertTrue(contains(filter, k), "held key lost after failed inserts in " + filter);
                }
            }
        }
    }

    private static boolean insert(Filter f, long k) {
        return f instanceof KeyFilter kf ? kf.insertHash(k) : ((KeyStateFilter) f).insertHash(k);
    }

    private static boolean contains(Filter f, long k) {
        return f instanceof KeyFilter kf ? kf.mightContainHash(k) : ((KeyStateFilter) f).lookupHash(k) == KeyState.LIVE;
    }
}
