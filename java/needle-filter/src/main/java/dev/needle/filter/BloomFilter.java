package dev.needle.filter;

import java.io.IOException;
import java.io.OutputStream;

/**
 * The baseline: a classic Bloom filter (k bit positions by double hashing of the key hash,
 * Kirsch and Mitzenmacher 2006), behind the same interfaces as the cuckoo filters so that an
 * experiment switches Bloom against cuckoo with one option. It cannot forget a key: deletes
 * and state changes return false and the key keeps answering LIVE, which is always safe.
 *
 * <p>Thread safety: see {@link Filter}.
 */
public final class BloomFilter extends GuardedFilter implements KeyFilter, KeyStateFilter {
    /** At most 2^32 - 1 bits, so positions reduce with one 32x32-bit multiply. */
    static final long MAX_BITS = 0xFFFFFFFFL;

    final long numBits;
    final int numHashes;
    final long designKeys;
    final long[] words;
    long count;

    BloomFilter(long numBits, int numHashes, long designKeys, long count) {
        if (numBits < 64 || numBits > MAX_BITS) {
            throw new IllegalArgumentException("Bloom filter bits must be in [64, " + MAX_BITS + "], got " + numBits);
        }
        if (numHashes < 1 || numHashes > 32) {
            throw new IllegalArgumentException("Bloom filter hash count must be in [1, 32], got " + numHashes);
        }
        this.numBits = numBits;
        this.numHashes = numHashes;
        this.designKeys = designKeys;
        this.words = new long[(int) ((numBits + 63) >>> 6)];
        this.count = count;
    }

    /** The optimal filter for {@code expectedKeys} keys at false-positive rate {@code fpp}: m = -n ln ε / ln² 2, k = m/n ln 2. */
    public static BloomFilter create(long expectedKeys, double fpp) {
        if (expectedKeys < 1) {
            throw new IllegalArgumentException("expected keys must be positive, got " + expectedKeys);
        }
        CuckooSizing.checkFpp(fpp);
        double bits = Math.ceil(-expectedKeys * Math.log(fpp) / (Math.log(2) * Math.log(2)));
        if (bits > MAX_BITS) {
            throw new IllegalArgumentException(expectedKeys + " keys at " + fpp + " need " + (long) bits
                    + " bits; one Bloom filter holds at most " + MAX_BITS);
        }
        long m = Math.max(64, (long) bits);
        int k = (int) Math.max(1, Math.min(32, Math.round((double) m / expectedKeys * Math.log(2))));
        return new BloomFilter(m, k, expectedKeys, 0);
    }

    @Override
    public FilterKind kind() {
        return FilterKind.BLOOM;
    }

    /** Number of bits. */
    public long numBits() {
        return numBits;
    }

    /** Number of bit positions per key. */
    public int numHashes() {
        return numHashes;
    }

    @Override
    public long count() {
        return readLocked(() -> count);
    }

    /** The key count the filter was sized for; more keys raise the false-positive rate. */
    @Override
    public long capacity() {
        return designKeys;
    }

    @Override
    public long sizeInBytes() {
        return (long) words.length * Long.BYTES;
    }

    @Override
    public double expectedFalsePositiveRate() {
        return Math.pow(-Math.expm1(-(double) numHashes * count() / numBits), numHashes);
    }

    @Override
    public boolean insertHash(long hash) {
        return writeLocked(() -> {
            long g = hash;
            long step = Hashing.mix64(hash) | 1;
            for (int i = 0; i < numHashes; i++, g += step) {
                long p = ((g >>> 32) * numBits) >>> 32;
                words[(int) (p >>> 6)] |= 1L << p;
            }
            count++;
            return true;
        });
    }

    @Override
    boolean probe(long hash) {
        long g = hash;
        long step = Hashing.mix64(hash) | 1;
        for (int i = 0; i < numHashes; i++, g += step) {
            long p = ((g >>> 32) * numBits) >>> 32;
            if ((words[(int) (p >>> 6)] & (1L << p)) == 0) {
                return false;
            }
        }
        return true;
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
    public KeyState lookupHash(long hash) {
        return mightContainHash(hash) ? KeyState.LIVE : KeyState.ABSENT;
    }

    /** A Bloom filter cannot remove a key: always false, and the key stays LIVE. */
    @Override
    public boolean deleteHash(long hash) {
        return false;
    }

    @Override
    public boolean supportsDelete() {
        return false;
    }

    /** Always false: the key stays LIVE, so reads of deleted keys are not skipped. */
    @Override
    public boolean markDeletedHash(long hash) {
        return false;
    }

    /** Always false: a Bloom filter never holds a deleted entry. */
    @Override
    public boolean markLiveHash(long hash) {
        return false;
    }

    /** Always false: a Bloom filter never holds a deleted entry. */
    @Override
    public boolean purgeHash(long hash) {
        return false;
    }

    @Override
    public boolean tracksDeletions() {
        return false;
    }

    @Override
    public long liveCount() {
        return count();
    }

    @Override
    public long deletedCount() {
        return 0;
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
        long stamp = lock.readLock();
        try {
            FilterIO.writeBloom(this, out);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    @Override
    public String toString() {
        return "BloomFilter{bits=" + numBits + ", k=" + numHashes + ", count=" + count() + "}";
    }
}
