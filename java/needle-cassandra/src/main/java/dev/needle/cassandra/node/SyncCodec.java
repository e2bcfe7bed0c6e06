package dev.needle.cassandra.node;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The bytes of a batch of changes in the sync keyspace ({@code format/node-filter-sync-v2.md}):
 * a count, a bitmap of which changes are removals, and the 64-bit key hashes, little-endian.
 * About 8.1 bytes per change.
 */
final class SyncCodec {
    static final int VERSION = 1;

    private SyncCodec() {}

    static ByteBuffer encode(long[] hashes, boolean[] removals) {
        int n = hashes.length;
        int bitmap = (n + 7) / 8;
        ByteBuffer b = ByteBuffer.allocate(1 + 4 + bitmap + 8 * n).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) VERSION).putInt(n);
        for (int i = 0; i < bitmap; i++) {
            int bits = 0;
            for (int j = 0; j < 8 && i * 8 + j < n; j++) {
                if (removals[i * 8 + j]) {
                    bits |= 1 << j;
                }
            }
            b.put((byte) bits);
        }
        for (long h : hashes) {
            b.putLong(h);
        }
        return b.flip();
    }

    /** The decoded changes: hashes and removal flags, in order. */
    record Changes(long[] hashes, boolean[] removals) {}

    static Changes decode(ByteBuffer bytes) {
        ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < 5) {
            throw new IllegalArgumentException("a change batch of " + b.remaining() + " bytes is truncated");
        }
        int version = b.get() & 0xFF;
        if (version != VERSION) {
            throw new IllegalArgumentException(
                    "change batch version " + version + "; this node reads version " + VERSION);
        }
        int n = b.getInt();
        int bitmap = (n + 7) / 8;
        if (n < 0 || b.remaining() != bitmap + 8L * n) {
            throw new IllegalArgumentException(
                    "a change batch of " + n + " changes has " + b.remaining() + " bytes after its header");
        }
        boolean[] removals = new boolean[n];
        for (int i = 0; i < bitmap; i++) {
            int bits = b.get() & 0xFF;
            for (int j = 0; j < 8 && i * 8 + j < n; j++) {
                removals[i * 8 + j] = (bits & (1 << j)) != 0;
            }
        }
        long[] hashes = new long[n];
        for (int i = 0; i < n; i++) {
            hashes[i] = b.getLong();
        }
        return new Changes(hashes, removals);
    }
}
