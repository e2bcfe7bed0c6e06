package dev.needle.filter;

/**
 * A cuckoo filter (Fan, Andersen, Kaminsky, Mitchell 2014) with partial-key cuckoo hashing,
 * bit-packed fingerprints of 4 to 32 bits, 2/4/8 slots per bucket, any bucket count, bounded
 * kicks and a victim stash. An insert into a full filter returns false and changes nothing.
 *
 * <pre>{@code
 * CuckooFilter f = CuckooFilter.create(1_000_000, 0.001);
 * f.insert("alice");
 * f.mightContain("alice");   // true
 * f.delete("alice");         // only for keys that were inserted
 * }</pre>
 *
 * <p>Thread safety: see {@link Filter}.
 */
public final class CuckooFilter extends AbstractCuckooFilter implements KeyFilter {

    CuckooFilter(CuckooTable table) {
        super(table);
    }

    /** A filter for {@code expectedKeys} keys at false-positive rate {@code fpp}, 4 slots per bucket. */
    public static CuckooFilter create(long expectedKeys, double fpp) {
        return create(CuckooSizing.forKeys(expectedKeys, fpp));
    }

    /** A filter of the given shape. */
    public static CuckooFilter create(CuckooSizing s) {
        return new CuckooFilter(
                new CuckooTable(s.fingerprintBits(), 0, s.slotsPerBucket(), s.numBuckets(), s.stashCapacity(), false));
    }

    @Override
    public FilterKind kind() {
        return FilterKind.CUCKOO;
    }

    @Override
    public boolean supportsDelete() {
        return true;
    }

    @Override
    public boolean insertHash(long hash) {
        return insertFingerprint(hash);
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
        long fp = t.fingerprintOf(hash);
        int b1 = t.bucketOf(hash);
        long pattern = fp * t.ones;
        if (t.bucketMatches(b1, pattern, -1L)) {
            return true;
        }
        int b2 = t.alternateOf(b1, fp);
        return t.bucketMatches(b2, pattern, -1L) || (t.stashSize != 0 && t.stashMatches(b1, b2, fp, -1L));
    }

    @Override
    public boolean deleteHash(long hash) {
        CuckooTable t = table;
        long fp = t.fingerprintOf(hash);
        int b1 = t.bucketOf(hash);
        int b2 = t.alternateOf(b1, fp);
        return writeLocked(() -> t.replaceLane(b1, b2, fp, 0));
    }
}
