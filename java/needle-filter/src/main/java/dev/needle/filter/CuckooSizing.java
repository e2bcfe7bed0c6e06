package dev.needle.filter;

/**
 * The shape of a cuckoo filter: fingerprint width, slots per bucket, bucket count, stash size.
 *
 * @param fingerprintBits fingerprint width f, 4 to 32 bits
 * @param slotsPerBucket  b: 2, 4 or 8
 * @param numBuckets      m: any positive number (no power of two needed)
 * @param stashCapacity   entries of the victim stash, 0 to 64
 */
public record CuckooSizing(int fingerprintBits, int slotsPerBucket, int numBuckets, int stashCapacity) {
    /** Stash entries by default: enough to absorb the rare failed walk near the design load. */
    public static final int DEFAULT_STASH = 4;

    public CuckooSizing {
        // CuckooTable validates the same ranges; checking here too gives the error at the call site.
        new CuckooTable(fingerprintBits, 0, slotsPerBucket, 1, stashCapacity, false);
        if (numBuckets < 1) {
            throw new IllegalArgumentException("number of buckets must be positive, got " + numBuckets);
        }
    }

    /** The load the filter is sized to reach at its expected key count, by bucket size. */
    public static double designLoad(int slotsPerBucket) {
        switch (slotsPerBucket) {
            case 2:
                return 0.84;
            case 4:
                return 0.95;
            case 8:
                return 0.97;
            default:
                throw new IllegalArgumentException("slots per bucket must be 2, 4 or 8, got " + slotsPerBucket);
        }
    }

    /**
     * The smallest fingerprint that meets {@code fpp} at the design load: f = ceil(log2(2·b·α / ε)),
     * from the false-positive bound 2·b·α / 2^f.
     */
    public static int fingerprintBitsFor(double fpp, int slotsPerBucket) {
        checkFpp(fpp);
        double bits = Math.log(2 * slotsPerBucket * designLoad(slotsPerBucket) / fpp) / Math.log(2);
        int f = (int) Math.ceil(bits - 1e-9);
        if (f > 32) {
            throw new IllegalArgumentException(
                    "false-positive rate " + fpp + " needs " + f + "-bit fingerprints; the most is 32 (rate >= "
                            + 2 * slotsPerBucket * designLoad(slotsPerBucket) / Math.pow(2, 32) + ")");
        }
        return Math.max(4, f);
    }

    /** Sizing for {@code expectedKeys} keys at false-positive rate {@code fpp}, 4 slots per bucket. */
    public static CuckooSizing forKeys(long expectedKeys, double fpp) {
        return forKeys(expectedKeys, fpp, 4);
    }

    /** Sizing for {@code expectedKeys} keys at false-positive rate {@code fpp} with the given bucket size. */
    public static CuckooSizing forKeys(long expectedKeys, double fpp, int slotsPerBucket) {
        return withFingerprint(expectedKeys, fingerprintBitsFor(fpp, slotsPerBucket), slotsPerBucket);
    }

    /** Sizing for {@code expectedKeys} keys with an explicit fingerprint width. */
    public static CuckooSizing withFingerprint(long expectedKeys, int fingerprintBits, int slotsPerBucket) {
        if (expectedKeys < 1) {
            throw new IllegalArgumentException("expected keys must be positive, got " + expectedKeys);
        }
        double buckets = Math.ceil(expectedKeys / (slotsPerBucket * designLoad(slotsPerBucket)));
        if (buckets * slotsPerBucket > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(expectedKeys + " keys is too many for one filter (at most about "
                    + (long) (Integer.MAX_VALUE * designLoad(slotsPerBucket)) + "); split the key set");
        }
        return new CuckooSizing(fingerprintBits, slotsPerBucket, (int) Math.max(1, buckets), DEFAULT_STASH);
    }

    static void checkFpp(double fpp) {
        if (!(fpp > 0 && fpp < 1)) {
            throw new IllegalArgumentException("false-positive rate must be in (0, 1), got " + fpp);
        }
    }

    /** Theory: 1 - (1 - 2^-f)^(2·b·load), about 2·b·load / 2^f. */
    static double falsePositiveRate(int fingerprintBits, int slotsPerBucket, double load) {
        return -Math.expm1(2 * slotsPerBucket * load * Math.log1p(-Math.pow(2, -fingerprintBits)));
    }
}
