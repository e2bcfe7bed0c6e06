package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ZipfKeysTest {
    /** The share of {@code n} drawn keys below {@code k}. */
    private static double drawnBelow(ZipfKeys z, double k, int n) {
        SplittableRandom r = new SplittableRandom(3);
        int below = 0;
        for (int i = 0; i < n; i++) {
            double key = z.next(r);
            assertTrue(key >= 0 && key < 1, "key " + key + " in [0, 1)");
            below += key < k ? 1 : 0;
        }
        return below / (double) n;
    }

    @Test
    void thetaZeroIsUniform() {
        ZipfKeys z = new ZipfKeys(0);
        for (double k : new double[] {0.001, 0.1, 0.5, 0.9}) {
            assertEquals(k, z.share(k), 1e-9);
            assertEquals(k, drawnBelow(z, k, 200_000), 0.005, "share below " + k);
        }
    }

    @Test
    void thetaOneFollowsZipfsLaw() {
        ZipfKeys z = new ZipfKeys(1);
        double harmonic = 0;
        for (int r = 1; r <= ZipfKeys.BUCKETS; r++) {
            harmonic += 1.0 / r;
        }
        assertEquals(1 / harmonic, z.share(0.001), 1e-9, "the first bucket");
        assertEquals(0.134, z.share(0.001), 0.001);
        assertEquals(0.69, z.share(0.1), 0.01, "the first tenth");
        for (double k : new double[] {0.0005, 0.001, 0.01, 0.1, 0.5}) {
            assertEquals(z.share(k), drawnBelow(z, k, 200_000), 0.005, "share below " + k);
        }
        assertThrows(IllegalArgumentException.class, () -> new ZipfKeys(-1));
    }
}
