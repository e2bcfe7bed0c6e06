package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.cassandra.db.memtable.Memtable;

/**
 * The exact key set of one memtable, kept beside it from the write path: for each partition key
 * written, the newest timestamp of live data written and the newest partition deletion. Dropped
 * once the memtable's SSTables carry their own filters, or once the memtable is discarded.
 */
final class MemtableKeys {
    final Memtable memtable;
    private final ConcurrentHashMap<ByteBuffer, Entry> entries = new ConcurrentHashMap<>();
    /** See {@link Liveness.ExpiryFloor}: the latest expiry of data written already expired. */
    private final AtomicLong expiryFloor = new AtomicLong(Long.MIN_VALUE);

    MemtableKeys(Memtable memtable) {
        this.memtable = memtable;
    }

    /** What one memtable holds for one partition key. Fields only grow, under the entry's lock. */
    static final class Entry {
        volatile long maxLiveTimestamp = Long.MIN_VALUE;
        volatile long deletedAt = Long.MIN_VALUE;
        volatile long localDeletionTime = Long.MIN_VALUE;

        synchronized void live(long timestamp) {
            if (timestamp > maxLiveTimestamp) {
                maxLiveTimestamp = timestamp;
            }
        }

        synchronized void deleted(long markedForDeleteAt, long localDeletion) {
            if (markedForDeleteAt > deletedAt) {
                deletedAt = markedForDeleteAt;
                localDeletionTime = localDeletion;
            }
        }

        Tombstone tombstone() {
            long at = deletedAt;
            return at == Long.MIN_VALUE ? null : new Tombstone(at, localDeletionTime);
        }
    }

    /** The entry for a key, created on first use. The key is copied: write-path buffers may be reused. */
    Entry entry(ByteBuffer key) {
        Entry e = entries.get(key);
        if (e != null) {
            return e;
        }
        return entries.computeIfAbsent(Keys.copy(key), k -> new Entry());
    }

    Entry get(ByteBuffer key) {
        return entries.get(key);
    }

    int size() {
        return entries.size();
    }

    /** Every key written to the memtable so far (weakly consistent, as the map's iterators are). */
    void forEachKey(java.util.function.Consumer<ByteBuffer> action) {
        entries.keySet().forEach(action);
    }

    void expiredDataWritten(long floor) {
        expiryFloor.accumulateAndGet(floor, Math::max);
    }

    long expiryFloor() {
        return expiryFloor.get();
    }
}
