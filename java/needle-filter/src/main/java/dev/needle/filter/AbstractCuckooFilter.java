package dev.needle.filter;

import java.io.IOException;
import java.io.OutputStream;

/** Table, lock and statistics shared by the cuckoo filters; the subclasses define what a lane means. */
abstract class AbstractCuckooFilter extends GuardedFilter implements Filter {
    final CuckooTable table;

    AbstractCuckooFilter(CuckooTable table) {
        this.table = table;
    }

    /** Inserts the key's bare fingerprint (a live entry) with partial-key buckets. */
    final boolean insertFingerprint(long hash) {
        CuckooTable t = table;
        long fp = t.fingerprintOf(hash);
        int b1 = t.bucketOf(hash);
        int b2 = t.alternateOf(b1, fp);
        return writeLocked(() -> t.insert(fp, 0, b1, b2, null));
    }

    /** Fingerprint width in bits. */
    public int fingerprintBits() {
        return table.fingerprintBits;
    }

    /** Slots per bucket. */
    public int slotsPerBucket() {
        return table.slotsPerBucket;
    }

    /** Number of buckets. */
    public int numBuckets() {
        return table.numBuckets;
    }

    /** Entries that failed to find a bucket and wait in the victim stash. */
    public int stashSize() {
        return (int) readLocked(() -> table.stashSize);
    }

    @Override
    public long count() {
        return readLocked(() -> table.occupied);
    }

    @Override
    public long capacity() {
        return table.slots();
    }

    @Override
    public long sizeInBytes() {
        return table.sizeInBytes();
    }

    @Override
    public double expectedFalsePositiveRate() {
        return CuckooSizing.falsePositiveRate(table.fingerprintBits, table.slotsPerBucket, load());
    }

    @Override
    public void writeTo(OutputStream out) throws IOException {
        long stamp = lock.readLock();
        try {
            FilterIO.writeCuckoo(this, out);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Entries in the deleted state; only the deletion-aware filter has any. Called under a lock. */
    long deletedEntries() {
        return 0;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{f=" + table.fingerprintBits + ", b=" + table.slotsPerBucket + ", buckets="
                + table.numBuckets + ", count=" + count() + ", load=" + String.format("%.4f", load()) + "}";
    }
}
