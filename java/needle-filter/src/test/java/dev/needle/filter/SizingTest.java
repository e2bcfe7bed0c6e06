package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Sizing from (expected keys, false-positive rate), and clear errors for impossible requests. */
class SizingTest {

    /** Space: bits per key of a filled filter within 5% of the lower bound (log2(1/ε) + 3) / load, at the filter's actual load. */
    @ParameterizedTest(name = "eps={0}")
    @ValueSource(doubles = {0.01, 0.001, 0.0001})
    void bitsPerKeyNearTheBound(double eps) {
        int n = 200_000;
        CuckooFilter filter = CuckooFilter.create(n, eps);
        SplittableRandom r = new SplittableRandom(1);
        for (int i = 0; i < n; i++) {
            assertTrue(filter.insertHash(r.nextLong()));
        }
        double bitsPerKey = filter.sizeInBytes() * 8.0 / n;
        double bound = (Math.log(1 / eps) / Math.log(2) + 3) / filter.load();
        assertTrue(bitsPerKey <= bound * 1.05, "bits/key " + bitsPerKey + " vs bound " + bound);
        assertTrue(filter.load() >= 0.94, "sized filter is only " + filter.load() + " full at its expected key count");
    }

    @Test
    void fingerprintWidthFollowsTheRate() {
        assertEquals(10, CuckooSizing.fingerprintBitsFor(0.01, 4));
        assertEquals(13, CuckooSizing.fingerprintBitsFor(0.001, 4));
        assertEquals(17, CuckooSizing.fingerprintBitsFor(0.0001, 4));
        assertEquals(4, CuckooSizing.fingerprintBitsFor(0.9, 4));
    }

    @Test
    void badParametersAreRejectedWithClearMessages() {
        assertMessage(() -> CuckooFilter.create(0, 0.01), "expected keys must be positive");
        assertMessage(() -> CuckooFilter.create(10, 0), "false-positive rate must be in (0, 1)");
        assertMessage(() -> CuckooFilter.create(10, 1.5), "false-positive rate must be in (0, 1)");
        assertMessage(() -> CuckooFilter.create(10, 1e-12), "the most is 32");
        assertMessage(() -> new CuckooSizing(3, 4, 10, 4), "fingerprint bits must be in [4, 32]");
        assertMessage(() -> new CuckooSizing(8, 3, 10, 4), "slots per bucket must be 2, 4 or 8");
        assertMessage(() -> new CuckooSizing(8, 4, 0, 4), "number of buckets must be positive");
        assertMessage(() -> new CuckooSizing(8, 4, 10, 65), "stash capacity must be in [0, 64]");
        assertMessage(() -> CuckooFilter.create(4_000_000_000L, 0.01), "split the key set");
        assertMessage(() -> BloomFilter.create(-1, 0.01), "expected keys must be positive");
        assertMessage(() -> BloomFilter.create(10, 0), "false-positive rate must be in (0, 1)");
    }

    private static void assertMessage(Runnable r, String fragment) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' lacks '" + fragment + "'");
    }
}
