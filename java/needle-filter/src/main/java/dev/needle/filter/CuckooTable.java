package dev.needle.filter;

/**
 * The bucket table shared by every cuckoo filter of the family: {@code numBuckets}
 * buckets of {@code slotsPerBucket} lanes, each lane {@code fingerprintBits + tagBits}
 * wide, bit-packed without padding into a {@code long[]} (so any fingerprint width
 * costs exactly its bits), plus a small victim stash (Kirsch, Mitzenmacher, Wieder)
 * so that an insert near capacity fails cleanly instead of losing a fingerprint.
 *
 * <p>A lane is {@code tag << fingerprintBits | fingerprint}; fingerprint 0 is never
 * stored, so lane 0 means "empty". Lookups compare a whole group of lanes with one
 * SWAR zero-lane test. Not thread-safe: the filters that own a table guard it.
 */
final class CuckooTable {
    /** Bound on the random-walk length of one insert (Fan et al. use 500). */
    static final int MAX_KICKS = 500;

    private static final long ALT_MULTIPLIER = 0xC4CEB9FE1A85EC53L;

    final int fingerprintBits;
    final int tagBits;
    final int laneBits;
    final int slotsPerBucket;
    final int numBuckets;
    final long fingerprintMask;
    final long laneMask;

    // SWAR geometry: a bucket is read as groupsPerBucket groups of groupLanes lanes (<= 64 bits each).
    private final int bucketBits;
    private final int groupBits;
    private final int groupsPerBucket;
    private final long groupMask;
    /** One 1-bit at the bottom of each lane of a group. */
    final long ones;

    private final long highs;

    final long[] words;
    /** Per-slot 64-bit key hash, for filters that keep their keys (adaptive); otherwise null. */
    final long[] backing;

    final int stashCapacity;
    final int[] stashBucket;
    final long[] stashLane;
    final long[] stashBacking;
    int stashSize;

    /** Occupied lanes, stash included. */
    long occupied;
    /** State of the xorshift64* generator that picks eviction victims; part of the serialized state. */
    long rng;

    private final int[] kickPath = new int[MAX_KICKS];

    CuckooTable(
            int fingerprintBits, int tagBits, int slotsPerBucket, int numBuckets, int stashCapacity, boolean keyed) {
        if (fingerprintBits < 4 || fingerprintBits > 32) {
            throw new IllegalArgumentException("fingerprint bits must be in [4, 32], got " + fingerprintBits);
        }
        if (tagBits < 0 || tagBits > 2) {
            throw new IllegalArgumentException("tag bits must be in [0, 2], got " + tagBits);
        }
        if (slotsPerBucket != 2 && slotsPerBucket != 4 && slotsPerBucket != 8) {
            throw new IllegalArgumentException("slots per bucket must be 2, 4 or 8, got " + slotsPerBucket);
        }
        if (numBuckets < 1) {
            throw new IllegalArgumentException("number of buckets must be positive, got " + numBuckets);
        }
        if ((long) numBuckets * slotsPerBucket > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("too many slots: " + numBuckets + " buckets x " + slotsPerBucket
                    + " exceeds " + Integer.MAX_VALUE + "; split the key set over several filters");
        }
        if (stashCapacity < 0 || stashCapacity > 64) {
            throw new IllegalArgumentException("stash capacity must be in [0, 64], got " + stashCapacity);
        }
        this.fingerprintBits = fingerprintBits;
        this.tagBits = tagBits;
        this.laneBits = fingerprintBits + tagBits;
        this.slotsPerBucket = slotsPerBucket;
        this.numBuckets = numBuckets;
        this.fingerprintMask = (1L << fingerprintBits) - 1;
        this.laneMask = (1L << laneBits) - 1;
        this.bucketBits = laneBits * slotsPerBucket;
        int lanesPerGroup = slotsPerBucket;
        while (lanesPerGroup * laneBits > 64) {
            lanesPerGroup >>= 1;
        }
        this.groupBits = lanesPerGroup * laneBits;
        this.groupsPerBucket = slotsPerBucket / lanesPerGroup;
        this.groupMask = groupBits == 64 ? -1L : (1L << groupBits) - 1;
        long o = 0;
        for (int i = 0; i < lanesPerGroup; i++) {
            o |= 1L << (i * laneBits);
        }
        this.ones = o;
        this.highs = o << (laneBits - 1);
        long totalBits = (long) numBuckets * bucketBits;
        // One spare word so that a group read at the end never needs a bounds branch.
        this.words = new long[(int) ((totalBits + 63) >>> 6) + 1];
        this.backing = keyed ? new long[numBuckets * slotsPerBucket] : null;
        this.stashCapacity = stashCapacity;
        this.stashBucket = new int[stashCapacity];
        this.stashLane = new long[stashCapacity];
        this.stashBacking = new long[stashCapacity];
        this.rng = 0x9E3779B97F4A7C15L ^ numBuckets;
    }

