package dev.needle.filter;

/**
 * An adaptive cuckoo filter (Mitzenmacher, Pontarelli, Reviriego, ALENEX 2018): a cuckoo
 * filter that removes its false positives. Each slot has a 2-bit selector choosing one of
 * four fingerprint functions; beside the filter, a key store (the "slow memory" of the paper)
 * keeps the 64-bit hash of the key in every slot. When a lookup is proven a false positive
 * ({@link #reportFalsePositive}), every colliding entry switches to its next fingerprint
 * function, recomputed from its stored hash, so the same query stops matching.
 *
 * <p>Because it knows its keys, this filter also deletes exactly: {@link #deleteHash} removes
 * the entry whose stored hash equals the key's and never another key's fingerprint. Both
 * candidate buckets come from the key hash itself (not from the fingerprint), as in the paper.
 *
 * <p>Memory: {@link #sizeInBytes()} is the filter proper ((f + 2) bits per slot);
 * {@link #keyStoreBytes()} is the key store (64 bits per slot). Thread safety: see {@link Filter}.
 */
public final class AdaptiveCuckooFilter extends AbstractCuckooFilter implements KeyFilter {
    /** Number of fingerprint functions; selectors cycle through them. */
    static final int SELECTORS = 4;

    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final long SECOND_BUCKET_SALT = 0x5851F42D4C957F2DL;

    private final CuckooTable.KeyedBuckets buckets;
    private long adaptations;

    AdaptiveCuckooFilter(CuckooTable table, long adaptations) {
        super(table);
        this.adaptations = adaptations;
        this.buckets = new CuckooTable.KeyedBuckets() {
            @Override
            public int first(long hash) {
                return table.bucketOf(hash);
            }

            @Override
            public int second(long hash) {
                return Hashing.reduce((int) Hashing.mix64(hash ^ SECOND_BUCKET_SALT), table.numBuckets);
            }
        };
    }

    /** A filter for {@code expectedKeys} keys at false-positive rate {@code fpp} (before any adaptation). */
    public static AdaptiveCuckooFilter create(long expectedKeys, double fpp) {
        return create(CuckooSizing.forKeys(expectedKeys, fpp));
    }

    /** A filter of the given shape. */
    public static AdaptiveCuckooFilter create(CuckooSizing s) {
        return new AdaptiveCuckooFilter(
                new CuckooTable(s.fingerprintBits(), 2, s.slotsPerBucket(), s.numBuckets(), s.stashCapacity(), true),
                0);
    }

    @Override
    public FilterKind kind() {
        return FilterKind.ADAPTIVE_CUCKOO;
    }

    @Override
    public boolean supportsDelete() {
        return true;
    }

    /** Bytes of the key store (one 64-bit hash per slot), kept apart from the filter proper. */
    public long keyStoreBytes() {
        return table.slots() * Long.BYTES;
    }

    /** How many entries changed fingerprint function because of reported false positives. */
    public long adaptations() {
        return readLocked(() -> adaptations);
    }

    long adaptationsUnlocked() {
        return adaptations;
    }

    /** The lane of {@code hash} under selector {@code sel}. */
    private long laneOf(long hash, int sel) {
        long fp = (Hashing.mix64(hash + sel * GOLDEN) >>> 32) & table.fingerprintMask;
        return ((long) sel << table.fingerprintBits) | (fp == 0 ? 1 : fp);
    }

    @Override
    public boolean insertHash(long hash) {
        long lane = laneOf(hash, 0);
        int b1 = buckets.first(hash);
        int b2 = buckets.second(hash);
        return writeLocked(() -> table.insert(lane, hash, b1, b2, buckets));
    }

    @Override
    public boolean mightContainHash(long hash) {
        return guardedProbe(hash);
    }

    @Override
    public void mightContainBatch(long[] hashes, int from, int to, boolean[] out) {
        guardedProbeBatch(hashes, from, to, out);
    }

    @Override
    boolean probe(long hash) {
        CuckooTable t = table;
        int b1 = buckets.first(hash);
        int b2 = buckets.second(hash);
        for (int sel = 0; sel < SELECTORS; sel++) {
            long lane = laneOf(hash, sel);
            long pattern = lane * t.ones;
            if (t.bucketMatches(b1, pattern, -1L)
                    || t.bucketMatches(b2, pattern, -1L)
                    || (t.stashSize != 0 && t.stashMatches(b1, b2, lane, -1L))) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean deleteHash(long hash) {
        CuckooTable t = table;
        int b1 = buckets.first(hash);
        int b2 = buckets.second(hash);
        long stamp = lock.writeLock();
        try {
            for (int b : new int[] {b1, b2}) {
                int base = b * t.slotsPerBucket;
                for (int s = 0; s < t.slotsPerBucket; s++) {
                    if (t.lane(base + s) != 0 && t.backing[base + s] == hash) {
                        t.clearSlot(base + s, buckets);
                        return true;
                    }
                }
            }
            for (int i = 0; i < t.stashSize; i++) {
                if (t.stashBacking[i] == hash && (t.stashBucket[i] == b1 || t.stashBucket[i] == b2)) {
                    t.removeStash(i, buckets);
                    return true;
                }
            }
            return false;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Feedback: a lookup of {@code hash} answered true but the key is not in the data. Every
     * entry that collides with it moves to its next fingerprint function (recomputed from its
     * stored key hash), so it still answers for its own key and no longer for this one.
     * Entries whose stored hash equals {@code hash} are real members and are left alone.
     *
     * @return true when the filter no longer reports {@code hash}
     */
    public boolean reportFalsePositive(long hash) {
        CuckooTable t = table;
        int b1 = buckets.first(hash);
        int b2 = buckets.second(hash);
        long stamp = lock.writeLock();
        try {
            for (int b : new int[] {b1, b2}) {
                int base = b * t.slotsPerBucket;
                for (int s = 0; s < t.slotsPerBucket; s++) {
                    long lane = t.lane(base + s);
                    if (lane != 0 && t.backing[base + s] != hash) {
                        long adapted = adapt(lane, hash, t.backing[base + s]);
                        if (adapted != lane) {
                            t.setLane(base + s, adapted);
                        }
                    }
                }
            }
            for (int i = 0; i < t.stashSize; i++) {
                if ((t.stashBucket[i] == b1 || t.stashBucket[i] == b2) && t.stashBacking[i] != hash) {
                    t.stashLane[i] = adapt(t.stashLane[i], hash, t.stashBacking[i]);
                }
            }
            return !probe(hash);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** The lane after adaptation: unchanged unless it matches {@code query}'s lane under its own selector. */
    private long adapt(long lane, long query, long storedHash) {
        int sel = (int) (lane >>> table.fingerprintBits);
        if (lane != laneOf(query, sel)) {
            return lane;
        }
        // Step through the selectors until the entry no longer collides with the query; a
        // stored hash equal in all four fingerprints to the query's (about 2^-4f) stays put.
        for (int step = 1; step < SELECTORS; step++) {
            int next = (sel + step) % SELECTORS;
            long candidate = laneOf(storedHash, next);
            if (candidate != laneOf(query, next)) {
                adaptations++;
                return candidate;
            }
        }
        return lane;
    }
}
