package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.bench.KeyChooser.Distribution;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class KeyChooserTest {
    private static final int DRAWS = 1_000_000;

    private static long[] histogram(Distribution d, int n, long seed) {
        KeyChooser c = new KeyChooser(d, n);
        SplittableRandom r = new SplittableRandom(seed);
        long[] counts = new long[n];
        for (int i = 0; i < DRAWS; i++) {
            long k = c.next(r);
            assertTrue(k >= 0 && k < n, "index out of range: " + k);
            counts[(int) k]++;
        }
        return counts;
    }

    /** |observed - expected| within 5 standard deviations of a binomial count. */
    private static void assertFrequency(double p, long observed, String what) {
        double mean = p * DRAWS;
        double sd = Math.sqrt(DRAWS * p * (1 - p));
        assertTrue(Math.abs(observed - mean) <= 5 * sd + 1, what + ": observed " + observed + ", expected " + mean);
    }

    @Test
    void uniformIsFlat() {
        long[] counts = histogram(Distribution.UNIFORM, 100, 1);
        for (int i = 0; i < counts.length; i++) {
            assertFrequency(0.01, counts[i], "index " + i);
        }
    }

    @Test
    void zipfClusteredFollowsTheZipfLawAtTheHead() {
        int n = 1000;
        long[] counts = histogram(Distribution.ZIPF_CLUSTERED, n, 2);
        double zetan = KeyChooser.zeta(n, KeyChooser.THETA);
        // The two head ranks are exact in Gray et al.'s algorithm; the tail is its approximation.
        assertFrequency(1 / zetan, counts[0], "rank 0");
        assertFrequency(1 / Math.pow(2, KeyChooser.THETA) / zetan, counts[1], "rank 1");
        // Popularity falls with the rank: the first 10 ranks draw far more than the last 10.
        long head = Arrays.stream(counts, 0, 10).sum();
        long tail = Arrays.stream(counts, n - 10, n).sum();
        assertTrue(head > 50 * tail, "head " + head + " vs tail " + tail);
        // About 1/zeta(n) * sum_{i<=100} i^-0.99 of the draws land in the first 100 ranks.
        double p100 = KeyChooser.zeta(100, KeyChooser.THETA) / zetan;
        long first100 = Arrays.stream(counts, 0, 100).sum();
        assertEquals(p100, first100 / (double) DRAWS, 0.02, "share of the first 100 ranks");
    }

    @Test
    void zipfScatteredHasTheSameSkewButSpreadsTheHotKeys() {
        int n = 1000;
        long[] clustered = histogram(Distribution.ZIPF_CLUSTERED, n, 3);
        long[] scattered = histogram(Distribution.ZIPF_SCATTERED, n, 3);
        long maxC = Arrays.stream(clustered).max().orElseThrow();
        long maxS = Arrays.stream(scattered).max().orElseThrow();
        // The hottest key is as hot (collisions of the hash can only add to it).
        assertTrue(maxS >= maxC * 0.95, maxS + " vs " + maxC);
        int hottest = 0;
        for (int i = 1; i < n; i++) {
            if (scattered[i] > scattered[hottest]) {
                hottest = i;
            }
        }
        assertNotEquals(0, hottest, "scattered must not keep the hottest key at index 0");
        // The ten hottest clustered keys are 0..9; the scattered ones are not one run of neighbours.
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(scattered[b], scattered[a]));
        int[] top =
                Arrays.stream(order, 0, 10).mapToInt(Integer::intValue).sorted().toArray();
        assertTrue(top[9] - top[0] > 10, "hot keys clustered: " + Arrays.toString(top));
    }

    @Test
    void tinyPools() {
        SplittableRandom r = new SplittableRandom(4);
        for (Distribution d : Distribution.values()) {
            KeyChooser one = new KeyChooser(d, 1);
            KeyChooser two = new KeyChooser(d, 2);
            boolean[] seen = new boolean[2];
            for (int i = 0; i < 1000; i++) {
                assertEquals(0, one.next(r));
                seen[(int) two.next(r)] = true;
            }
            assertTrue(seen[0] && seen[1], d + " never drew one of two keys");
        }
        assertThrows(IllegalArgumentException.class, () -> new KeyChooser(Distribution.UNIFORM, 0));
    }

    @Test
    void unknownDistributionNamesTheChoices() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Distribution.of("zipf"));
        assertTrue(e.getMessage().contains("zipf-clustered"), e.getMessage());
    }
}
