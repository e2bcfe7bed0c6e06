package dev.needle.bench;

import java.util.SplittableRandom;

/**
 * Chooses an index in {@code [0, n)}: uniformly, or Zipf-distributed with exponent 0.99 by the
 * algorithm of Gray et al. ("Quickly generating billion-record synthetic databases", SIGMOD 1994),
 * the generator YCSB uses. "Clustered" puts the popular items next to each other (index 0 is the
 * most popular); "scattered" spreads them over the range by a fixed permutation: rank r goes to
 * {@code (r * a + n / 2) mod n} with {@code a} coprime to n and close to n / 1.618, so neighbouring
 * ranks land far apart and every index keeps exactly one rank.
 * Instances are immutable; the caller owns the random source, one per thread.
 */
public final class KeyChooser {
    /** The key distributions an experiment may name. */
    public enum Distribution {
        UNIFORM("uniform"),
        ZIPF_CLUSTERED("zipf-clustered"),
        ZIPF_SCATTERED("zipf-scattered");

        final String label;

        Distribution(String label) {
            this.label = label;
        }

        /** The distribution called {@code label}; an {@link IllegalArgumentException} names the choices. */
        public static Distribution of(String label) {
            for (Distribution d : values()) {
                if (d.label.equals(label)) {
                    return d;
                }
            }
            throw new IllegalArgumentException(
                    "distribution '" + label + "' is not one of uniform, zipf-clustered, zipf-scattered");
        }
    }

    /** Zipf exponent used by the published benchmarks (YCSB's default). */
    public static final double THETA = 0.99;

    private final Distribution distribution;
    private final long n;
    private final double zetan;
    private final double alpha;
    private final double eta;
    private final double half;
    private final long scatter;

    public KeyChooser(Distribution distribution, long n) {
        if (n < 1) {
            throw new IllegalArgumentException("cannot choose from an empty pool");
        }
        this.distribution = distribution;
        this.n = n;
        if (distribution == Distribution.UNIFORM) {
            zetan = alpha = eta = half = 0;
        } else {
            zetan = zeta(n, THETA);
            double zeta2 = zeta(2, THETA);
            alpha = 1.0 / (1.0 - THETA);
            eta = (1 - Math.pow(2.0 / n, 1 - THETA)) / (1 - zeta2 / zetan);
            half = 1 + Math.pow(0.5, THETA);
        }
        long a = Math.max(1, Math.round(n * 0.6180339887498949));
        while (gcd(a, n) != 1) {
            a++;
        }
        scatter = a % n;
    }

    /** The next index in {@code [0, n)}. */
    public long next(SplittableRandom random) {
        if (distribution == Distribution.UNIFORM) {
            return random.nextLong(n);
        }
        long rank = zipfRank(random.nextDouble());
        if (distribution == Distribution.ZIPF_CLUSTERED) {
            return rank;
        }
        return Math.floorMod(Math.addExact(Math.multiplyExact(rank, scatter), n / 2), n);
    }

    /** The Zipf rank (0 = most popular) for a uniform {@code u} in [0, 1). */
    long zipfRank(double u) {
        double uz = u * zetan;
        if (uz < 1.0) {
            return 0;
        }
        if (uz < half) {
            return Math.min(1, n - 1);
        }
        return Math.min(n - 1, (long) (n * Math.pow(eta * u - eta + 1, alpha)));
    }

    private static long gcd(long a, long b) {
        return b == 0 ? a : gcd(b, a % b);
    }

    /** The generalized harmonic number sum_{i=1..n} 1/i^theta. */
    static double zeta(long n, double theta) {
        double sum = 0;
        for (long i = 1; i <= n; i++) {
            sum += 1.0 / Math.pow(i, theta);
        }
        return sum;
    }

    /** A strong 64-bit mix (the SplitMix64 finalizer): spreads ranks, derives per-key roles. */
    public static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
