package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The measured false-positive rate on one million absent keys matches theory,
 * 1 - (1 - 2^-f)^(2·b·load) (about 2·b·load / 2^f), for every bucket size and fingerprint width.
 * The tolerance is five binomial standard deviations plus 5%; for 32-bit fingerprints the
 * expected count is near zero and at most two false positives are allowed.
 */
class FalsePositiveRateTest {
    private static final int ABSENT_KEYS = 1_000_000;

    @ParameterizedTest(name = "cuckoo f={0} b={1}")
    @CsvSource({"8,2", "8,4", "8,8", "16,2", "16,4", "16,8", "32,2", "32,4", "32,8", "12,4", "17,4"})
    void cuckooMatchesTheory(int f, int b) {
        CuckooFilter filter = CuckooFilter.create(new CuckooSizing(f, b, 1 << 16, CuckooSizing.DEFAULT_STASH));
        SplittableRandom r = new SplittableRandom(f * 31L + b);
        fill(filter::insertHash, filter, r, CuckooSizing.designLoad(b));
        int fp = 0;
        for (int i = 0; i < ABSENT_KEYS; i++) {
            if (filter.mightContainHash(r.nextLong())) {
                fp++;
            }
        }
        assertMatches(fp, filter.expectedFalsePositiveRate(), "cuckoo f=" + f + " b=" + b + " load=" + filter.load());
    }

    @ParameterizedTest(name = "deletion-aware f={0} b={1}")
    @CsvSource({"8,4", "16,4", "12,8"})
    void deletionAwareMatchesTheory(int f, int b) {
        DeletionAwareCuckooFilter filter =
                DeletionAwareCuckooFilter.create(new CuckooSizing(f, b, 1 << 16, CuckooSizing.DEFAULT_STASH));
        SplittableRandom r = new SplittableRandom(f * 17L + b);
        long[] keys = fill(filter::insertHash, filter, r, CuckooSizing.designLoad(b));
        for (int i = 0; i < keys.length; i += 3) {
            assertTrue(filter.markDeletedHash(keys[i]));
        }
        int fp = 0;
        for (int i = 0; i < ABSENT_KEYS; i++) {
            if (filter.lookupHash(r.nextLong()) != KeyState.ABSENT) {
                fp++;
            }
        }
        // The state bit is not part of the fingerprint: an absent key collides with live and deleted entries alike.
        assertMatches(fp, filter.expectedFalsePositiveRate(), "deletion-aware f=" + f + " b=" + b);
    }

    @ParameterizedTest(name = "bloom eps={0}")
    @CsvSource({"0.01", "0.001", "0.0001"})
    void bloomMatchesTheory(double eps) {
        int n = 200_000;
        BloomFilter filter = BloomFilter.create(n, eps);
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < n; i++) {
            filter.insertHash(r.nextLong());
        }
        int fp = 0;
        for (int i = 0; i < ABSENT_KEYS; i++) {
            if (filter.mightContainHash(r.nextLong())) {
                fp++;
            }
        }
        assertMatches(fp, filter.expectedFalsePositiveRate(), "bloom eps=" + eps);
        assertEquals(eps, filter.expectedFalsePositiveRate(), eps * 0.1, "Bloom sizing misses its target");
    }

    interface Inserter {
        boolean insert(long hash);
    }

    /** Inserts random keys up to the given load and returns them. */
    static long[] fill(Inserter inserter, Filter filter, SplittableRandom r, double load) {
        int n = (int) (filter.capacity() * load);
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = r.nextLong();
            assertTrue(inserter.insert(keys[i]), "insert failed at load " + filter.load());
        }
        return keys;
    }

    static void assertMatches(int falsePositives, double expectedRate, String what) {
        double expected = expectedRate * ABSENT_KEYS;
        if (expected < 0.01) {
            assertTrue(falsePositives <= 2, what + ": " + falsePositives + " false positives, expected ~" + expected);
            return;
        }
        double sigma = Math.sqrt(ABSENT_KEYS * expectedRate * (1 - expectedRate));
        double tolerance = 5 * sigma + 0.05 * expected;
        assertTrue(
                Math.abs(falsePositives - expected) <= tolerance,
                what + ": measured " + falsePositives + " false positives in " + ABSENT_KEYS + ", theory " + expected
                        + " +- " + tolerance);
    }
}
