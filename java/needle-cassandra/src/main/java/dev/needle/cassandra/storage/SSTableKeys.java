package dev.needle.cassandra.storage;

import dev.needle.filter.KeyState;
import dev.needle.filter.KeyStateFilter;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.Map;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.sstable.format.SSTableReader;

/**
 * What Needle knows of one SSTable: a filter over its partition keys (LIVE: the SSTable holds
 * live-looking data for the key; DELETED: it holds the key with tombstones only), the exact
 * partition deletions it holds, the newest timestamp of its data, its token range, and the
 * {@linkplain Liveness.ExpiryFloor expiry floor} of its liveness judgements. Immutable, like the
 * SSTable it describes.
 */
final class SSTableKeys {
    final KeyStateFilter filter;
    final Map<ByteBuffer, Tombstone> tombstones;
    /** Data no newer than a partition deletion is shadowed by it; MAX_VALUE while the reader is unknown. */
    final long maxTimestamp;

    final long expiryFloor;
    /** The token range of the keys, or null when unknown (then every lookup probes this SSTable). */
    final Token first;

    final Token last;
    /**
     * False when the SSTable may hold partition deletions not listed in {@link #tombstones} (it
     * was written by streaming, or from a memtable that held writes the index did not see). Safe
     * as it is, since a missing deletion only hides less; a background scan completes it.
     */
    final boolean tombstonesComplete;

    SSTableKeys(
            KeyStateFilter filter,
            Map<ByteBuffer, Tombstone> tombstones,
            long maxTimestamp,
            long expiryFloor,
            Token first,
            Token last,
            boolean tombstonesComplete) {
        this.filter = filter;
        this.tombstones = tombstones.isEmpty() ? Collections.emptyMap() : Collections.unmodifiableMap(tombstones);
        this.maxTimestamp = maxTimestamp;
        this.expiryFloor = expiryFloor;
        this.first = first;
        this.last = last;
        this.tombstonesComplete = tombstonesComplete;
    }

    /** The same knowledge, tied to the reader that now serves the SSTable (its newest timestamp, and its range if ours is unknown). */
    SSTableKeys forReader(SSTableReader reader) {
        Token f = first != null ? first : firstToken(reader);
        Token l = last != null ? last : lastToken(reader);
        return new SSTableKeys(
                filter, tombstones, reader.getMaxTimestamp(), expiryFloor, f, f == null ? null : l, tombstonesComplete);
    }

    /**
     * The first token of the SSTable's data, or null when the reader covers only part of it: a
     * compaction that opens its output early moves the start of the SSTables it reads.
     */
    static Token firstToken(SSTableReader reader) {
        return wholeFile(reader) ? reader.getFirst().getToken() : null;
    }

    static Token lastToken(SSTableReader reader) {
        return wholeFile(reader) ? reader.getLast().getToken() : null;
    }

    private static boolean wholeFile(SSTableReader reader) {
        return reader.openReason != SSTableReader.OpenReason.EARLY
                && reader.openReason != SSTableReader.OpenReason.MOVED_START;
    }

    /** Whether a key of this token can be in the SSTable at all. */
    boolean covers(Token token) {
        return first == null || token == null || (first.compareTo(token) <= 0 && token.compareTo(last) <= 0);
    }

    KeyState lookup(long hash) {
        return filter.lookupHash(hash);
    }
}
