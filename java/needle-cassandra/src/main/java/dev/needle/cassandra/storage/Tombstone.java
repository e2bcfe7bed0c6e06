package dev.needle.cassandra.storage;

/**
 * A partition-level deletion of one key: its write timestamp (data written at or before it is
 * shadowed) and its local deletion time in seconds (after gc_grace_seconds from it, compaction
 * may purge the tombstone, and with it Needle forgets the deletion).
 */
record Tombstone(long markedForDeleteAt, long localDeletionTime) {
    static Tombstone max(Tombstone a, Tombstone b) {
        if (a == null) {
            return b;
        }
        if (b == null) {
            return a;
        }
        return a.markedForDeleteAt >= b.markedForDeleteAt ? a : b;
    }
}
