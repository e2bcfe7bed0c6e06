package dev.needle.filter;

/**
 * The seeds' "modified cuckoo filter": a cuckoo filter whose entries carry one state bit,
 * so that it answers {@link KeyState#ABSENT}, {@link KeyState#LIVE} or {@link KeyState#DELETED}.
 *
 * <p>Where the seeds keep a list of deleted keys beside the filter, here a deleted key keeps
 * its own slot with the state bit set: it costs no more than while it was live (one bit per
 * slot for everyone), it needs no second structure, and {@link #purgeHash} frees the slot
 * when the key's tombstones are compacted away. A lookup reads the same two buckets as a
 * plain cuckoo filter and tests both states with two SWAR comparisons.
 *
 * <p>Lane layout: {@code state << f | fingerprint}, state 0 = live, 1 = deleted.
 * Thread safety: see {@link Filter}.
 */
public final class DeletionAwareCuckooFilter extends AbstractCuckooFilter implements KeyStateFilter {
    private final long deletedBit;
    private long deleted;

    DeletionAwareCuckooFilter(CuckooTable table, long deleted) {
        super(table);
        this.deletedBit = 1L << table.fingerprintBits;
        this.deleted = deleted;
    }

    /** A filter for {@code expectedKeys} entries (live and deleted) at false-positive rate {@code fpp}. */
    public static DeletionAwareCuckooFilter create(long expectedKeys, double fpp) {
        return create(CuckooSizing.forKeys(expectedKeys, fpp));
    }

    /** A filter of the given shape; each slot takes one more bit than the fingerprint for its state. */
    public static DeletionAwareCuckooFilter create(CuckooSizing s) {
        return new DeletionAwareCuckooFilter(
                new CuckooTable(s.fingerprintBits(), 1, s.slotsPerBucket(), s.numBuckets(), s.stashCapacity(), false),
                0);
    }

    @Override
    public FilterKind kind() {
        return FilterKind.DELETION_AWARE_CUCKOO;
    }

    @Override
    public boolean tracksDeletions() {
        return true;
    }

    @Override
    public long liveCount() {
        return readLocked(() -> table.occupied - deleted);
    }

    @Override
    public long deletedCount() {
        return readLocked(() -> deleted);
    }

    @Override
    long deletedEntries() {
        return deleted;
    }

    @Override
    public boolean insertHash(long hash) {
        return insertFingerprint(hash);
    }

    @Override
    public KeyState lookupHash(long hash) {
        return guardedProbeState(hash);
    }

    @Override
    public void lookupBatch(long[] hashes, int from, int to, KeyState[] out) {
        guardedProbeStateBatch(hashes, from, to, out);
    }

    @Override
    KeyState probeState(long hash) {
        CuckooTable t = table;
        long fp = t.fingerprintOf(hash);
        int b1 = t.bucketOf(hash);
        int b2 = t.alternateOf(b1, fp);
        long livePattern = fp * t.ones;
        if (t.bucketMatches(b1, livePattern, -1L) || t.bucketMatches(b2, livePattern, -1L)) {
            return KeyState.LIVE;
        }
        boolean stash = t.stashSize != 0;
        if (stash && t.stashMatches(b1, b2, fp, -1L)) {
            return KeyState.LIVE;
        }
        long deletedPattern = (fp | deletedBit) * t.ones;
        if (t.bucketMatches(b1, deletedPattern, -1L)
                || t.bucketMatches(b2, deletedPattern, -1L)
                || (stash && t.stashMatches(b1, b2, fp | deletedBit, -1L))) {
            return KeyState.DELETED;
        }
        return KeyState.ABSENT;
    }

    /** Moves one entry of the key out of the live (or deleted) state: to the other state, or out of the filter. */
    private boolean transition(long hash, boolean fromDeleted, boolean remove) {
        CuckooTable t = table;
        long fp = t.fingerprintOf(hash);
        int b1 = t.bucketOf(hash);
        int b2 = t.alternateOf(b1, fp);
        long from = fromDeleted ? fp | deletedBit : fp;
        long to = remove ? 0 : (fromDeleted ? fp : fp | deletedBit);
        return writeLocked(() -> {
            if (!t.replaceLane(b1, b2, from, to)) {
                return false;
            }
            if (fromDeleted) {
                deleted--;
            } else if (!remove) {
                deleted++;
            }
            return true;
        });
    }

    @Override
    public boolean markDeletedHash(long hash) {
        return transition(hash, false, false);
    }

    @Override
    public boolean markLiveHash(long hash) {
        return transition(hash, true, false);
    }

    @Override
    public boolean deleteHash(long hash) {
        return transition(hash, false, true);
    }

    @Override
    public boolean purgeHash(long hash) {
        return transition(hash, true, true);
    }

    /** The bits per slot include the state bit: f + 1. */
    @Override
    public String toString() {
        return super.toString() + "{live=" + liveCount() + ", deleted=" + deletedCount() + "}";
    }
}
