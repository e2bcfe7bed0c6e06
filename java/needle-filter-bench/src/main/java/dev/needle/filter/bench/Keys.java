package dev.needle.filter.bench;

import java.util.SplittableRandom;

/**
 * The keys of every benchmark: random 64-bit longs from {@link SplittableRandom} with fixed
 * seeds, identical for every library. Needle takes them as its 64-bit key hash; the
 * competitors take them as their {@code long} key (and hash them internally).
 */
public final class Keys {
    /** Seed of the keys that are inserted. */
    public static final long INSERTED_SEED = 0x4E6565646C65L; // "Needle"
    /** Seed of the keys used for negative lookups (never inserted). */
    public static final long ABSENT_SEED = 0x4162736E74L;

    private Keys() {}

    /** The {@code n} keys that are inserted, in insertion order. */
    public static long[] inserted(int n) {
        return generate(INSERTED_SEED, n);
    }

    /**
     * {@code n} keys for negative lookups. They come from a different seed; with 2^64 possible
     * values, the chance that any of them equals an inserted key is below n²/2^64 (about 1e-4 at
     * n = 50M), and {@link SpaceFprMain} checks every absent key against the inserted set exactly.
     */
    public static long[] absent(int n) {
        return generate(ABSENT_SEED, n);
    }

    static long[] generate(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = r.nextLong();
        }
        return k;
    }
}