    /** Number of 64-bit words that hold the lanes (the spare word excluded). */
    int dataWords() {
        return words.length - 1;
    }

    long slots() {
        return (long) numBuckets * slotsPerBucket;
    }

    long sizeInBytes() {
        return (long) dataWords() * Long.BYTES;
    }

    // ---- hashing --------------------------------------------------------------------------

    /** First bucket of a key hash: its low 32 bits reduced onto the bucket range. */
    int bucketOf(long hash) {
        return Hashing.reduce((int) hash, numBuckets);
    }

    /** The partial-key alternate: (H(fp) - i) mod m is an involution for any m, so no power of two is needed. */
    int alternateOf(int bucket, long fingerprint) {
        int hf = Hashing.reduce((int) ((fingerprint * ALT_MULTIPLIER) >>> 32), numBuckets);
        int alt = hf - bucket;
        return alt < 0 ? alt + numBuckets : alt;
    }

    /** Fingerprint from the high 32 bits of a key hash; 0 is reserved for empty lanes. */
    long fingerprintOf(long hash) {
        long fp = (hash >>> 32) & fingerprintMask;
        return fp == 0 ? 1 : fp;
    }

    // ---- lane access ----------------------------------------------------------------------

    long lane(int slot) {
        long bit = (long) slot * laneBits;
        int w = (int) (bit >>> 6);
        int sh = (int) (bit & 63);
        // (x << 1) << (63 - sh) is x << (64 - sh) without Java's shift-by-64 == shift-by-0 trap.
        return ((words[w] >>> sh) | ((words[w + 1] << 1) << (63 - sh))) & laneMask;
    }

    void setLane(int slot, long value) {
        long bit = (long) slot * laneBits;
        int w = (int) (bit >>> 6);
        int sh = (int) (bit & 63);
        words[w] = (words[w] & ~(laneMask << sh)) | (value << sh);
        int spill = sh + laneBits - 64;
        if (spill > 0) {
            long m = (1L << spill) - 1;
            words[w + 1] = (words[w + 1] & ~m) | (value >>> (laneBits - spill));
        }
    }

    private long readGroup(long bit) {
        int w = (int) (bit >>> 6);
        int sh = (int) (bit & 63);
        return ((words[w] >>> sh) | ((words[w + 1] << 1) << (63 - sh))) & groupMask;
    }

    /**
     * True when some lane {@code x} of the bucket has {@code (x ^ lane) & laneMatchMask == 0}.
     * {@code pattern} is {@code lane * ones} and {@code maskPattern} is {@code laneMatchMask * ones}.
     * The zero-lane test {@code (x - ones) & ~x & highs} is exact for "some lane is zero".
     */
    boolean bucketMatches(int bucket, long pattern, long maskPattern) {
        long bit = (long) bucket * bucketBits;
        for (int g = 0; g < groupsPerBucket; g++, bit += groupBits) {
            long x = (readGroup(bit) ^ pattern) & maskPattern;
            if (((x - ones) & ~x & highs) != 0) {
                return true;
            }
        }
        return false;
    }

    /** Same test against the stash, for entries homed at either bucket. */
    boolean stashMatches(int b1, int b2, long lane, long laneMatchMask) {
        int n = Math.min(stashSize, stashCapacity); // a racing optimistic reader may see any value
        for (int i = 0; i < n; i++) {
            int b = stashBucket[i];
            if ((b == b1 || b == b2) && ((stashLane[i] ^ lane) & laneMatchMask) == 0) {
                return true;
            }
        }
        return false;
    }

    /** Index of the first slot of {@code bucket} whose lane matches, or -1. */
    int findSlot(int bucket, long lane, long laneMatchMask) {
        int base = bucket * slotsPerBucket;
        for (int s = 0; s < slotsPerBucket; s++) {
            if (((lane(base + s) ^ lane) & laneMatchMask) == 0) {
                return base + s;
            }
        }
        return -1;
    }

    /** Index of the first stash entry homed at b1 or b2 whose lane matches, or -1. */
    int findStash(int b1, int b2, long lane, long laneMatchMask) {
        for (int i = 0; i < stashSize; i++) {
            int b = stashBucket[i];
            if ((b == b1 || b == b2) && ((stashLane[i] ^ lane) & laneMatchMask) == 0) {
                return i;
            }
        }
        return -1;
    }

    // ---- mutation -------------------------------------------------------------------------

    private boolean placeInEmpty(int bucket, long lane, long backingHash) {
        int base = bucket * slotsPerBucket;
        for (int s = 0; s < slotsPerBucket; s++) {
            if (lane(base + s) == 0) {
                setLane(base + s, lane);
                if (backing != null) {
                    backing[base + s] = backingHash;
                }
                return true;
            }
        }
        return false;
    }

