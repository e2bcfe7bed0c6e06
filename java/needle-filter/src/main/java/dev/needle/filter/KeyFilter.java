package dev.needle.filter;

import java.nio.charset.StandardCharsets;

/**
 * Approximate set membership: no false negatives, a bounded rate of false positives.
 * Keys are given as bytes (hashed with {@link Hashing#hash(byte[])}) or as that 64-bit hash.
 */
public interface KeyFilter extends Filter {
    /**
     * Adds a key. Returns false, leaving the filter unchanged, when it is full.
     * Inserting the same key twice stores it twice (cuckoo) so that it survives one delete.
     */
    boolean insertHash(long hash);

    /** False only if the key is certainly not held. */
    boolean mightContainHash(long hash);

    /**
     * Removes one copy of a key that was inserted. Deleting a key that was never inserted
     * can erase another key's fingerprint and so cause a false negative: callers must know
     * the key is held. Returns false when nothing matched or the filter cannot delete.
     */
    boolean deleteHash(long hash);

    /** Whether {@link #deleteHash} can remove keys (false for Bloom filters). */
    boolean supportsDelete();

    /** Looks up {@code hashes[from, to)} and writes each answer to {@code out} at the same index. */
    default void mightContainBatch(long[] hashes, int from, int to, boolean[] out) {
        for (int i = from; i < to; i++) {
            out[i] = mightContainHash(hashes[i]);
        }
    }

    default boolean insert(byte[] key) {
        return insertHash(Hashing.hash(key));
    }

    default boolean mightContain(byte[] key) {
        return mightContainHash(Hashing.hash(key));
    }

    default boolean delete(byte[] key) {
        return deleteHash(Hashing.hash(key));
    }

    default boolean insert(String key) {
        return insert(key.getBytes(StandardCharsets.UTF_8));
    }

    default boolean mightContain(String key) {
        return mightContain(key.getBytes(StandardCharsets.UTF_8));
    }

    default boolean delete(String key) {
        return delete(key.getBytes(StandardCharsets.UTF_8));
    }
}
