package dev.needle.cassandra.storage;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.KeyStateFilter;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import org.apache.cassandra.dht.Token;

/**
 * Collects an SSTable's exact key set as it is written or scanned (a 64-bit key hash and a live
 * bit per partition, its partition deletions, the first and last token, the expiry floor) and
 * builds a filter of exactly the right size at the end.
 */
final class SSTableKeysBuilder {
    private long[] hashes = new long[1024];
    private final BitSet live = new BitSet();
    private int n;
    private final Map<ByteBuffer, Tombstone> tombstones = new HashMap<>();
    final Liveness.ExpiryFloor expiryFloor = new Liveness.ExpiryFloor();
    private Token first;
    private Token last;

    /** One partition, in token order. */
    void add(Token token, long hash, boolean isLive) {
        if (n == hashes.length) {
            hashes = Arrays.copyOf(hashes, n * 2);
        }
        if (isLive) {
            live.set(n);
        }
        hashes[n++] = hash;
        if (first == null) {
            first = token;
        }
        last = token;
    }

    void tombstone(ByteBuffer key, Tombstone t) {
        tombstones.merge(Keys.copy(key), t, Tombstone::max);
    }

    int size() {
        return n;
    }

    /** The filter, sized for the keys seen; the newest timestamp stays unknown until the reader is (see {@link SSTableKeys#forReader}). */
    SSTableKeys build(NeedleOptions options, boolean tombstonesComplete) {
        long capacity = Math.max(n, 16);
        while (true) {
            KeyStateFilter filter = options.tracksDeletions()
                    ? DeletionAwareCuckooFilter.create(capacity, options.fpRate)
                    : BloomFilter.create(capacity, options.fpRate);
            if (fill(filter)) {
                return new SSTableKeys(
                        filter, tombstones, Long.MAX_VALUE, expiryFloor.value(), first, last, tombstonesComplete);
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