    private int nextRandom() {
        long x = rng;
        x ^= x >>> 12;
        x ^= x << 25;
        x ^= x >>> 27;
        rng = x;
        return (int) ((x * 0x2545F4914F6CDD1DL) >>> 32);
    }

    /** Bucket where the lane now in {@code bucket} would go instead. */
    private int alternateFor(int bucket, long lane, long backingHash, KeyedBuckets keyed) {
        if (keyed == null) {
            return alternateOf(bucket, lane & fingerprintMask);
        }
        int b1 = keyed.first(backingHash);
        return bucket == b1 ? keyed.second(backingHash) : b1;
    }

    /**
     * Inserts a lane whose candidate buckets are b1 and b2. On a full table the kick chain
     * is undone, so a failed insert leaves the table exactly as it was and returns false.
     * {@code keyed} supplies the buckets of stored key hashes (adaptive filters); null means
     * partial-key alternates computed from the fingerprint.
     */
    boolean insert(long lane, long backingHash, int b1, int b2, KeyedBuckets keyed) {
        if (placeInEmpty(b1, lane, backingHash) || placeInEmpty(b2, lane, backingHash)) {
            occupied++;
            return true;
        }
        long rngBefore = rng;
        int bucket = (nextRandom() & 1) == 0 ? b1 : b2;
        long carried = lane;
        long carriedBacking = backingHash;
        int kicks = 0;
        while (kicks < MAX_KICKS) {
            int slot = bucket * slotsPerBucket + (nextRandom() & (slotsPerBucket - 1));
            kickPath[kicks++] = slot;
            long victim = lane(slot);
            setLane(slot, carried);
            carried = victim;
            carriedBacking = swapBacking(slot, carriedBacking);
            bucket = alternateFor(bucket, carried, carriedBacking, keyed);
            if (placeInEmpty(bucket, carried, carriedBacking)) {
                occupied++;
                return true;
            }
        }
        if (stashSize < stashCapacity) {
            stashBucket[stashSize] = bucket;
            stashLane[stashSize] = carried;
            stashBacking[stashSize] = carriedBacking;
            stashSize++;
            occupied++;
            return true;
        }
        // Undo the walk in reverse (every swap is its own inverse) so a failed insert is a no-op.
        rng = rngBefore;
        for (int k = kicks - 1; k >= 0; k--) {
            int slot = kickPath[k];
            long cur = lane(slot);
            setLane(slot, carried);
            carried = cur;
            carriedBacking = swapBacking(slot, carriedBacking);
        }
        return false;
    }

    /**
     * Finds {@code from} (format §5: bucket b1, then b2, then the stash) and rewrites it to
     * {@code to}, or removes it when {@code to} is 0. False, changing nothing, when none matched.
     * Only for partial-key tables (no key store).
     */
    boolean replaceLane(int b1, int b2, long from, long to) {
        int slot = findSlot(b1, from, -1L);
        if (slot < 0) {
            slot = findSlot(b2, from, -1L);
        }
        if (slot >= 0) {
            if (to == 0) {
                clearSlot(slot, null);
            } else {
                setLane(slot, to);
            }
            return true;
        }
        int stashed = findStash(b1, b2, from, -1L);
        if (stashed < 0) {
            return false;
        }
        if (to == 0) {
            removeStash(stashed, null);
        } else {
            stashLane[stashed] = to;
        }
        return true;
    }

    /** Puts a key hash into a slot's key store and returns the one it held (0 without a key store). */
    private long swapBacking(int slot, long keyHash) {
        if (backing == null) {
            return 0;
        }
        long previous = backing[slot];
        backing[slot] = keyHash;
        return previous;
    }

    /** Empties a slot and gives stashed victims a chance to move back into the table. */
    void clearSlot(int slot, KeyedBuckets keyed) {
        setLane(slot, 0);
        if (backing != null) {
            backing[slot] = 0;
        }
        occupied--;
        rehomeStash(keyed);
    }

    void removeStash(int i, KeyedBuckets keyed) {
        int last = --stashSize;
        stashBucket[i] = stashBucket[last];
        stashLane[i] = stashLane[last];
        stashBacking[i] = stashBacking[last];
        stashLane[last] = 0;
        occupied--;
        rehomeStash(keyed);
    }

    private void rehomeStash(KeyedBuckets keyed) {
        for (int i = 0; i < stashSize; ) {
            int b = stashBucket[i];
            long lane = stashLane[i];
            long bh = stashBacking[i];
            if (placeInEmpty(b, lane, bh) || placeInEmpty(alternateFor(b, lane, bh, keyed), lane, bh)) {
                int last = --stashSize;
                stashBucket[i] = stashBucket[last];
                stashLane[i] = stashLane[last];
                stashBacking[i] = stashBacking[last];
                stashLane[last] = 0;
            } else {
                i++;
            }
        }
    }

    /** Both candidate buckets of a stored key hash, for filters that keep their keys. */
    interface KeyedBuckets {
        int first(long hash);

        int second(long hash);
    }
}
