package dev.needle.cassandra;

import dev.needle.filter.BloomFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.KeyStateFilter;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;

/**
 * Collects an SSTable's exact key set as it is written or scanned (a 64-bit key hash and a
 * live bit per partition, plus its partition deletions) and builds a filter of exactly the
 * right size at the end.
 */
final class SSTableKeysBuilder {
    private long[] hashes = new long[1024];
    private final BitSet live = new BitSet();
    private int n;
    private final Map<ByteBuffer, Tombstone> tombstones = new HashMap<>();

    void add(long hash, boolean isLive) {
        if (n == hashes.length) {
            hashes = Arrays.copyOf(hashes, n * 2);
        }
        if (isLive) {
            live.set(n);
        }
        hashes[n++] = hash;
    }

    void tombstone(ByteBuffer key, Tombstone t) {
        ByteBuffer copy = ByteBuffer.allocate(key.remaining());
        copy.put(key.duplicate()).flip();
        tombstones.merge(copy, t, Tombstone::max);
    }

    int size() {
        return n;
    }

    SSTableKeys build(String sstableId, NeedleOptions options, long maxTimestamp) {
        long capacity = Math.max(n, 16);
        while (true) {
            KeyStateFilter filter = options.tracksDeletions()
                    ? DeletionAwareCuckooFilter.create(capacity, options.fpRate)
                    : BloomFilter.create(capacity, options.fpRate);
            if (fill(filter)) {
                return new SSTableKeys(sstableId, filter, tombstones, maxTimestamp);
            }
            capacity += capacity / 8; // a sized cuckoo filter almost never overflows; if it does, grow
        }
    }

    private boolean fill(KeyStateFilter filter) {
        for (int i = 0; i < n; i++) {
            if (!filter.insertHash(hashes[i])) {
                return false;
            }
            if (!live.get(i)) {
                filter.markDeletedHash(hashes[i]);
            }
        }
        return true;
    }
}
