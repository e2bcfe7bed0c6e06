package dev.needle.bench;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Keys in [0, 1) whose density follows Zipf's law: [0, 1) cut into {@link #BUCKETS} equal
 * buckets, the bucket of rank r (the r-th from 0) drawn with probability proportional to
 * 1 / r^theta, the key uniform inside it. Theta 0 is uniform; at theta 1 the first bucket holds
 * about 13 % of the keys and the first tenth of [0, 1) about 69 %. Hot keys lie at the low end,
 * so a range's rows depend on where it starts, not only on its length: what a histogram must know.
 */
final class ZipfKeys {
    static final int BUCKETS = 1000;
    private final double[] cumulative = new double[BUCKETS];

    ZipfKeys(double theta) {
        if (!(theta >= 0) || theta > 5) {
            throw new IllegalArgumentException("zipf must be from 0 (uniform) to 5, not " + theta);
        }
        double sum = 0;
        for (int r = 0; r < BUCKETS; r++) {
            sum += 1 / Math.pow(r + 1, theta);
            cumulative[r] = sum;
        }
        for (int r = 0; r < BUCKETS; r++) {
            cumulative[r] /= sum;
        }
    }

    /** The next key. */
    double next(SplittableRandom random) {
        double u = random.nextDouble();
        int i = Arrays.binarySearch(cumulative, u);
        int bucket = Math.min(BUCKETS - 1, i >= 0 ? i + 1 : -i - 1);
        return (bucket + random.nextDouble()) / BUCKETS;
    }

    /** The share of keys below {@code k} (for checks). */
    double share(double k) {
        int whole = (int) Math.floor(k * BUCKETS);
        double below = whole == 0 ? 0 : cumulative[whole - 1];
        double inside = whole < BUCKETS ? (cumulative[whole] - below) * (k * BUCKETS - whole) : 0;
        return below + inside;
    }
}
