package dev.needle.cassandra.storage;

import dev.needle.filter.Hashing;
import java.nio.ByteBuffer;

/** Partition keys as Needle keeps them: copied out of Cassandra's buffers, hashed with the family's hash. */
final class Keys {
    private Keys() {}

    /** A heap copy of {@code key}'s remaining bytes: buffers of the write and read paths may be reused. */
    static ByteBuffer copy(ByteBuffer key) {
        ByteBuffer copy = ByteBuffer.allocate(key.remaining());
        copy.put(key.duplicate()).flip();
        return copy;
    }

    /** The 64-bit hash every Needle filter is keyed by (XXH64, seed 0, of the serialized key). */
    static long hash(ByteBuffer key) {
        return Hashing.hash(key);
    }
}
