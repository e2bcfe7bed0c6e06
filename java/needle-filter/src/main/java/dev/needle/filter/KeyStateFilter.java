package dev.needle.filter;

/**
 * A filter that answers {@link KeyState#ABSENT}, {@link KeyState#LIVE} or {@link KeyState#DELETED}
 * for a key: the seeds' "modified cuckoo filter" with its deleted-key list.
 *
 * <p>The filter holds a multiset of entries, each live or deleted. The mutators take a
 * precondition on the caller's knowledge (for example from an SSTable's own key set):
 * breaking it can make another key's entry change state. Every mutator returns false
 * and changes nothing when no matching entry exists.
 */
public interface KeyStateFilter extends Filter {
    /** Adds a live entry for a key. False, leaving the filter unchanged, when full. */
    boolean insertHash(long hash);

    /** LIVE if a live entry matches; otherwise DELETED if a deleted entry matches; otherwise ABSENT. */
    KeyState lookupHash(long hash);

    /** The key is held live and now has only tombstones: one of its live entries becomes deleted. */
    boolean markDeletedHash(long hash);

    /** The key is held deleted and was written again: one of its deleted entries becomes live. */
    boolean markLiveHash(long hash);

    /** The key is held live and leaves the filter's scope: one of its live entries is removed. */
    boolean deleteHash(long hash);

    /** The key is held deleted and its tombstones were compacted away: one deleted entry is removed. */
    boolean purgeHash(long hash);

    /**
     * Feedback removal: a read found that the key, reported LIVE, has only tombstones in
     * this filter's scope. The read proves the key is held, so this is safe; the entry
     * becomes deleted. This is how a deletion lost in a crash is recovered.
     */
    default boolean onReadFoundOnlyTombstones(long hash) {
        return markDeletedHash(hash);
    }

    /** Whether this filter can answer DELETED (false for a Bloom filter, which only says LIVE or ABSENT). */
    boolean tracksDeletions();

    /** Entries in the live state. */
    long liveCount();

    /** Entries in the deleted state. */
    long deletedCount();

    /** Looks up {@code hashes[from, to)} and writes each answer to {@code out} at the same index. */
    default void lookupBatch(long[] hashes, int from, int to, KeyState[] out) {
        for (int i = from; i < to; i++) {
            out[i] = lookupHash(hashes[i]);
        }
    }
}
